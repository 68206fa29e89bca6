// The torch runner's parameter parsing and support rules, without LibTorch.
#include "cell_options.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "config/model_rules.h"
#include "config/registry.h"
#include "peak_flops.h"

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

struct SupportCase {
  const char* name;
  json params;
  Capabilities caps;
  bool ok;
  const char* message_part;
};

TEST(CheckSupported, PrecisionDeviceAndVersionRules) {
  const Capabilities cpu_113{1, false, 0, std::nullopt};
  const Capabilities cpu_2{2, false, 0, std::nullopt};
  const Capabilities h200{2, true, 1, 9};
  const Capabilities v100{2, true, 1, 7};
  const std::vector<SupportCase> cases = {
      {"fp32 cpu", {{"precision", "fp32"}}, cpu_113, true, ""},
      {"bf16 cpu train", {{"precision", "bf16"}}, cpu_113, true, ""},
      {"tf32 cpu", {{"precision", "tf32"}}, cpu_113, false, "tf32 is a CUDA matrix-unit mode"},
      {"fp16 cpu 1.13", {{"precision", "fp16"}, {"scenario", "infer"}}, cpu_113, false, "needs LibTorch 2.x"},
      {"fp16 cpu 2.x infer", {{"precision", "fp16"}, {"scenario", "infer"}}, cpu_2, true, ""},
      {"fp16 cpu 2.x train", {{"precision", "fp16"}}, cpu_2, false, "fp16 training on cpu"},
      {"int8 resnet50",
       {{"precision", "int8"}, {"scenario", "infer"}},
       cpu_113,
       false,
       "only bert_base has a dynamic int8 form"},
      {"cuda without cuda build", {{"device", "cuda"}}, cpu_113, false, "built without CUDA"},
      {"cuda:1 with one gpu", {{"device", "cuda:1"}}, h200, false, "1 CUDA device(s) are visible"},
      {"fp16 cuda train", {{"device", "cuda"}, {"precision", "fp16"}}, h200, true, ""},
      {"tf32 h200", {{"device", "cuda"}, {"precision", "tf32"}}, h200, true, ""},
      {"tf32 volta", {{"device", "cuda"}, {"precision", "tf32"}}, v100, false, "compute capability 8.0"},
      {"bf16 volta", {{"device", "cuda"}, {"precision", "bf16"}}, v100, false, "compute capability 8.0"},
      {"cuda_graph infer h200",
       {{"device", "cuda"}, {"scenario", "infer"}, {"cuda_graph", true}},
       h200,
       true,
       ""},
      {"cuda_graph cpu", {{"scenario", "infer"}, {"cuda_graph", true}}, cpu_2, false, "it needs device cuda"},
      {"cuda_graph train", {{"device", "cuda"}, {"cuda_graph", true}, {"precision", "bf16"}}, h200, true, ""},
      {"cuda_graph converge",
       {{"device", "cuda"}, {"cuda_graph", true}, {"scenario", "converge"}},
       h200,
       false,
       "cuda_graph with scenario converge"},
      {"cuda_graph fp16 train",
       {{"device", "cuda"}, {"cuda_graph", true}, {"precision", "fp16"}},
       h200,
       false,
       "the loss scaler reads its found-inf flag on the host"},
      {"cuda_graph ddp",
       {{"device", "cuda"},
        {"cuda_graph", true},
        {"strategy", "ddp"},
        {"world_size", 2},
        {"backend", "gloo"}},
       h200,
       false,
       "cuda_graph with strategy ddp"},
      {"cuda_graph fp16 infer",
       {{"device", "cuda"}, {"cuda_graph", true}, {"precision", "fp16"}, {"scenario", "infer"}},
       h200,
       true,
       ""},
      {"cuda_graph host data",
       {{"device", "cuda"}, {"scenario", "infer"}, {"cuda_graph", true}, {"data", "host"}},
       h200,
       false,
       "cuda_graph with data: host"},
      {"cuda_graph false cpu", {{"scenario", "infer"}, {"cuda_graph", false}}, cpu_113, true, ""},
  };
  for (const SupportCase& c : cases) {
    json params = c.params;
    params["model"] = "resnet50";
    auto cell = ParseTorchCell(params);
    ASSERT_TRUE(cell.ok()) << c.name << ": " << cell.error().message;
    const Status st = CheckSupported(*cell, c.caps);
    EXPECT_EQ(st.ok(), c.ok) << c.name;
    if (!c.ok && !st.ok()) {
      EXPECT_EQ(st.error().kind, ErrorKind::kUnsupported) << c.name;
      EXPECT_NE(st.error().message.find(c.message_part), std::string::npos)
          << c.name << ": " << st.error().message;
    }
  }
}

TEST(CheckSupported, Int8IsBertInferenceOnTheCpu) {
  const Capabilities cpu_113{1, false, 0, std::nullopt};
  const Capabilities h200{2, true, 1, 9};
  const json bert = {{"model", "bert_base"}, {"precision", "int8"}, {"scenario", "infer"}};
  auto with = [&](const json& extra) {
    json params = bert;
    params.update(extra);
    return params;
  };
  const std::vector<SupportCase> cases = {
      {"bert cpu infer", bert, cpu_113, true, ""},
      {"bert cuda", with({{"device", "cuda"}}), h200, false,
       "CPU's quantized engines only (int8 on CUDA needs TensorRT"},
      {"bert train", with({{"scenario", "train"}}), cpu_113, false, "use scenario infer"},
      {"resnet50", with({{"model", "resnet50"}}), cpu_113, false,
       "quantized offline (scripts/quantize_cnn.py)"},
      // A TorchScript file quantized offline runs as saved; whether it holds quantized layers is
      // checked when the runner loads it.
      {"torchscript cpu infer",
       with({{"model", "torchscript"}, {"model_path", "/m.pt"}, {"input_shapes", "B,4"}}), cpu_113, true, ""},
      {"torchscript cuda",
       with({{"model", "torchscript"}, {"model_path", "/m.pt"}, {"input_shapes", "B,4"}, {"device", "cuda"}}),
       h200, false, "a TorchScript model quantized offline runs on the CPU's quantized engines only"},
      {"torchscript train",
       with({{"model", "torchscript"},
             {"model_path", "/m.pt"},
             {"input_shapes", "B,4"},
             {"scenario", "train"}}),
       cpu_113, false, "use scenario infer"},
  };
  for (const SupportCase& c : cases) {
    auto cell = ParseTorchCell(c.params);
    ASSERT_TRUE(cell.ok()) << c.name << ": " << cell.error().message;
    const Status st = CheckSupported(*cell, c.caps);
    EXPECT_EQ(st.ok(), c.ok) << c.name;
    if (!c.ok && !st.ok()) {
      EXPECT_EQ(st.error().kind, ErrorKind::kUnsupported) << c.name;
      EXPECT_NE(st.error().message.find(c.message_part), std::string::npos)
          << c.name << ": " << st.error().message;
    }
  }
}

// eval_precisions: fp32 first and always, each precision once, converge cells only; each checked
// against the device and LibTorch.
TEST(ParseTorchCell, EvalPrecisionsOfAConvergeCell) {
  const json converge = {{"model", "fashion_cnn"}, {"scenario", "converge"}, {"target_accuracy", 0.8}};
  auto with = [&](const json& extra) {
    json params = converge;
    params.update(extra);
    return params;
  };
  auto none = ParseTorchCell(converge);
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_TRUE(none->eval_precisions.empty());
  auto listed = ParseTorchCell(with({{"eval_precisions", "int8; bf16"}}));
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  EXPECT_EQ(listed->eval_precisions,
            (std::vector<Precision>{Precision::kFp32, Precision::kInt8, Precision::kBf16}));
  auto with_fp32 = ParseTorchCell(with({{"eval_precisions", "bf16;fp32"}}));
  ASSERT_TRUE(with_fp32.ok());
  EXPECT_EQ(with_fp32->eval_precisions, (std::vector<Precision>{Precision::kFp32, Precision::kBf16}));
  auto twice = ParseTorchCell(with({{"eval_precisions", "int8;int8"}}));
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().kind, ErrorKind::kInvalidInput);
  auto infer = ParseTorchCell({{"model", "fashion_cnn"}, {"scenario", "infer"}, {"eval_precisions", "int8"}});
  ASSERT_FALSE(infer.ok());
  EXPECT_NE(infer.error().message.find("applies with scenario: converge"), std::string::npos)
      << infer.error().message;

  const Capabilities cpu_113{1, false, 0, std::nullopt};
  const Capabilities cpu_2{2, false, 0, std::nullopt};
  const Capabilities h200{2, true, 1, 9};
  const std::vector<SupportCase> cases = {
      {"int8 bf16 cpu", with({{"eval_precisions", "int8;bf16"}}), cpu_113, true, ""},
      {"int8 cuda (evaluated on the cpu)", with({{"eval_precisions", "int8"}, {"device", "cuda"}}), h200,
       true, ""},
      {"tf32 cpu", with({{"eval_precisions", "tf32"}}), cpu_113, false, "leave it out of eval_precisions"},
      {"tf32 h200", with({{"eval_precisions", "tf32;fp16"}, {"device", "cuda"}}), h200, true, ""},
      {"fp16 cpu 1.13", with({{"eval_precisions", "fp16"}}), cpu_113, false, "needs LibTorch 2.x"},
      {"fp16 cpu 2.x", with({{"eval_precisions", "fp16"}}), cpu_2, true, ""},
  };
  for (const SupportCase& c : cases) {
    auto cell = ParseTorchCell(c.params);
    ASSERT_TRUE(cell.ok()) << c.name << ": " << cell.error().message;
    const Status st = CheckSupported(*cell, c.caps);
    EXPECT_EQ(st.ok(), c.ok) << c.name;
    if (!c.ok && !st.ok()) {
      EXPECT_EQ(st.error().kind, ErrorKind::kUnsupported) << c.name;
      EXPECT_NE(st.error().message.find(c.message_part), std::string::npos)
          << c.name << ": " << st.error().message;
    }
  }
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

TEST(CheckSupported, DdpRules) {
  const Capabilities cpu{1, false, 0, std::nullopt, false};
  const Capabilities gpu_nccl{2, true, 2, 9, true};
  const Capabilities gpu_no_nccl{2, true, 2, 9, false};
  const json ddp = {{"model", "resnet50"}, {"strategy", "ddp"}, {"world_size", 2}};
  auto with = [&](const json& extra) {
    json p = ddp;
    p.update(extra);
    return p;
  };
  const std::vector<SupportCase> cases = {
      {"gloo cpu", ddp, cpu, true, ""},
      {"nccl on cpu", with({{"backend", "nccl"}}), cpu, false, "needs device cuda"},
      {"auto on cuda without nccl", with({{"device", "cuda"}}), gpu_no_nccl, false, "without c10d's NCCL"},
      {"auto on cuda with nccl", with({{"device", "cuda"}}), gpu_nccl, true, ""},
      {"gloo on cuda", with({{"device", "cuda"}, {"backend", "gloo"}}), gpu_no_nccl, true, ""},
      {"fp16", with({{"device", "cuda"}, {"precision", "fp16"}}), gpu_nccl, false, "fp16 ddp"},
      {"host data", with({{"data", "host"}}), cpu, false, "data: host"},
  };
  for (const SupportCase& c : cases) {
    auto cell = ParseTorchCell(c.params);
    ASSERT_TRUE(cell.ok()) << c.name << ": " << cell.error().message;
    const Status st = CheckSupported(*cell, c.caps);
    EXPECT_EQ(st.ok(), c.ok) << c.name << ": " << (st.ok() ? "" : st.error().message);
    if (!c.ok && !st.ok()) {
      EXPECT_EQ(st.error().kind, ErrorKind::kUnsupported) << c.name;
      EXPECT_NE(st.error().message.find(c.message_part), std::string::npos)
          << c.name << ": " << st.error().message;
    }
  }
}

TEST(PeakFlopsPerS, TableLookupBySubstringAndPrecision) {
  EXPECT_DOUBLE_EQ(*PeakFlopsPerS("NVIDIA H200", Precision::kBf16), 989e12);
  EXPECT_DOUBLE_EQ(*PeakFlopsPerS("NVIDIA H200", Precision::kFp16), 989e12);
  EXPECT_DOUBLE_EQ(*PeakFlopsPerS("NVIDIA H200", Precision::kTf32), 494e12);
  EXPECT_DOUBLE_EQ(*PeakFlopsPerS("NVIDIA H100 80GB HBM3", Precision::kFp32), 67e12);
  // The PCIe card must not take the SXM figure.
  EXPECT_DOUBLE_EQ(*PeakFlopsPerS("NVIDIA H100 PCIe", Precision::kBf16), 756e12);
  EXPECT_FALSE(PeakFlopsPerS("NVIDIA H200", Precision::kInt8).has_value());
  EXPECT_FALSE(PeakFlopsPerS("Tesla T4", Precision::kFp32).has_value());
}

}  // namespace
}  // namespace dlbench::torchrunner

namespace dlbench::torchrunner {
namespace {

// The plan's int8 warning (config::Int8Problem) and the runner's refusal (CheckSupported) are two
// tables of the same rule: a cell the plan lets through must run, and one it warns about must end
// unsupported. Every model, device and scenario of the rule, at int8.
TEST(CheckSupported, AgreesWithThePlansInt8Rule) {
  const Capabilities gpu{2, true, 1, 9};
  for (const char* model :
       {"resnet50", "mobilenet_v2", "bert_base", "ssd_mobilenet", "fashion_cnn", "torchscript"}) {
    for (const char* device : {"cpu", "cuda"}) {
      for (const char* scenario : {"infer", "train"}) {
        SCOPED_TRACE(fmt::format("{} {} {}", model, device, scenario));
        config::Combination combination = {
            {"model", model}, {"device", device}, {"scenario", scenario}, {"precision", "int8"}};
        json params = json::object();
        for (const auto& [key, value] : combination) params[key] = value;
        if (std::string(model) == "torchscript") {
          params["model_path"] = "/nonexistent/m.pt";
          params["input_shapes"] = "B,3,32,32";
        }
        auto cell = ParseTorchCell(params);
        ASSERT_TRUE(cell.ok()) << cell.error().message;
        // The same cell at fp32 runs here, so int8 alone decides.
        TorchCell fp32 = *cell;
        fp32.precision = Precision::kFp32;
        ASSERT_TRUE(CheckSupported(fp32, gpu).ok());
        const std::string plan = config::Int8Problem(combination);
        const Status runner = CheckSupported(*cell, gpu);
        EXPECT_EQ(plan.empty(), runner.ok())
            << "plan: '" << plan << "'; runner: '"
            << (runner.ok() ? std::string("ok") : runner.error().message) << "'";
      }
    }
  }
}

// model: aoti's rules: the loader must be built; an AOTInductor package infers only, at its own
// precision, with its exported strides, outside CUDA graphs and ddp. Each refusal names what works.
TEST(CheckSupported, AotiRules) {
  Capabilities gpu{2, true, 1, 9};
  gpu.aoti_built = true;
  gpu.nccl_built = true;
  Capabilities cpu_113;  // Debian's LibTorch 1.13: no loader
  const json aoti = {{"model", "aoti"},
                     {"model_path", "/tmp/aoti/resnet50-bf16.pt2"},
                     {"input_shapes", "B,3,224,224"},
                     {"device", "cuda"},
                     {"scenario", "infer"},
                     {"precision", "bf16"}};
  auto with = [&](const json& extra) {
    json p = aoti;
    for (const auto& [k, v] : extra.items()) p[k] = v;
    return p;
  };
  struct Case {
    const char* name;
    json params;
    Capabilities caps;
    const char* message_part;  // empty: supported
  };
  const std::vector<Case> cases = {
      {"infer bf16 cuda", aoti, gpu, ""},
      {"infer fp32 cpu", with({{"device", "cpu"}, {"precision", "fp32"}}), gpu, ""},
      {"no loader", aoti, cpu_113, "needs the AOTInductor package loader (LibTorch 2.6+"},
      {"no loader on cpu", with({{"device", "cpu"}}), cpu_113, "LibTorch 2.6+"},
      {"train", with({{"scenario", "train"}}), gpu,
       "hold an inference graph: no backward; use scenario infer"},
      {"converge", with({{"scenario", "converge"}}), gpu, "use scenario infer"},
      {"cuda_graph", with({{"cuda_graph", true}}), gpu, "use cuda_graph false"},
      {"ddp", with({{"scenario", "train"}, {"strategy", "ddp"}, {"world_size", 2}}), gpu,
       "model aoti with strategy ddp"},
      {"int8", with({{"device", "cpu"}, {"precision", "int8"}}), gpu,
       "runs at the precision it was compiled at"},
      {"channels_last", with({{"memory_format", "channels_last"}}), gpu,
       "use memory_format auto or contiguous"},
      {"contiguous", with({{"memory_format", "contiguous"}}), gpu, ""},
  };
  for (const Case& c : cases) {
    auto cell = ParseTorchCell(c.params);
    ASSERT_TRUE(cell.ok()) << c.name << ": " << cell.error().message;
    const Status st = CheckSupported(*cell, c.caps);
    if (std::string(c.message_part).empty()) {
      EXPECT_TRUE(st.ok()) << c.name << ": " << st.error().message;
    } else {
      ASSERT_FALSE(st.ok()) << c.name;
      EXPECT_EQ(st.error().kind, ErrorKind::kUnsupported) << c.name;
      EXPECT_NE(st.error().message.find(c.message_part), std::string::npos)
          << c.name << ": " << st.error().message;
    }
  }
}

// The plan warns about every aoti cell at int8, and the runner refuses every one.
TEST(CheckSupported, AotiAtInt8IsRefusedByThePlanAndTheRunner) {
  Capabilities gpu{2, true, 1, 9};
  gpu.aoti_built = true;
  for (const char* device : {"cpu", "cuda"}) {
    const config::Combination combination = {
        {"model", "aoti"}, {"device", device}, {"scenario", "infer"}, {"precision", "int8"}};
    EXPECT_NE(config::Int8Problem(combination).find("the precision it was compiled at"), std::string::npos)
        << device;
    auto cell = ParseTorchCell({{"model", "aoti"},
                                {"device", device},
                                {"scenario", "infer"},
                                {"precision", "int8"},
                                {"model_path", "/m.pt2"},
                                {"input_shapes", "B,4"}});
    ASSERT_TRUE(cell.ok()) << cell.error().message;
    EXPECT_FALSE(CheckSupported(*cell, gpu).ok()) << device;
  }
}

}  // namespace
}  // namespace dlbench::torchrunner
