// The torch runner's parameter parsing (ParseTorchCell and its parts), without LibTorch. The support
// rules (CheckSupported) are tested in cell_support_test.cc.
#include "cell_options.h"

#include <gtest/gtest.h>

#include "config/registry.h"

namespace dlbench::torchrunner {
namespace {

using nlohmann::json;

TEST(ParseTorchCell, DefaultsAndExplicitValues) {
  auto cell = ParseTorchCell({{"model", "resnet50"}});
  ASSERT_TRUE(cell.ok()) << cell.error().message;
  EXPECT_EQ(cell->scenario, Scenario::kTrain);
  EXPECT_EQ(cell->batch_size, 1);
  EXPECT_EQ(cell->device.kind, DeviceKind::kCpu);
  EXPECT_EQ(cell->precision, Precision::kFp32);
  EXPECT_EQ(cell->memory_format, MemoryFormat::kAuto);
  EXPECT_TRUE(cell->cudnn_benchmark);
  EXPECT_FALSE(cell->deterministic);
  EXPECT_FALSE(cell->threads.has_value());

  cell = ParseTorchCell({{"model", "bert_base"},
                         {"scenario", "infer"},
                         {"batch_size", 32},
                         {"device", "cuda:1"},
                         {"precision", "bf16"},
                         {"memory_format", "channels_last"},
                         {"cudnn_benchmark", false},
                         {"deterministic", true},
                         {"threads", 4},
                         {"lr", 0.5},
                         {"strategy", "none"},
                         {"world_size", 1}});
  ASSERT_TRUE(cell.ok()) << cell.error().message;
  EXPECT_EQ(cell->scenario, Scenario::kInfer);
  EXPECT_EQ(cell->batch_size, 32);
  EXPECT_EQ(cell->device.kind, DeviceKind::kCuda);
  EXPECT_EQ(cell->device.index, 1);
  EXPECT_EQ(cell->device.ToString(), "cuda:1");
  EXPECT_EQ(cell->precision, Precision::kBf16);
  EXPECT_EQ(cell->memory_format, MemoryFormat::kChannelsLast);
  EXPECT_FALSE(cell->cudnn_benchmark);
  EXPECT_TRUE(cell->deterministic);
  EXPECT_EQ(cell->threads, 4);
  EXPECT_DOUBLE_EQ(*cell->lr, 0.5);
  EXPECT_FALSE(cell->cudnn_benchmark_limit.has_value());
  cell = ParseTorchCell({{"model", "resnet50"}, {"cudnn_benchmark_limit", 0}});
  ASSERT_TRUE(cell.ok()) << cell.error().message;
  EXPECT_EQ(cell->cudnn_benchmark_limit, 0);
}

TEST(ParseTorchCell, CudaWithoutIndexIsDeviceZero) {
  auto cell = ParseTorchCell({{"model", "resnet50"}, {"device", "cuda"}});
  ASSERT_TRUE(cell.ok());
  EXPECT_EQ(cell->device.ToString(), "cuda:0");
}

struct BadCase {
  const char* name;
  json params;
  ErrorKind kind;
  const char* message_part;
};

TEST(ParseTorchCell, RejectsBadParamsWithClearMessages) {
  const std::vector<BadCase> cases = {
      {"no model", json::object(), ErrorKind::kInvalidInput, "'model' is required"},
      {"bad scenario",
       {{"model", "m"}, {"scenario", "serve"}},
       ErrorKind::kInvalidInput,
       "one of train, infer"},
      {"zero batch",
       {{"model", "m"}, {"batch_size", 0}},
       ErrorKind::kInvalidInput,
       "'batch_size': expected an integer between 1 and 1048576 or max"},
      {"text batch",
       {{"model", "m"}, {"batch_size", "many"}},
       ErrorKind::kInvalidInput,
       "expected an integer"},
      {"bad device", {{"model", "m"}, {"device", "tpu"}}, ErrorKind::kInvalidInput, "cpu, cuda or cuda:N"},
      {"bad ordinal",
       {{"model", "m"}, {"device", "cuda:x"}},
       ErrorKind::kInvalidInput,
       "cpu, cuda or cuda:N"},
      {"bad precision",
       {{"model", "m"}, {"precision", "fp8"}},
       ErrorKind::kInvalidInput,
       "fp32, tf32, bf16, fp16, int8"},
      {"bad format", {{"model", "m"}, {"memory_format", "nhwc"}}, ErrorKind::kInvalidInput, "channels_last"},
      {"bad bool", {{"model", "m"}, {"deterministic", 3}}, ErrorKind::kInvalidInput, "true or false"},
      {"zero threads", {{"model", "m"}, {"threads", 0}}, ErrorKind::kInvalidInput, "'threads'"},
      {"negative benchmark limit",
       {{"model", "m"}, {"cudnn_benchmark_limit", -1}},
       ErrorKind::kInvalidInput,
       "'cudnn_benchmark_limit'"},
      {"negative lr",
       {{"model", "m"}, {"lr", -1.0}},
       ErrorKind::kInvalidInput,
       "'lr': expected a number > 0"},
      // The registry is the one definition: lr: 0 passed the matrix and failed the runner before.
      {"zero lr", {{"model", "m"}, {"lr", 0}}, ErrorKind::kInvalidInput, "'lr': expected a number > 0"},
      {"too many threads",
       {{"model", "m"}, {"threads", 4097}},
       ErrorKind::kInvalidInput,
       "between 1 and 4096"},
      {"ordinal too large", {{"model", "m"}, {"device", "cuda:1024"}}, ErrorKind::kInvalidInput, "cuda:N"},
      {"unknown key", {{"model", "m"}, {"step_ms", 1}}, ErrorKind::kInvalidInput, "'step_ms'"},
      {"ddp infer",
       {{"model", "m"}, {"strategy", "ddp"}, {"scenario", "infer"}},
       ErrorKind::kInvalidInput,
       "needs scenario train"},
      {"ddp converge",
       {{"model", "m"}, {"strategy", "ddp"}, {"scenario", "converge"}},
       ErrorKind::kInvalidInput,
       "converge trains in one process"},
      {"ddp key without ddp",
       {{"model", "m"}, {"ddp_mode", "serial"}},
       ErrorKind::kInvalidInput,
       "'ddp_mode'"},
      {"bucket cap without ddp",
       {{"model", "m"}, {"bucket_cap_bytes", 4096}},
       ErrorKind::kInvalidInput,
       "'bucket_cap_bytes'"},
      {"world size", {{"model", "m"}, {"world_size", 2}}, ErrorKind::kInvalidInput, "world_size"},
      {"ts no path",
       {{"model", "torchscript"}, {"input_shapes", "B,4"}},
       ErrorKind::kInvalidInput,
       "model_path"},
      {"ts no shapes",
       {{"model", "torchscript"}, {"model_path", "/x.pt"}},
       ErrorKind::kInvalidInput,
       "input_shapes"},
      {"ts count mismatch",
       {{"model", "torchscript"},
        {"model_path", "/x.pt"},
        {"input_shapes", "B,4;B,2"},
        {"input_dtypes", "float32"}},
       ErrorKind::kInvalidInput,
       "must match"},
      {"aoti no path",
       {{"model", "aoti"}, {"input_shapes", "B,3,224,224"}},
       ErrorKind::kInvalidInput,
       "model 'aoti' needs parameter 'model_path' (a .pt2 package"},
      {"aoti no shapes",
       {{"model", "aoti"}, {"model_path", "/x.pt2"}},
       ErrorKind::kInvalidInput,
       "model 'aoti' needs parameter 'input_shapes'"},
      {"aoti bad dtype",
       {{"model", "aoti"}, {"model_path", "/x.pt2"}, {"input_shapes", "B,4"}, {"input_dtypes", "float8"}},
       ErrorKind::kInvalidInput,
       "'input_dtypes'"},
      {"aoti count mismatch",
       {{"model", "aoti"},
        {"model_path", "/x.pt2"},
        {"input_shapes", "B,4"},
        {"input_dtypes", "bfloat16;int64"}},
       ErrorKind::kInvalidInput,
       "must match"},
  };
  for (const BadCase& c : cases) {
    auto cell = ParseTorchCell(c.params);
    ASSERT_FALSE(cell.ok()) << c.name;
    EXPECT_EQ(cell.error().kind, c.kind) << c.name;
    EXPECT_NE(cell.error().message.find(c.message_part), std::string::npos)
        << c.name << ": " << cell.error().message;
  }
}

TEST(ParseTorchCell, AotiTakesAPackageAndDeclaredInputs) {
  auto cell = ParseTorchCell({{"model", "aoti"},
                              {"scenario", "infer"},
                              {"batch_size", 256},
                              {"model_path", "/tmp/aoti/resnet50-bf16.pt2"},
                              {"input_shapes", "B,3,224,224"},
                              {"input_dtypes", "bfloat16"}});
  ASSERT_TRUE(cell.ok()) << cell.error().message;
  ASSERT_TRUE(cell->aoti.has_value());
  EXPECT_FALSE(cell->torchscript.has_value());
  EXPECT_EQ(cell->aoti->path, "/tmp/aoti/resnet50-bf16.pt2");
  EXPECT_EQ(cell->aoti->input_shapes, (std::vector<std::vector<std::int64_t>>{{256, 3, 224, 224}}));
  EXPECT_EQ(cell->aoti->input_dtypes, std::vector<InputDtype>{InputDtype::kBFloat16});
  // input_dtypes defaults to float32, one per input, as for torchscript.
  cell = ParseTorchCell({{"model", "aoti"}, {"model_path", "/x.pt2"}, {"input_shapes", "B,4;B,2"}});
  ASSERT_TRUE(cell.ok()) << cell.error().message;
  EXPECT_EQ(cell->aoti->input_dtypes, (std::vector<InputDtype>{InputDtype::kFloat32, InputDtype::kFloat32}));
}

TEST(ParseInputShapes, ReplacesBatchAndRejectsBadDims) {
  auto shapes = ParseInputShapes("B,3,224,224; B,16", 8);
  ASSERT_TRUE(shapes.ok()) << shapes.error().message;
  ASSERT_EQ(shapes->size(), 2u);
  EXPECT_EQ((*shapes)[0], (std::vector<std::int64_t>{8, 3, 224, 224}));
  EXPECT_EQ((*shapes)[1], (std::vector<std::int64_t>{8, 16}));
  EXPECT_FALSE(ParseInputShapes("B,0", 2).ok());
  EXPECT_FALSE(ParseInputShapes("B,-3", 2).ok());
  EXPECT_FALSE(ParseInputShapes("B,x", 2).ok());
  EXPECT_FALSE(ParseInputShapes("", 2).ok());
}

// The registry's dtype names, each mapped; torch's aliases (long, int, half) are not names of
// the registry, so the matrix could never send them, and the runner does not take them either.
TEST(ParseInputDtypes, TheRegistrysNames) {
  auto dtypes = ParseInputDtypes("float32;int64;bfloat16;int32;float16;bool");
  ASSERT_TRUE(dtypes.ok()) << dtypes.error().message;
  EXPECT_EQ(*dtypes, (std::vector<InputDtype>{InputDtype::kFloat32, InputDtype::kInt64, InputDtype::kBFloat16,
                                              InputDtype::kInt32, InputDtype::kFloat16, InputDtype::kBool}));
  dtypes = ParseInputDtypes("float64;int16;int8;uint8");
  ASSERT_TRUE(dtypes.ok()) << dtypes.error().message;
  EXPECT_EQ(*dtypes, (std::vector<InputDtype>{InputDtype::kFloat64, InputDtype::kInt16, InputDtype::kInt8,
                                              InputDtype::kUInt8}));
  for (const std::string& name : config::KnownDtypes()) {
    auto one = ParseInputDtypes(name);
    ASSERT_TRUE(one.ok()) << name;
    EXPECT_EQ(InputDtypeName(one->at(0)), name);
  }
  auto bad = ParseInputDtypes("float32;complex64");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("complex64"), std::string::npos);
  for (const char* alias : {"long", "int", "half", "float"})
    EXPECT_FALSE(ParseInputDtypes(alias).ok()) << alias;
}

TEST(ParseTorchCell, DiffTolerancesTakeTheEntryOfTheCellsPrecision) {
  const json infer = {{"model", "bert_base"},
                      {"scenario", "infer"},
                      {"precision", "bf16"},
                      {"max_abs_diff", "bf16=0.5;int8=2"},
                      {"max_mean_abs_diff", "int8=0.25"}};
  auto bf16 = ParseTorchCell(infer);
  ASSERT_TRUE(bf16.ok()) << bf16.error().message;
  EXPECT_EQ(bf16->max_abs_diff, 0.5);
  EXPECT_FALSE(bf16->max_mean_abs_diff.has_value());
  EXPECT_FALSE(bf16->min_agreement.has_value());
  EXPECT_TRUE(bf16->has_tolerance());
  json params = infer;
  params["precision"] = "int8";
  auto int8 = ParseTorchCell(params);
  ASSERT_TRUE(int8.ok()) << int8.error().message;
  EXPECT_EQ(int8->max_abs_diff, 2.0);
  EXPECT_EQ(int8->max_mean_abs_diff, 0.25);
  params["precision"] = "fp16";
  auto fp16 = ParseTorchCell(params);
  ASSERT_TRUE(fp16.ok());
  EXPECT_FALSE(fp16->has_tolerance());
  auto train = ParseTorchCell({{"model", "bert_base"}, {"max_mean_abs_diff", "bf16=0.1"}});
  ASSERT_FALSE(train.ok());
  EXPECT_EQ(train.error().message,
            "parameter 'max_mean_abs_diff' applies with scenario: infer, whose evaluation outputs it checks");
}

TEST(ParseTorchCell, MinAgreementTakesTheEntryOfTheCellsPrecision) {
  const json infer = {{"model", "bert_base"}, {"scenario", "infer"}, {"min_agreement", "bf16=0.99;int8=0.9"}};
  auto at = [&](const char* precision) {
    json params = infer;
    params["precision"] = precision;
    return ParseTorchCell(params);
  };
  auto int8 = at("int8");
  ASSERT_TRUE(int8.ok()) << int8.error().message;
  EXPECT_EQ(int8->min_agreement, 0.9);
  auto bf16 = at("bf16");
  ASSERT_TRUE(bf16.ok());
  EXPECT_EQ(bf16->min_agreement, 0.99);
  auto fp32 = at("fp32");  // not listed: no tolerance
  ASSERT_TRUE(fp32.ok());
  EXPECT_FALSE(fp32->min_agreement.has_value());
  auto train = ParseTorchCell({{"model", "bert_base"}, {"min_agreement", "bf16=0.99"}});
  ASSERT_FALSE(train.ok());
  EXPECT_NE(train.error().message.find("applies with scenario: infer"), std::string::npos)
      << train.error().message;
}

TEST(ParseTorchCell, DdpOptionsAndTheirDefaults) {
  auto plain = ParseTorchCell({{"model", "resnet50"}});
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->ddp.has_value());
  auto defaults = ParseTorchCell({{"model", "resnet50"}, {"strategy", "ddp"}, {"world_size", 4}});
  ASSERT_TRUE(defaults.ok()) << defaults.error().message;
  ASSERT_TRUE(defaults->ddp.has_value());
  EXPECT_EQ(defaults->ddp->world_size, 4);
  EXPECT_EQ(defaults->ddp->mode, DdpMode::kOverlap);
  EXPECT_EQ(defaults->ddp->backend, DdpBackend::kAuto);
  EXPECT_EQ(defaults->ddp->bucket_cap_bytes, 25 * 1024 * 1024);
  auto given = ParseTorchCell({{"model", "resnet50"},
                               {"strategy", "ddp"},
                               {"ddp_mode", "serial"},
                               {"backend", "gloo"},
                               {"bucket_cap_bytes", 4096}});
  ASSERT_TRUE(given.ok()) << given.error().message;
  EXPECT_EQ(given->ddp->mode, DdpMode::kSerial);
  EXPECT_EQ(given->ddp->backend, DdpBackend::kGloo);
  EXPECT_EQ(given->ddp->bucket_cap_bytes, 4096);
  EXPECT_STREQ(DdpModeName(DdpMode::kSerial), "serial");
  EXPECT_STREQ(DdpBackendName(DdpBackend::kNccl), "nccl");
  auto compute_only =
      ParseTorchCell({{"model", "resnet50"}, {"strategy", "ddp"}, {"ddp_mode", "compute_only"}});
  ASSERT_TRUE(compute_only.ok()) << compute_only.error().message;
  EXPECT_EQ(compute_only->ddp->mode, DdpMode::kComputeOnly);
  EXPECT_STREQ(DdpModeName(DdpMode::kComputeOnly), "compute_only");
}

}  // namespace
}  // namespace dlbench::torchrunner
