// The AOTInductor package's sidecar (aoti_sidecar.h): read bounded, parsed strictly, and checked
// against the cell, so a cell never reports a precision its package was not compiled at.
#include "aoti_sidecar.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace dlbench::torchrunner {
namespace {

// What bench/gpu/aoti_package.py writes for resnet50 at bf16.
constexpr char kGoodSidecar[] = R"({
  "source_model": "torchvision resnet50", "precision": "bf16", "recipe": "autocast",
  "input_shapes": "B,3,224,224", "input_dtypes": "float32", "batch_min": 1, "batch_max": 1024,
  "export_s": 12.5, "compile_s": 95.25, "packaging_s": 107.75, "torch": "2.11.0", "cuda": "12.8",
  "device_name": "NVIDIA H100 80GB HBM3", "something_new": 1})";

// A package path in the test's temporary folder, its sidecar removed on destruction.
class SidecarFile {
 public:
  explicit SidecarFile(const std::string& name)
      : model_path_(::testing::TempDir() + "/dlbench_aoti_" + name + "_" + std::to_string(getpid()) +
                    ".pt2") {}
  ~SidecarFile() { std::remove(AotiSidecarPath(model_path_).c_str()); }
  SidecarFile(const SidecarFile&) = delete;
  SidecarFile& operator=(const SidecarFile&) = delete;
  void Write(const std::string& text) const { std::ofstream(AotiSidecarPath(model_path_)) << text; }
  const std::string& model_path() const { return model_path_; }

 private:
  std::string model_path_;
};

TorchCell AotiCell(Precision precision, std::int64_t batch_size, InputDtype dtype = InputDtype::kFloat32) {
  TorchCell cell;
  cell.model = kAotiModel;
  cell.scenario = Scenario::kInfer;
  cell.precision = precision;
  cell.batch_size = batch_size;
  cell.aoti = TorchScriptSpec{"/tmp/aoti/resnet50-bf16.pt2", {{batch_size, 3, 224, 224}}, {dtype}};
  return cell;
}

TEST(AotiSidecar, PathIsThePackagesPlusJson) {
  EXPECT_EQ(AotiSidecarPath("/tmp/aoti/resnet50-bf16.pt2"), "/tmp/aoti/resnet50-bf16.pt2.json");
}

TEST(AotiSidecar, MissingFileIsNoSidecar) {
  const SidecarFile file("missing");
  auto sidecar = ReadAotiSidecar(file.model_path());
  ASSERT_TRUE(sidecar.ok()) << sidecar.error().message;
  EXPECT_FALSE(sidecar->has_value());
}

TEST(AotiSidecar, GoodFileIsReadAndRecorded) {
  const SidecarFile file("good");
  file.Write(kGoodSidecar);
  auto sidecar = ReadAotiSidecar(file.model_path());
  ASSERT_TRUE(sidecar.ok()) << sidecar.error().message;
  ASSERT_TRUE(sidecar->has_value());
  const AotiSidecar& s = **sidecar;
  EXPECT_EQ(s.path, AotiSidecarPath(file.model_path()));
  EXPECT_EQ(s.precision, Precision::kBf16);
  EXPECT_EQ(s.batch_min, 1);
  EXPECT_EQ(s.batch_max, 1024);
  ASSERT_TRUE(s.input_dtypes.has_value());
  EXPECT_EQ(*s.input_dtypes, std::vector<InputDtype>{InputDtype::kFloat32});
  EXPECT_EQ(s.package.at("recipe"), "autocast");
  EXPECT_EQ(s.package.at("torch"), "2.11.0");
  EXPECT_DOUBLE_EQ(s.package.at("packaging_s").get<double>(), 107.75);
  EXPECT_EQ(s.package.at("sidecar"), s.path);
  EXPECT_FALSE(s.package.contains("something_new"));  // only the known fields are recorded
  EXPECT_TRUE(CheckAotiCell(s, AotiCell(Precision::kBf16, 256)).ok());
}

TEST(AotiSidecar, MalformedAndWronglyTypedFilesAreInvalid) {
  struct Case {
    const char* name;
    const char* text;
    const char* message_part;
  };
  const Case cases[] = {
      {"not json", "{\"precision\": \"bf16\"", "is not valid JSON"},
      {"empty", "", "is not valid JSON"},
      {"array", "[1, 2]", "is not a JSON object"},
      {"unknown precision", R"({"precision": "fp8"})", "'precision' must be one of fp32, tf32, bf16"},
      {"numeric precision", R"({"precision": 16})", "'precision' must be one of"},
      {"zero batch", R"({"batch_min": 0})", "'batch_min' must be a positive integer"},
      {"text batch", R"({"batch_max": "1024"})", "'batch_max' must be a positive integer"},
      {"inverted range", R"({"batch_min": 8, "batch_max": 4})", "batch_min 8 is above batch_max 4"},
      {"bad dtype", R"({"input_dtypes": "float8"})", "'input_dtypes'"},
      {"dtype list", R"({"input_dtypes": ["float32"]})", "'input_dtypes' must be a string"},
  };
  for (const Case& c : cases) {
    const SidecarFile file("malformed");
    file.Write(c.text);
    auto sidecar = ReadAotiSidecar(file.model_path());
    ASSERT_FALSE(sidecar.ok()) << c.name;
    EXPECT_EQ(sidecar.error().kind, ErrorKind::kInvalidInput) << c.name;
    EXPECT_NE(sidecar.error().message.find(c.message_part), std::string::npos)
        << c.name << ": " << sidecar.error().message;
    EXPECT_NE(sidecar.error().message.find(AotiSidecarPath(file.model_path())), std::string::npos) << c.name;
  }
}

TEST(AotiSidecar, OversizedFileIsRefusedBeforeParsing) {
  const SidecarFile file("oversized");
  // Valid JSON, one byte over the bound: the size alone refuses it.
  const std::string padding(static_cast<std::size_t>(kAotiSidecarMaxBytes) - 19, ' ');
  const std::string text = "{\"precision\":" + padding + "\"bf16\"}";
  ASSERT_EQ(static_cast<std::int64_t>(text.size()), kAotiSidecarMaxBytes + 1);
  file.Write(text);
  auto sidecar = ReadAotiSidecar(file.model_path());
  ASSERT_FALSE(sidecar.ok());
  EXPECT_NE(sidecar.error().message.find("at most 65536 are read"), std::string::npos)
      << sidecar.error().message;
  // At the bound exactly it is read.
  file.Write(text.substr(0, 13) + text.substr(14));
  EXPECT_TRUE(ReadAotiSidecar(file.model_path()).ok());
}

TEST(AotiSidecar, ADirectoryIsNotASidecar) {
  const std::string dir = ::testing::TempDir() + "/dlbench_aoti_dir_" + std::to_string(getpid());
  ASSERT_EQ(::mkdir(AotiSidecarPath(dir).c_str(), 0700), 0);
  auto sidecar = ReadAotiSidecar(dir);
  ::rmdir(AotiSidecarPath(dir).c_str());
  ASSERT_FALSE(sidecar.ok());
  EXPECT_NE(sidecar.error().message.find("is not a regular file"), std::string::npos)
      << sidecar.error().message;
}

TEST(AotiSidecar, CellMustMatchThePackage) {
  auto parsed = ParseAotiSidecar(kGoodSidecar, "/tmp/aoti/resnet50-bf16.pt2.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const AotiSidecar& s = *parsed;

  const Status fp32 = CheckAotiCell(s, AotiCell(Precision::kFp32, 256));
  ASSERT_FALSE(fp32.ok());
  EXPECT_EQ(fp32.error().kind, ErrorKind::kInvalidInput);
  EXPECT_EQ(fp32.error().message,
            "this package was compiled at bf16 (its sidecar /tmp/aoti/resnet50-bf16.pt2.json); set "
            "precision: bf16");

  const Status big = CheckAotiCell(s, AotiCell(Precision::kBf16, 2048));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("batch_size 2048 is outside this package's dynamic batch range 1..1024"),
            std::string::npos)
      << big.error().message;
  EXPECT_TRUE(CheckAotiCell(s, AotiCell(Precision::kBf16, 1024)).ok());
  EXPECT_TRUE(CheckAotiCell(s, AotiCell(Precision::kBf16, 1)).ok());

  const Status dtype = CheckAotiCell(s, AotiCell(Precision::kBf16, 256, InputDtype::kBFloat16));
  ASSERT_FALSE(dtype.ok());
  EXPECT_NE(dtype.error().message.find("takes inputs of dtype float32 (its sidecar"), std::string::npos)
      << dtype.error().message;
  EXPECT_NE(dtype.error().message.find("set input_dtypes: float32"), std::string::npos);

  // A sidecar without the checked fields checks nothing.
  auto bare = ParseAotiSidecar("{}", "/x.pt2.json");
  ASSERT_TRUE(bare.ok());
  EXPECT_TRUE(CheckAotiCell(*bare, AotiCell(Precision::kFp16, 1 << 20)).ok());
}

}  // namespace
}  // namespace dlbench::torchrunner
