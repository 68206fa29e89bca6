#include "idx/idx.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace dlbench::idx {
namespace {

namespace fs = std::filesystem;

// A u8 IDX file of the given dimensions whose elements are 0, 1, 2, ...
std::string U8Idx(std::initializer_list<std::uint32_t> dims) {
  std::string b = {0, 0, 0x08, static_cast<char>(dims.size())};
  std::size_t n = 1;
  for (std::uint32_t d : dims) {
    b += {static_cast<char>(d >> 24), static_cast<char>(d >> 16), static_cast<char>(d >> 8),
          static_cast<char>(d)};
    n *= d;
  }
  for (std::size_t i = 0; i < n; ++i) b += static_cast<char>(i);
  return b;
}

class IdxFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("idx_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& bytes) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string WriteGz(const std::string& name, const std::string& bytes) {
    std::string path = (dir_ / name).string();
    gzFile f = gzopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    gzclose(f);
    return path;
  }

  fs::path dir_;
};

TEST(IdxParse, ReadsDimensionsAndElementsOfAHandWrittenFile) {
  const std::string bytes = {0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 9, 8, 7, 6, 5, 4};
  auto a = ParseIdx(bytes, "x.idx");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->type, ElementType::kUint8);
  EXPECT_EQ(a->dims, (std::vector<std::uint32_t>{2, 3}));
  EXPECT_EQ(a->count(), 6u);
  EXPECT_EQ(a->data, (std::vector<std::uint8_t>{9, 8, 7, 6, 5, 4}));
}

TEST(IdxParse, MultiByteElementsCountTheirSize) {
  const std::string bytes = {0, 0, 0x0C, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2};
  auto a = ParseIdx(bytes, "i32.idx");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->type, ElementType::kInt32);
  EXPECT_EQ(a->data.size(), 8u);
  EXPECT_FALSE(ParseIdx(bytes.substr(0, 15), "i32.idx").ok());
}

TEST(IdxParse, RejectsEachCorruptionByNameAndOffset) {
  const std::string good = U8Idx({2, 2});
  struct Case {
    std::string what, bytes, expected;
  };
  const Case cases[] = {
      {"empty", "", "f.idx: truncated: 0 bytes"},
      {"wrong magic", std::string("\x1f\x8b\x08\x00", 4) + good.substr(4),
       "magic number 0x1f8b0800 at byte 0"},
      {"unknown type", std::string({0, 0, 0x07, 2}) + good.substr(4), "magic number 0x00000702"},
      {"no dimensions", std::string({0, 0, 0x08, 0}), "1 to 255 dimensions"},
      {"short header", good.substr(0, 10),
       "truncated header: 2 dimensions need 12 header bytes, the file has 10"},
      {"short payload", good.substr(0, 14), "need 4 payload bytes after byte 12; the data ends at byte 14"},
      {"extra bytes", good + "zz", "wrong size: 2 bytes after the payload's end at byte 16"},
  };
  for (const Case& c : cases) {
    auto a = ParseIdx(c.bytes, "f.idx");
    ASSERT_FALSE(a.ok()) << c.what;
    EXPECT_EQ(a.error().kind, ErrorKind::kInvalidInput) << c.what;
    EXPECT_NE(a.error().message.find(c.expected), std::string::npos) << c.what << ": " << a.error().message;
    EXPECT_EQ(a.error().message.rfind("f.idx: ", 0), 0u) << c.what << ": " << a.error().message;
  }
}

TEST_F(IdxFileTest, ReadsPlainAndGzipFilesAlike) {
  const std::string bytes = U8Idx({3, 2, 2});
  auto plain = ReadIdx(Write("plain-idx3-ubyte", bytes));
  auto gz = ReadIdx(WriteGz("gz-idx3-ubyte.gz", bytes));
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  ASSERT_TRUE(gz.ok()) << gz.error().message;
  EXPECT_EQ(plain->dims, (std::vector<std::uint32_t>{3, 2, 2}));
  EXPECT_EQ(plain->data, gz->data);
  EXPECT_EQ(gz->data.size(), 12u);
  EXPECT_EQ(gz->data[11], 11);
}

TEST_F(IdxFileTest, ATruncatedGzipFileIsAnErrorNamingIt) {
  std::string payload = U8Idx({64, 16});
  std::uint32_t x = 12345;  // incompressible bytes, so half the stream is half the file
  for (std::size_t i = 8; i < payload.size(); ++i) {
    x = x * 1664525u + 1013904223u;
    payload[i] = static_cast<char>(x >> 24);
  }
  const std::string full = WriteGz("full.gz", payload);
  std::ifstream in(full, std::ios::binary);
  const std::string compressed((std::istreambuf_iterator<char>(in)), {});
  const std::string cut = Write("cut-idx2-ubyte.gz", compressed.substr(0, compressed.size() / 2));
  auto a = ReadIdx(cut);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(a.error().message.find(cut), std::string::npos) << a.error().message;
}

TEST_F(IdxFileTest, MissingFilesAndOversizedContentAreErrors) {
  auto missing = ReadIdx((dir_ / "absent").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::kNotFound);
  auto dir = ReadIdx(dir_.string());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().message.find("not a regular file"), std::string::npos);
  auto big = ReadIdx(Write("big", U8Idx({100})), 50);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("more than 50 bytes"), std::string::npos) << big.error().message;
}

TEST_F(IdxFileTest, LabelledImagesCheckShapesCountsAndClasses) {
  const std::string images = Write("images", U8Idx({3, 2, 2}));
  const std::string labels = Write("labels", std::string({0, 0, 0x08, 1, 0, 0, 0, 3, 1, 0, 2}));
  auto ok = ReadLabelledImages(images, labels, 3);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->count, 3u);
  EXPECT_EQ(ok->rows, 2u);
  EXPECT_EQ(ok->cols, 2u);
  EXPECT_EQ(ok->labels, (std::vector<std::uint8_t>{1, 0, 2}));

  auto classes = ReadLabelledImages(images, labels, 2);
  ASSERT_FALSE(classes.ok());
  EXPECT_NE(classes.error().message.find(labels + ": label 2 of sample 2 (byte 10)"), std::string::npos)
      << classes.error().message;

  const std::string two = Write("two", std::string({0, 0, 0x08, 1, 0, 0, 0, 2, 1, 0}));
  auto counts = ReadLabelledImages(images, two, 3);
  ASSERT_FALSE(counts.ok());
  EXPECT_NE(counts.error().message.find("2 labels for 3 images"), std::string::npos);

  auto swapped = ReadLabelledImages(labels, images, 3);
  ASSERT_FALSE(swapped.ok());
  EXPECT_NE(swapped.error().message.find(labels + ": expected unsigned-byte images with 3 dimensions"),
            std::string::npos)
      << swapped.error().message;
}

// The Debian package's files (scripts/setup-debian.sh installs dataset-fashion-mnist).
TEST(IdxFashionMnist, TheInstalledTestSetHasItsDocumentedShape) {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!fs::exists(dir + "t10k-labels-idx1-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  auto set = ReadLabelledImages(dir + "t10k-images-idx3-ubyte.gz", dir + "t10k-labels-idx1-ubyte.gz", 10);
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ(set->count, 10000u);
  EXPECT_EQ(set->rows, 28u);
  EXPECT_EQ(set->cols, 28u);
  EXPECT_EQ(set->pixels.size(), 10000u * 28 * 28);
}

}  // namespace
}  // namespace dlbench::idx
