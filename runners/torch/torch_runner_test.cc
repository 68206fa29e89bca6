// End-to-end tests of dlbench-torch on the CPU: the real binary, driven through its protocol pipes
// by runner_harness (as `dlbench run` drives it), on small variants of the zoo's models and on
// TorchScript files written by the test itself.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "cell_options.h"
#include "failure.h"
#include "precision.h"
#include "record/metrics.h"
#include "runner_harness.h"

namespace dlbench::torchrunner {
namespace {

using nlohmann::json;
using testing::CellTranscript;
using testing::HarnessOptions;
using testing::RunCell;

const std::string kRunner = std::string(DLBENCH_BIN_DIR) + "/dlbench-torch";

protocol::CellConfig Config(json params, std::int64_t max_steps = 10'000) {
  protocol::CellConfig c;
  c.params = std::move(params);
  c.seed = 7;
  c.limits.max_steps = max_steps;
  c.limits.max_time_s = 120.0;
  c.cell_key = "test";
  return c;
}

CellTranscript RunCellOf(json params, HarnessOptions options = {}, std::int64_t max_steps = 10'000) {
  auto t = RunCell(kRunner, Config(std::move(params), max_steps), options);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  if (!t.ok()) return {};
  EXPECT_TRUE(t->exit.success()) << t->exit.Describe();
  return std::move(*t);
}

std::string ErrorKindOf(const CellTranscript& t) { return t.error ? t.error->value("kind", "") : ""; }
std::string ErrorMessageOf(const CellTranscript& t) { return t.error ? t.error->value("message", "") : ""; }

// Small variants: the same code paths as the standard sizes, in well under a second per step.
json TinySizes(const std::string& model) {
  if (model == "resnet50")
    return {{"model", model}, {"image_size", 32}, {"base_width", 8}, {"num_classes", 10}};
  if (model == "mobilenet_v2")
    return {{"model", model}, {"image_size", 64}, {"width_mult", 0.25}, {"num_classes", 10}};
  if (model == "bert_base") {
    return {{"model", model}, {"layers", 1},       {"hidden_size", 32}, {"heads", 2},
            {"seq_len", 16},  {"vocab_size", 100}, {"num_classes", 2}};
  }
  return {{"model", model}, {"image_size", 64}, {"width_mult", 0.25}, {"num_classes", 5}};
}

// Batch 2 and lr 0.01: batch-norm in training needs more than one value per channel, and the
// tiny networks diverge at the standard lr 0.1 within a few steps.
json Tiny(const std::string& model) {
  json params = TinySizes(model);
  params["batch_size"] = 2;
  params["lr"] = 0.01;
  return params;
}

TEST(TorchRunner, HelloDescribesTheEnvironment) {
  auto hello = testing::ReadHello(kRunner);
  ASSERT_TRUE(hello.ok()) << hello.error().message;
  EXPECT_EQ(hello->value("runner", ""), "torch");
  EXPECT_FALSE(hello->value("runner_version", "").empty());
  const json& fw = hello->at("framework");
  EXPECT_EQ(fw.value("name", ""), "libtorch");
  EXPECT_EQ(fw.value("version", "").substr(0, 2), std::string(TORCH_VERSION).substr(0, 2));
  EXPECT_FALSE(fw.value("build_config", "").empty());
  ASSERT_TRUE(hello->at("devices").is_array());
  EXPECT_EQ(hello->at("devices").at(0).value("type", ""), "cpu");
  EXPECT_GE(hello->value("threads", 0), 1);
}

struct ModelCase {
  std::string model;
  std::string scenario;
  std::string precision;
};

class EveryModel : public ::testing::TestWithParam<ModelCase> {};

TEST_P(EveryModel, StepsAndReportsOnCpu) {
  const ModelCase& c = GetParam();
  json params = Tiny(c.model);
  params["scenario"] = c.scenario;
  params["precision"] = c.precision;
  params["batch_size"] = 2;
  params["device"] = "cpu";
  HarnessOptions options;
  options.stop_after_steps = 5;
  const CellTranscript t = RunCellOf(params, options);
  ASSERT_FALSE(t.error) << t.error->dump();
  ASSERT_TRUE(t.ready);
  const json& e = *t.ready;
  EXPECT_EQ(e.value("model", ""), c.model);
  EXPECT_EQ(e.value("scenario", ""), c.scenario);
  EXPECT_EQ(e.value("device", ""), "cpu");
  EXPECT_EQ(e.value("precision", ""), c.precision);
  EXPECT_EQ(e.value("memory_format", ""), "contiguous");  // auto on the CPU
  EXPECT_EQ(e.value("samples_per_step", 0), 2);
  EXPECT_EQ(e.at("device_uuids"), json::array());  // a CPU cell: no GPU figures for it
  EXPECT_EQ(e.value("allow_tf32_cublas", true), false);
  EXPECT_EQ(e.value("loss_scaling", true), false);
  EXPECT_EQ(e.at("autocast_dtype").is_null(), c.precision == "fp32");
  EXPECT_GT(e.value("flops_per_sample", 0.0), 0.0);
  EXPECT_TRUE(e.at("model_options").is_object());

  ASSERT_GE(t.steps.size(), 5u);
  for (const auto& s : t.steps) {
    EXPECT_EQ(s.samples, 2u);
    EXPECT_GT(s.end_ns, s.start_ns);
  }
  ASSERT_EQ(t.memory.size(), 2u);
  EXPECT_EQ(t.memory[0].value("label", ""), "after_warmup");
  EXPECT_EQ(t.memory[1].value("label", ""), "end");
  EXPECT_GT(t.memory[1].value("host_peak_rss_bytes", 0), 0);
  // Producer and consumer agree on every name: what the runner sends is declared in the data model,
  // as a runner metric with the declared unit (record/metrics.h), or dlbench would not store it.
  for (const json& snapshot : t.memory) {
    for (const auto& [field, value] : snapshot.items()) {
      if (!value.is_number() || field.size() < 6 || field.compare(field.size() - 6, 6, "_bytes") != 0)
        continue;
      const record::MetricDef* def = record::FindMetricDef(field);
      EXPECT_TRUE(def != nullptr && def->producer == record::Producer::kRunnerMemory) << field;
    }
  }
  for (const json& extras : t.extras) {
    for (const json& m : extras.at("metrics")) {
      const record::MetricDef* def = record::FindMetricDef(m.value("name", ""));
      ASSERT_NE(def, nullptr) << "undeclared runner metric " << m.dump();
      EXPECT_EQ(def->producer, record::Producer::kRunner) << m.dump();
      EXPECT_EQ(m.value("unit", ""), def->unit) << m.dump();
    }
  }
  ASSERT_EQ(t.extras.size(), 1u);
  const json& metrics = t.extras[0].at("metrics");
  ASSERT_FALSE(metrics.empty());
  EXPECT_EQ(metrics[0].value("name", ""), "flops_per_sample");
  EXPECT_DOUBLE_EQ(metrics[0].value("value", 0.0), e.value("flops_per_sample", -1.0));
  if (c.scenario == "train") {
    const json& info = t.extras[0].at("info");
    ASSERT_TRUE(info.contains("final_loss")) << info.dump();
    EXPECT_TRUE(std::isfinite(info.at("final_loss").get<double>()));
    EXPECT_EQ(e.value("optimizer", "").empty(), false);
  }
  ASSERT_TRUE(t.done);
  EXPECT_EQ(t.done->value("reason", ""), "stopped");
  EXPECT_EQ(t.done->value("steps", 0), static_cast<std::int64_t>(t.steps.size()));
}

INSTANTIATE_TEST_SUITE_P(
    Zoo, EveryModel,
    ::testing::Values(ModelCase{"resnet50", "train", "fp32"}, ModelCase{"resnet50", "infer", "fp32"},
                      ModelCase{"resnet50", "train", "bf16"}, ModelCase{"mobilenet_v2", "train", "fp32"},
                      ModelCase{"mobilenet_v2", "infer", "bf16"}, ModelCase{"bert_base", "train", "fp32"},
                      ModelCase{"bert_base", "infer", "fp32"}, ModelCase{"ssd_mobilenet", "train", "fp32"},
                      ModelCase{"ssd_mobilenet", "infer", "fp32"}),
    [](const ::testing::TestParamInfo<ModelCase>& info) {
      return info.param.model + "_" + info.param.scenario + "_" + info.param.precision;
    });

TEST(TorchRunner, StopsAtTheStepCeilingByItself) {
  HarnessOptions options;
  options.stop_after_steps = 1'000'000;  // never send STOP
  const CellTranscript t = RunCellOf(Tiny("mobilenet_v2"), options, /*max_steps=*/4);
  ASSERT_TRUE(t.done) << (t.error ? t.error->dump() : "");
  EXPECT_EQ(t.done->value("reason", ""), "max_steps");
  EXPECT_EQ(t.done->value("steps", 0), 4);
  EXPECT_EQ(t.steps.size(), 4u);
}

TEST(TorchRunner, RecordsSwitchesItWasGiven) {
  json params = Tiny("resnet50");
  params["deterministic"] = true;
  params["threads"] = 1;
  params["memory_format"] = "channels_last";
  params["lr"] = 0.02;
  params["cudnn_benchmark_limit"] = 3;
  // What the orchestrator sets from cuda_alloc_conf (docs/memory.md): echoed from the environment.
  HarnessOptions options;
  options.extra_env = {{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"},
                       {"GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1048576"}};
  const CellTranscript t = RunCellOf(params, options);
  ASSERT_TRUE(t.ready) << (t.error ? t.error->dump() : "");
  EXPECT_EQ(t.ready->value("pytorch_cuda_alloc_conf", ""), "expandable_segments:True");
  // What host_allocator sets (docs/memory.md): the runner reports the malloc it runs with.
  const json alloc = t.ready->value("host_allocator", json::object());
  EXPECT_EQ(alloc.value("malloc", ""), "glibc") << alloc.dump();
  EXPECT_EQ(alloc.value("glibc_tunables", ""), "glibc.malloc.trim_threshold=1048576") << alloc.dump();
  // `threads` reaches the BLAS library's own pool too (blas_threads.h). Debian's libblas.so.3 is
  // OpenBLAS where libopenblas0-pthread is installed (scripts/setup-debian.sh installs it).
  const json blas = t.ready->value("blas", json::object());
  ASSERT_TRUE(blas.contains("library")) << t.ready->dump();
  if (blas.at("library") == "openblas" || blas.at("library") == "blis") {
    EXPECT_EQ(blas.value("threads", 0), 1) << blas.dump();
  } else {
    EXPECT_EQ(blas.at("library"), "unknown") << blas.dump();
    EXPECT_TRUE(blas.at("threads").is_null()) << blas.dump();
  }
  EXPECT_EQ(t.ready->value("deterministic", false), true);
  EXPECT_EQ(t.ready->value("deterministic_algorithms", false), true);
  EXPECT_EQ(t.ready->value("threads", 0), 1);
  EXPECT_EQ(t.ready->value("memory_format", ""), "channels_last");
  EXPECT_EQ(t.ready->value("memory_format_requested", ""), "channels_last");
  EXPECT_DOUBLE_EQ(t.ready->value("lr", 0.0), 0.02);
  EXPECT_EQ(t.ready->value("cudnn_benchmark_limit", -1), 3);
  EXPECT_EQ(t.ready->value("seed", 0), 7);
  EXPECT_TRUE(t.done);
}

// cudnn_benchmark_limit is process-wide in LibTorch: a cell without the key, after one with it in
// the same process (--runner-reuse), gets the library's limit back, and each records what applied.
TEST(MathSwitches, BenchmarkLimitIsTheCellsOrTheLibrarysAgain) {
  const int library = at::globalContext().benchmarkLimitCuDNN();
  auto limited = ParseTorchCell({{"model", "resnet50"}, {"cudnn_benchmark_limit", 2}});
  ASSERT_TRUE(limited.ok()) << limited.error().message;
  EXPECT_EQ(ApplyMathSwitches(*limited).ToJson().value("cudnn_benchmark_limit", -1), 2);
  EXPECT_EQ(at::globalContext().benchmarkLimitCuDNN(), 2);
  auto plain = ParseTorchCell({{"model", "resnet50"}});
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_FALSE(plain->cudnn_benchmark_limit.has_value());
  EXPECT_EQ(ApplyMathSwitches(*plain).ToJson().value("cudnn_benchmark_limit", -1), library);
  EXPECT_EQ(at::globalContext().benchmarkLimitCuDNN(), library);
}

double MetricValue(const CellTranscript& t, std::string_view name) {
  for (const json& extras : t.extras) {
    for (const json& m : extras.at("metrics")) {
      if (m.at("name") == name) return m.at("value").get<double>();
    }
  }
  ADD_FAILURE() << "no metric " << name;
  return -1;
}

// Where the memory goes (memory_accounting.h), counted by hand for the tiny BERT: word embeddings
// 100 x 32, positions 512 x 32, token types 2 x 32, the embedding LayerNorm 2 x 32; one encoder
// layer of four 32 x 32 projections with biases (4 x 1056), two LayerNorms (2 x 64), the 32 -> 128
// -> 32 feed-forward (4224 + 4128); the pooler (1056) and the 2-class head (66): 33538 fp32
// parameters, 134152 bytes in 25 tensors, no buffers. AdamW keeps two buffers per parameter. The
// batch: token ids and mask [2, 16] int64 and the target [2] int64, 528 bytes.
TEST(TorchRunner, SendsWhereTheMemoryGoes) {
  constexpr double kParams = 134152;
  HarnessOptions options;
  options.stop_after_steps = 5;
  const CellTranscript t = RunCellOf(Tiny("bert_base"), options);
  ASSERT_TRUE(t.done) << (t.error ? t.error->dump() : "");
  namespace metric = record::metric;
  EXPECT_EQ(MetricValue(t, metric::kWeightBytes), kParams);
  EXPECT_EQ(MetricValue(t, metric::kGradBytes), kParams);
  EXPECT_EQ(MetricValue(t, metric::kOptimizerStateBytes), 2 * kParams);
  EXPECT_EQ(MetricValue(t, metric::kInputBatchBytes), 528);
  EXPECT_EQ(MetricValue(t, metric::kExpectedResidentBytes), 4 * kParams + 528);
  // On the CPU the peak is the RSS the build and the steps added since the pre-build reading: the
  // tensors, and the library code and thread stacks the first steps touched, so here above the
  // expected bytes, with the rest attributed to activations and workspaces.
  const double peak = MetricValue(t, metric::kMemoryPeakBytes);
  EXPECT_GE(peak, 4 * kParams + 528);
  EXPECT_EQ(MetricValue(t, metric::kActivationWorkspaceBytes), peak - (4 * kParams + 528));
  const json& info = t.extras.at(0).at("info").at("memory");
  EXPECT_EQ(info.value("optimizer_step_counters", 0), 25);
  EXPECT_NE(info.value("optimizer", "").find("AdamW: 2 buffers"), std::string::npos) << info.dump();
  EXPECT_NE(info.value("peak", "").find("host_peak_rss_bytes"), std::string::npos) << info.dump();

  // Inference holds the weights and the batch only.
  json infer = Tiny("bert_base");
  infer["scenario"] = "infer";
  const CellTranscript i = RunCellOf(infer, options);
  ASSERT_TRUE(i.done) << (i.error ? i.error->dump() : "");
  EXPECT_EQ(MetricValue(i, metric::kExpectedResidentBytes), kParams + 528);
  for (const json& m : i.extras.at(0).at("metrics")) EXPECT_NE(m.at("name"), metric::kGradBytes);
}

struct RefusalCase {
  const char* name;
  json params;
  const char* kind;
  std::vector<std::string> message_parts;
};

// torch.optim's choice: per-parameter loops on the CPU, multi-tensor kernels on request (and on
// CUDA by default, checked in the GPU tests). Either way training really trains.
TEST(TorchRunner, OptimizerImplIsChosenAsTorchOptimDoesAndRecorded) {
  for (const std::string impl : {"auto", "per_param", "foreach"}) {
    json params = Tiny("resnet50");
    params["scenario"] = "train";
    params["device"] = "cpu";
    params["optimizer_impl"] = impl;
    HarnessOptions options;
    options.stop_after_steps = 4;
    const CellTranscript t = RunCellOf(params, options);
    ASSERT_TRUE(t.ready) << impl << ": " << (t.error ? t.error->dump() : "");
    EXPECT_EQ(t.ready->value("optimizer_impl", ""), impl == "foreach" ? "foreach" : "per_param") << impl;
    EXPECT_TRUE(t.done) << impl;
  }
  json bad = Tiny("resnet50");
  bad["optimizer_impl"] = "fused";
  const CellTranscript t = RunCellOf(bad);
  EXPECT_EQ(ErrorKindOf(t), "invalid");
  EXPECT_NE(ErrorMessageOf(t).find("optimizer_impl"), std::string::npos) << ErrorMessageOf(t);
}

TEST(TorchRunner, RefusesWithAClearErrorAndExitsCleanly) {
  const std::vector<RefusalCase> cases = {
      {"unknown model",
       {{"model", "resnet5O"}},
       "invalid",
       {"resnet5O", "resnet50", "bert_base", "torchscript"}},
      {"bad option", {{"model", "resnet50"}, {"image_size", -4}}, "invalid", {"image_size"}},
      {"tf32 on cpu", {{"model", "resnet50"}, {"precision", "tf32"}}, "unsupported", {"tf32"}},
      {"int8", {{"model", "resnet50"}, {"precision", "int8"}}, "unsupported", {"int8"}},
      {"ddp infer",
       {{"model", "resnet50"}, {"strategy", "ddp"}, {"scenario", "infer"}},
       "invalid",
       {"scenario train"}},
      // CONFIGURE (the harness's) says world_size 1 and carries no rendezvous.
      {"ddp without rendezvous",
       {{"model", "resnet50"}, {"strategy", "ddp"}, {"world_size", 2}},
       "invalid",
       {"CONFIGURE says rank 0 of world_size 1"}},
      {"nccl on cpu",
       {{"model", "resnet50"}, {"strategy", "ddp"}, {"backend", "nccl"}},
       "unsupported",
       {"nccl"}},
      {"bad batch", {{"model", "resnet50"}, {"batch_size", -1}}, "invalid", {"batch_size"}},
      {"missing torchscript file",
       {{"model", "torchscript"}, {"model_path", "/nonexistent/m.pt"}, {"input_shapes", "B,4"}},
       "invalid",
       {"/nonexistent/m.pt", "does not exist"}},
      {"aoti training",
       {{"model", "aoti"},
        {"model_path", "/nonexistent/m.pt2"},
        {"input_shapes", "B,4"},
        {"scenario", "train"}},
       "unsupported",
       {"aoti"}},
  };
  for (const RefusalCase& c : cases) {
    const CellTranscript t = RunCellOf(c.params);
    EXPECT_EQ(ErrorKindOf(t), c.kind) << c.name << ": " << ErrorMessageOf(t);
    for (const std::string& part : c.message_parts) {
      EXPECT_NE(ErrorMessageOf(t).find(part), std::string::npos) << c.name << ": " << ErrorMessageOf(t);
    }
    EXPECT_FALSE(t.ready) << c.name;
    EXPECT_FALSE(t.done) << c.name;
  }
}

// Seen on the H200 in the standard matrix: SSDLite's last extra layers are 1x1, so batch
// normalisation has one value per channel at batch size 1 and cannot train. That is the model's
// limit, not a runner crash: the cell ends `unsupported` and says what would work.
TEST(TorchRunner, SsdTrainingAtBatchOneIsUnsupported) {
  const CellTranscript t = RunCellOf({{"model", "ssd_mobilenet"},
                                      {"image_size", 160},
                                      {"width_mult", 0.5},
                                      {"num_classes", 11},
                                      {"batch_size", 1},
                                      {"scenario", "train"},
                                      {"device", "cpu"}});
  EXPECT_EQ(ErrorKindOf(t), "unsupported") << ErrorMessageOf(t);
  EXPECT_NE(ErrorMessageOf(t).find("batch_size >= 2"), std::string::npos) << ErrorMessageOf(t);
  EXPECT_FALSE(t.done);
}

TEST(TorchRunner, CudaOnACpuBuildIsUnsupported) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "this machine has CUDA";
  json params = Tiny("resnet50");
  params["device"] = "cuda";
  const CellTranscript t = RunCellOf(params);
  EXPECT_EQ(ErrorKindOf(t), "unsupported") << ErrorMessageOf(t);
  EXPECT_NE(ErrorMessageOf(t).find("cuda"), std::string::npos);
}

// model: aoti on a LibTorch without the AOTInductor package loader (Debian's 1.13): refused before
// the package is looked at, naming the LibTorch that has it.
TEST(TorchRunner, AotiWithoutTheLoaderIsUnsupported) {
#if DLBENCH_HAVE_AOTI
  GTEST_SKIP() << "this dlbench-torch has the AOTInductor package loader";
#endif
  const CellTranscript t = RunCellOf({{"model", "aoti"},
                                      {"model_path", "/nonexistent/resnet50-bf16.pt2"},
                                      {"input_shapes", "B,3,224,224"},
                                      {"scenario", "infer"},
                                      {"precision", "bf16"}});
  EXPECT_EQ(ErrorKindOf(t), "unsupported") << ErrorMessageOf(t);
  EXPECT_NE(ErrorMessageOf(t).find("LibTorch 2.6+"), std::string::npos) << ErrorMessageOf(t);
  EXPECT_FALSE(t.ready);
}

// A TorchScript file made here, so the test needs no Python.
class TorchScriptFiles : public ::testing::Test {
 protected:
  std::string Save(const std::string& name, const std::string& forward_body) {
    torch::jit::Module m("Tiny");
    m.register_parameter("w", torch::randn({4, 3}, torch::requires_grad()), /*is_buffer=*/false);
    m.define("def forward(self, x):\n    " + forward_body + "\n");
    const std::string path =
        ::testing::TempDir() + "/dlbench_" + name + "_" + std::to_string(getpid()) + ".pt";
    m.save(path);
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const auto& p : paths_) std::remove(p.c_str());
  }
  static json Params(const std::string& path, const std::string& scenario) {
    return {{"model", "torchscript"},    {"model_path", path},   {"input_shapes", "B,4"},
            {"input_dtypes", "float32"}, {"scenario", scenario}, {"batch_size", 3}};
  }
  std::vector<std::string> paths_;
};

TEST_F(TorchScriptFiles, InfersWithDeclaredInputs) {
  const CellTranscript t =
      RunCellOf(Params(Save("relu", "return torch.relu(torch.matmul(x, self.w))"), "infer"));
  ASSERT_FALSE(t.error) << t.error->dump();
  ASSERT_TRUE(t.ready);
  EXPECT_EQ(t.ready->value("model", ""), "torchscript");
  EXPECT_EQ(t.ready->at("model_options").at("inputs").at(0).at("shape"), json({3, 4}));
  EXPECT_FALSE(t.ready->contains("flops_per_sample"));
  ASSERT_TRUE(t.done);
  EXPECT_GE(t.steps.size(), 5u);
}

TEST_F(TorchScriptFiles, TrainsWhenForwardReturnsTheLoss) {
  const CellTranscript t =
      RunCellOf(Params(Save("loss", "return torch.matmul(x, self.w).pow(2).mean()"), "train"));
  ASSERT_FALSE(t.error) << t.error->dump();
  ASSERT_TRUE(t.done);
  // The loss came back from the device as a finite number after real optimizer steps.
  EXPECT_TRUE(std::isfinite(t.extras.at(0).at("info").value("final_loss", NAN)));
}

TEST_F(TorchScriptFiles, TrainingANonLossModelIsUnsupported) {
  const CellTranscript t = RunCellOf(Params(Save("notloss", "return torch.matmul(x, self.w)"), "train"));
  EXPECT_EQ(ErrorKindOf(t), "unsupported");
  EXPECT_NE(ErrorMessageOf(t).find("scalar"), std::string::npos) << ErrorMessageOf(t);
}

TEST_F(TorchScriptFiles, WrongInputShapesAreInvalid) {
  json params = Params(Save("shape", "return torch.matmul(x, self.w)"), "infer");
  params["input_shapes"] = "B,5";
  const CellTranscript t = RunCellOf(params);
  EXPECT_EQ(ErrorKindOf(t), "invalid");
  EXPECT_NE(ErrorMessageOf(t).find("rejected the declared inputs (float32 3x5)"), std::string::npos)
      << ErrorMessageOf(t);
}

TEST_F(TorchScriptFiles, AnAllocationThatCannotFitIsAnOomOutcome) {
  // 2^20 x 2^20 float32 = 4 TiB: more than any host, refused by the allocator at once.
  const CellTranscript t =
      RunCellOf(Params(Save("huge", "return x.new_ones([1048576, 1048576]).sum() + x.sum()"), "infer"));
  EXPECT_EQ(ErrorKindOf(t), "oom") << ErrorMessageOf(t);
  ASSERT_TRUE(t.error && t.error->contains("requested_bytes")) << (t.error ? t.error->dump() : "");
  EXPECT_EQ(t.error->at("requested_bytes").get<std::int64_t>(), std::int64_t{1} << 42);
}

TEST(Failure, ParsesRequestedBytesFromBothAllocators) {
  EXPECT_EQ(ParseRequestedBytes("CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 79.35 GiB total)"),
            std::int64_t{20} << 20);
  EXPECT_EQ(ParseRequestedBytes("CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has"),
            std::int64_t{3} << 29);
  EXPECT_EQ(ParseRequestedBytes("Tried to allocate 512 B"), 512);
  EXPECT_EQ(ParseRequestedBytes(
                "DefaultCPUAllocator: not enough memory: you tried to allocate 4398046511104 bytes."),
            std::int64_t{4398046511104});
  EXPECT_FALSE(ParseRequestedBytes("CUDA error: an illegal memory access was encountered").has_value());
}

// A CUDA allocator's OutOfMemoryError leaves the process usable for the next cell; a host one does not say
// so.
TEST(Failure, OnlyACudaOutOfMemoryLeavesTheProcessUsable) {
  const Failure cuda = ClassifyException(std::make_exception_ptr(
      c10::OutOfMemoryError({__func__, __FILE__, static_cast<std::uint32_t>(__LINE__)},
                            "CUDA out of memory. Tried to allocate 2.00 GiB")));
  EXPECT_EQ(cuda.kind, record::RunnerErrorKind::kOom);
  EXPECT_EQ(cuda.details.value("process_usable", false), true);
  const Failure host = ClassifyException(std::make_exception_ptr(
      c10::OutOfMemoryError({__func__, __FILE__, static_cast<std::uint32_t>(__LINE__)},
                            "DefaultCPUAllocator: not enough memory: you tried to allocate 1024 bytes.")));
  EXPECT_EQ(host.kind, record::RunnerErrorKind::kOom);
  EXPECT_FALSE(host.details.contains("process_usable"));
  EXPECT_FALSE(
      ClassifyException(std::make_exception_ptr(std::bad_alloc())).details.contains("process_usable"));
}

TEST(Failure, ClassifiesByMessage) {
  auto oom =
      ClassifyMessage("CUDA out of memory. Tried to allocate 2.00 GiB", record::RunnerErrorKind::kInternal);
  EXPECT_EQ(oom.kind, record::RunnerErrorKind::kOom);
  EXPECT_EQ(oom.details.value("requested_bytes", std::int64_t{0}), std::int64_t{2} << 30);
  auto det =
      ClassifyMessage("upsample_bilinear2d_backward_out_cuda does not have a deterministic implementation",
                      record::RunnerErrorKind::kInternal);
  EXPECT_EQ(det.kind, record::RunnerErrorKind::kUnsupported);
  auto bn =
      ClassifyMessage("Expected more than 1 value per channel when training, got input size [1, 64, 1, 1]",
                      record::RunnerErrorKind::kInternal);
  EXPECT_EQ(bn.kind, record::RunnerErrorKind::kUnsupported);
  EXPECT_NE(bn.message.find("batch_size >= 2"), std::string::npos) << bn.message;
  auto other = ClassifyMessage("shape mismatch", record::RunnerErrorKind::kInternal);
  EXPECT_EQ(other.kind, record::RunnerErrorKind::kInternal);
  EXPECT_FALSE(other.details.contains("requested_bytes"));
}

}  // namespace
}  // namespace dlbench::torchrunner
