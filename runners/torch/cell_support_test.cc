// The torch runner's support rules (CheckSupported), without LibTorch: which parsed cells run on
// which LibTorch and device, and that they agree with the plan's int8 warnings. Parsing alone is
// tested in cell_options_test.cc.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include "cell_options.h"
#include "config/model_rules.h"

namespace dlbench::torchrunner {
namespace {

using nlohmann::json;

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
