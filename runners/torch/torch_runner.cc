#include "torch_runner.h"

#include <fmt/format.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <optional>

#include "aoti_workload.h"
#include "blas_threads.h"
#include "cell_options.h"
#include "common/clock.h"
#include "common/log.h"
#include "config/cuda_alloc_conf.h"
#include "config/host_allocator.h"
#include "config/registry.h"
#include "converge.h"
#include "cuda_graph.h"
#include "cuda_support.h"
#include "data/feeder.h"
#include "ddp/allreduce_cell.h"
#include "ddp/cell.h"
#include "ddp/process_group.h"
#include "ddp/rank.h"
#include "device_info.h"
#include "failure.h"
#include "foreach_optim.h"
#include "load/settings.h"
#include "load_scenario.h"
#include "memory_accounting.h"
#include "models/dynamic_int8.h"
#include "peak_flops.h"
#include "precision.h"
#include "record/metrics.h"
#include "reference_eval.h"
#include "step_profile.h"
#include "workload.h"

namespace dlbench::torchrunner {
namespace {

using protocol::LoopEnd;
using protocol::LoopResult;
using protocol::RunnerLimits;
using protocol::RunnerSession;
using record::RunnerErrorKind;

// Steps before the "after_warmup" memory snapshot. By then the allocator holds the model, the
// optimizer state and one step's activations; the peak counters restart after the snapshot so
// the "end" snapshot shows the steady state's own peak.
constexpr std::int64_t kWarmupSnapshotSteps = 3;

int Report(RunnerSession& session, const Failure& failure) {
  LogError("dlbench-torch: {}: {}", record::Name(failure.kind), failure.message);
  (void)session.SendError(failure.kind, failure.message, failure.details);
  return 0;
}

RunnerErrorKind WireKind(ErrorKind kind) {
  return kind == ErrorKind::kUnsupported ? RunnerErrorKind::kUnsupported : RunnerErrorKind::kInvalid;
}

// Everything a cell's steps use, built before READY.
struct CellState {
  TorchCell cell;
  torch::Device device{torch::kCPU};
  torch::MemoryFormat memory_format = torch::MemoryFormat::Contiguous;
  std::optional<torch::ScalarType> autocast_dtype;
  std::unique_ptr<Workload> workload;
  std::unique_ptr<torch::optim::Optimizer> optimizer;  // train only
  std::string optimizer_impl;                          // train only: "foreach" or "per_param"
  std::unique_ptr<LossScaler> scaler;                  // fp16 train only
  torch::Tensor last_loss;                             // train only, read after the loop
  MathSwitches switches;
  BlasThreading blas;
  std::optional<CudaDeviceInfo> cuda_device;
  std::unique_ptr<data::Feeder> feeder;  // each step's batch from cell.data (device: the fixed one)
  std::unique_ptr<CapturedForward>
      graph;                       // cuda_graph: the infer forward or train step, captured after Build
  double graph_capture_s = 0;      // its warm-up runs and capture, before READY
  std::unique_ptr<ddp::Rank> ddp;  // strategy ddp only
  std::optional<std::int64_t> step_comm_ns;  // ddp serial: this step's all-reduce
  // Where the memory goes (memory_accounting.h): the runner's RSS before the model was built, the
  // expected bytes once it was, and whether the device's peak counters restarted after warm-up.
  std::int64_t rss_before_build = 0;
  ExpectedMemory expected_memory;
  bool steady_peak_window = false;
  // A cpu cell under memory_cap (the orchestrator's RLIMIT_DATA or cgroup): the BLAS library's
  // buffers are made before the model (WarmBlasBuffers).
  bool host_capped = false;
};

void Synchronize(const CellState& s) {
  if (s.feeder) {
    s.feeder->Synchronize();
  } else if (s.device.is_cuda()) {
    torch::cuda::synchronize(s.device.index());
  }
}

// One training step: the forward and the loss inside an autocast region (which clears the weight
// cast cache when it ends, so the next step sees the updated weights), backward and the
// optimizer step outside it, as torch.autocast is used from Python.
void TrainStep(CellState& s) {
  if (s.graph) {
    // The whole step replayed (CaptureTrainStep); its loss is the graph's output tensor.
    s.last_loss = s.graph->Replay().at(0);
    Synchronize(s);
    return;
  }
  s.optimizer->zero_grad();
  if (s.ddp) s.ddp->BeforeForward();
  torch::Tensor loss;
  {
    AutocastRegion region(s.device.type(), s.autocast_dtype);
    const std::vector<torch::Tensor> outputs = s.workload->Forward();
    loss = s.workload->Loss(outputs);
  }
  if (s.ddp) s.ddp->BeforeBackward(loss);
  if (s.scaler) {
    s.scaler->Scale(loss).backward();
    s.scaler->Step(*s.optimizer);
  } else {
    loss.backward();
    if (s.ddp) s.step_comm_ns = s.ddp->AfterBackward();
    s.optimizer->step();
  }
  s.last_loss = loss.detach();
  Synchronize(s);
}

void InferStep(CellState& s) {
  c10::InferenceMode inference;
  AutocastRegion region(s.device.type(), s.autocast_dtype);
  if (s.graph) {
    s.workload->PostProcess(s.graph->Replay());
  } else {
    const std::vector<torch::Tensor> outputs = s.workload->Forward();
    s.workload->PostProcess(outputs);
  }
  Synchronize(s);
}

// Eager runs of the forward on the capture's side stream before it is captured (cuda_graph.h).
constexpr int kCudaGraphWarmupRuns = 3;

// cuda_graph: the fixed batch's forward, as InferStep runs it, captured once (cuda_graph.h).
void CaptureInferForward(CellState& s) {
  const std::int64_t start_ns = MonotonicNowNs();
  s.graph = CaptureForward(s.device, kCudaGraphWarmupRuns, [&s] {
    c10::InferenceMode inference;
    AutocastRegion region(s.device.type(), s.autocast_dtype);
    return s.workload->Forward();
  });
  s.graph_capture_s = NsToSeconds(MonotonicNowNs() - start_ns);
}

// cuda_graph on a train cell: the whole step (gradients set to none, forward and loss under
// autocast, backward, the optimizer's step) captured once, as torch.cuda.graph captures a whole
// network from Python. The warm-up runs are training steps (the optimizer's state is made there);
// the capture's backward allocates the gradients from the graph's pool, and every replay writes
// them, the weights and the optimizer's state in place. The optimizer must make the same launches
// every step: SGD (no step count), or AdamW with its step count on the device (ForeachAdamW's
// capturable form, which Build picks for such cells); LibTorch's per-parameter AdamW is refused.
void CaptureTrainStep(CellState& s) {
  const auto* adamw = dynamic_cast<const ForeachAdamW*>(s.optimizer.get());
  const bool capturable = dynamic_cast<const torch::optim::SGD*>(s.optimizer.get()) != nullptr ||
                          dynamic_cast<const ForeachSgd*>(s.optimizer.get()) != nullptr ||
                          (adamw != nullptr && adamw->capturable());
  if (!capturable) {
    throw UnsupportedError(fmt::format(
        "unsupported: cuda_graph training with optimizer_impl {} and {}: its step count lives on the host, "
        "so a replayed step would repeat the captured step's bias corrections; use optimizer_impl foreach "
        "(its AdamW keeps the count on the device) or cuda_graph false",
        s.optimizer_impl, s.workload->OptimizerName()));
  }
  const std::int64_t start_ns = MonotonicNowNs();
  s.graph = CaptureForward(
      s.device, kCudaGraphWarmupRuns,
      [&s] {
        s.optimizer->zero_grad();  // LibTorch 2.x sets them to none: the capture's backward allocates them
        torch::Tensor loss;
        {
          AutocastRegion region(s.device.type(), s.autocast_dtype);
          loss = s.workload->Loss(s.workload->Forward());
        }
        loss.backward();
        s.optimizer->step();
        return std::vector<torch::Tensor>{loss.detach()};
      },
      "the training step");
  s.graph_capture_s = NsToSeconds(MonotonicNowNs() - start_ns);
}

torch::MemoryFormat ResolveMemoryFormat(const TorchCell& cell, const Workload& workload) {
  switch (cell.memory_format) {
    case MemoryFormat::kChannelsLast:
      return torch::MemoryFormat::ChannelsLast;
    case MemoryFormat::kContiguous:
      return torch::MemoryFormat::Contiguous;
    case MemoryFormat::kAuto:
      break;
  }
  return cell.device.kind == DeviceKind::kCuda && workload.is_convolutional()
             ? torch::MemoryFormat::ChannelsLast
             : torch::MemoryFormat::Contiguous;
}

// OpenBLAS (0.3.21, Debian's libblas.so.3) allocates its 128 MiB work buffer at the first matrix
// product of a thread and keeps it; when that allocation fails it tries again without end
// (blas_memory_alloc's loop), so under RLIMIT_DATA a first product at the edge of the cap spun
// until timeout_s (a ResNet-50 at base_width 4 and batch 5064 under 1 GiB, the fc layer's addmm
// after the convolutions' activations; docs/memory.md "A crash under RLIMIT_DATA"). One product
// before the model, with the cell's threads set, makes the buffers while the cap has room; the
// model's products reuse them. 256 x 256 is above OpenBLAS's small-matrix path, which takes no
// buffer. A failure here is the cell's (the caller classifies it).
void WarmBlasBuffers() {
  const torch::Tensor a = torch::ones({256, 256});
  (void)torch::mm(a, a);
}

// Builds the model, its batch and optimizer on the device with every switch set. Throws; the
// caller classifies.
void Build(CellState& s, std::uint64_t seed, int rank) {
  const TorchCell& cell = s.cell;
  s.rss_before_build = HostRssBytes();
  if (cell.threads) at::set_num_threads(*cell.threads);
  // at::set_num_threads leaves the BLAS library's own pool alone (blas_threads.h).
  s.blas = SetBlasThreads(cell.threads);
  if (s.host_capped) WarmBlasBuffers();
  s.switches = ApplyMathSwitches(cell);
  torch::manual_seed(seed);
  s.device = cell.device.kind == DeviceKind::kCuda
                 ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(cell.device.index))
                 : torch::Device(torch::kCPU);
  s.cuda_device = FindCudaDevice(cell.device);
  // An AOTInductor package's kernels are compiled at its precision and do not go through ATen's
  // dispatcher, where autocast acts: no autocast around its forward (aoti_workload.h).
  s.autocast_dtype = cell.aoti ? std::nullopt : AutocastDtype(cell.precision);
  s.workload = MakeWorkload(cell);
  s.memory_format = ResolveMemoryFormat(cell, *s.workload);
  // The model starts from `seed` on every rank; each rank of a ddp cell trains on its own batch.
  s.workload->Prepare(cell, s.device, s.memory_format, ddp::BatchSeed(seed, rank));
  if (cell.precision == Precision::kInt8) {
    if (cell.torchscript) {
      // The file's own int8 layers run as saved; the runner quantizes nothing.
      if (s.workload->QuantizedInModel().is_null()) {
        throw UnsupportedError(fmt::format(
            "unsupported: precision int8 of TorchScript model {}: it holds no quantized layers (no "
            "torch.classes.quantized packed weights, no quantized tensors); quantize it offline "
            "(scripts/quantize_cnn.py) or run it at precision fp32",
            cell.torchscript->path));
      }
    } else {
      s.workload->QuantizeDynamicInt8();
    }
  }
  s.workload->SetTraining(Trains(cell.scenario));
  s.feeder = std::make_unique<data::Feeder>(cell, *s.workload, s.device, seed);
  if (Trains(cell.scenario)) {
    s.optimizer = s.workload->MakeOptimizer(cell.lr);
    const bool foreach = cell.optimizer_impl == OptimizerImpl::kForeach ||
                         (cell.optimizer_impl == OptimizerImpl::kAuto && s.device.is_cuda());
    if (foreach) {
      auto twin = ForeachTwin(*s.optimizer, /*capturable=*/cell.cuda_graph);
      if (!twin)
        throw UnsupportedError("optimizer_impl foreach: no multi-tensor form of " +
                               s.workload->OptimizerName());
      s.optimizer = std::move(twin);
      s.optimizer_impl = "foreach";
    } else {
      s.optimizer_impl = "per_param";
    }
    if (cell.precision == Precision::kFp16) s.scaler = std::make_unique<LossScaler>(s.device);
  }
  const std::optional<WeightBytes> weights = s.workload->DeployedWeightBytes();
  s.expected_memory = ExpectMemory(s.workload->Parameters(), s.workload->Buffers(), s.workload->FeedTensors(),
                                   weights ? std::optional<std::int64_t>(weights->total) : std::nullopt,
                                   s.optimizer.get(), s.optimizer_impl == "foreach");
}

// The effective cell's cuda_graph: false, or what is replayed and how long the capture took.
nlohmann::json CudaGraphEffective(const CellState& s) {
  if (!s.cell.cuda_graph) return false;
  nlohmann::json e = {{"enabled", true}};
  if (Trains(s.cell.scenario)) {
    e["replayed"] =
        "the whole training step (gradients set to none, forward and loss under autocast, backward, "
        "the optimizer's step), captured after eager warm-up steps";
  } else {
    e["replayed"] =
        "the forward, captured after eager warm-up runs (load scenarios: one graph per batch size and "
        "stream); post-processing runs eagerly after each replay";
  }
  if (s.graph) {  // a step-loop cell's graph (a load cell's are the executor's)
    e["warmup_runs"] = kCudaGraphWarmupRuns;
    e["capture_s"] = s.graph_capture_s;
  }
  return e;
}

std::optional<double> FlopsPerSample(const CellState& s) {
  auto forward = s.workload->ForwardFlopsPerSample();
  if (!forward) return std::nullopt;
  return Trains(s.cell.scenario) ? 3.0 * *forward : *forward;
}

// What the weights are held as: fp32, with bert_base's Linear weights packed at int8, or as a
// TorchScript file saved them (its quantized layers counted).
std::string ParamDtype(const CellState& s) {
  const nlohmann::json quantized = s.workload->QuantizedInModel();
  if (!quantized.is_null()) {
    return fmt::format("as saved in the TorchScript file: {} packed quantized layers, {} quantized tensors",
                       quantized.value("packed_layers_total", std::int64_t{0}),
                       quantized.value("quantized_tensors", std::int64_t{0}));
  }
  if (s.cell.aoti)
    return "as packaged: the AOTInductor package's constants, at the precision it was compiled at";
  return s.cell.precision == Precision::kInt8 ? "float32; Linear weights qint8" : "float32";
}

nlohmann::json Effective(const CellState& s, std::uint64_t seed) {
  const TorchCell& cell = s.cell;
  nlohmann::json e = {
      {"model", s.workload->name()},
      {"scenario", ScenarioName(cell.scenario)},
      {"batch_size", cell.batch_size},
      {"samples_per_step", cell.batch_size},
      {"device", cell.device.ToString()},
      {"precision", PrecisionName(cell.precision)},
      {"param_dtype", ParamDtype(s)},
      {"autocast_dtype",
       s.autocast_dtype ? nlohmann::json(c10::toString(*s.autocast_dtype)) : nlohmann::json(nullptr)},
      {"loss_scaling", s.scaler != nullptr},
      {"memory_format",
       s.memory_format == torch::MemoryFormat::ChannelsLast ? "channels_last" : "contiguous"},
      {"memory_format_requested", MemoryFormatName(cell.memory_format)},
      {"cuda_graph", CudaGraphEffective(s)},
      {"threads", at::get_num_threads()},
      {"interop_threads", at::get_num_interop_threads()},
      {"blas", ToJson(s.blas)},
      {"deterministic", cell.deterministic},
      {"seed", seed},
      {"strategy", s.ddp ? "ddp" : "none"},
      {"world_size", s.cell.ddp ? s.cell.ddp->world_size : 1},
      {"timing", "host clock around each step; the step ends with a device synchronize"},
      {"torch_version", TorchVersion()},
      {"model_options", s.workload->EffectiveOptions()},
  };
  e.update(s.switches.ToJson());
  if (cell.aoti) {
    e["precision_source"] = fmt::format(
        "the AOTInductor package's: compiled at {} (checked against its sidecar when it has one); "
        "no autocast around the compiled forward, whose kernels bypass ATen's dispatcher",
        PrecisionName(cell.precision));
  }
  if (cell.precision == Precision::kInt8 && cell.torchscript) {
    e["quantization"] = {{"scheme", "offline: the TorchScript file's own quantized layers, run as saved"},
                         {"in_model", s.workload->QuantizedInModel()},
                         {"engine", models::QuantizedEngineName()}};
  } else if (cell.precision == Precision::kInt8) {
    e["quantization"] = {{"scheme", "dynamic"},
                         {"layers", "every Linear"},
                         {"weights", "qint8, per tensor, symmetric (max |w| / 127.5)"},
                         {"activations", "quint8, quantized per call from their range"},
                         {"engine", models::QuantizedEngineName()},
                         {"reduce_range", models::ReduceRangeOnEngine()}};
  }
  // The caching allocator's settings as this process's environment holds them (the orchestrator sets
  // them from cuda_alloc_conf before the exec; docs/memory.md): what the allocator read.
  if (const char* conf = std::getenv(config::kCudaAllocConfEnv)) e[config::kCudaAllocConfEffective] = conf;
  // The host allocator this process runs with (host_allocator; docs/memory.md "The host allocator").
  e[config::kHostAllocatorEffective] = config::DetectHostAllocator();
  if (cell.deterministic) {
    const char* ws = std::getenv("CUBLAS_WORKSPACE_CONFIG");
    e["cublas_workspace_config"] = ws != nullptr ? ws : "";
  }
  // The GPUs this cell uses, by UUID (docs/protocol.md): the monitor attributes only their samples.
  e["device_uuids"] = nlohmann::json::array();
  if (s.cuda_device) {
    e["device_name"] = s.cuda_device->name;
    e["compute_capability"] = fmt::format("{}.{}", s.cuda_device->major, s.cuda_device->minor);
    e["device_uuids"].push_back(s.cuda_device->uuid);
  }
  if (Trains(cell.scenario)) {
    e["optimizer"] = s.workload->OptimizerName();
    e["optimizer_impl"] = s.optimizer_impl;
    if (cell.lr) e["lr"] = *cell.lr;
  }
  if (auto flops = FlopsPerSample(s)) e[record::metric::kFlopsPerSample] = *flops;
  e.update(s.feeder->Effective());
  if (s.ddp) ddp::AddEffective(*s.ddp, e);
  return e;
}

// One EXTRAS metric, named and united as record/metrics.h declares it.
nlohmann::json Metric(std::string_view name, double value) {
  return {{"name", name}, {"value", value}, {"unit", record::MetricUnit(name)}};
}

nlohmann::json Extras(const CellState& s) {
  nlohmann::json metrics = nlohmann::json::array();
  nlohmann::json info = nlohmann::json::object();
  if (auto flops = FlopsPerSample(s)) {
    metrics.push_back(Metric(record::metric::kFlopsPerSample, *flops));
    info["flop_convention"] = Trains(s.cell.scenario) ? "3 x counted forward FLOPs (multiply-add = 2)"
                                                      : "counted forward FLOPs (multiply-add = 2)";
  }
  if (auto weights = s.workload->DeployedWeightBytes()) {
    metrics.push_back(Metric(record::metric::kWeightBytes, static_cast<double>(weights->total)));
    metrics.push_back(Metric(record::metric::kLinearWeightBytes, static_cast<double>(weights->linear)));
  }
  if (auto file = s.workload->ModelFileBytes())
    metrics.push_back(Metric(record::metric::kModelFileBytes, static_cast<double>(*file)));
  if (s.cuda_device) {
    info["device_name"] = s.cuda_device->name;
    if (auto peak = PeakFlopsPerS(s.cuda_device->name, s.cell.precision)) {
      metrics.push_back(Metric(record::metric::kPeakFlopsPerS, *peak));
      info["device_peak_source"] =
          "NVIDIA datasheet, dense tensor-core/FP32 peak (runners/torch/peak_flops.cc)";
    }
  }
  if (s.last_loss.defined()) {
    // JSON has no NaN/inf: a diverged loss is reported as a flag rather than a null number.
    const double loss = s.last_loss.to(torch::kCPU).to(torch::kDouble).item<double>();
    if (std::isfinite(loss))
      info["final_loss"] = loss;
    else
      info["final_loss_nonfinite"] = true;
  }
  if (s.scaler) {
    metrics.push_back(Metric(record::metric::kLossScaleFinal, s.scaler->scale()));
    metrics.push_back(
        Metric(record::metric::kSkippedOptimizerSteps, static_cast<double>(s.scaler->skipped_steps())));
  }
  s.feeder->AddExtras(metrics, info);
  return {{"metrics", metrics}, {"info", info}};
}

// Runs the measured loop in two parts with a memory snapshot between them, outside any timed
// step. The parts share the cell's ceilings: the second gets what the first left.
LoopResult RunMeasured(RunnerSession& session, const RunnerLimits& limits, CellState& s,
                       std::exception_ptr& step_error) {
  auto step = [&s, &step_error](protocol::StepRecord& record) {
    try {
      s.feeder->BeginStep(record);
      if (!s.feeder->pipeline_only()) {
        if (Trains(s.cell.scenario))
          TrainStep(s);
        else
          InferStep(s);
      }
      s.feeder->EndStep(record);
      if (s.step_comm_ns) ddp::SplitCommunication(*s.step_comm_ns, record);
    } catch (...) {
      step_error = std::current_exception();
      return false;
    }
    record.samples = static_cast<std::uint32_t>(s.cell.batch_size);
    return true;
  };
  auto loop = [&](const RunnerLimits& l) {
    return s.ddp ? ddp::RunRankStepLoop(session, l, *s.ddp, step) : protocol::RunStepLoop(session, l, step);
  };
  const std::int64_t begin_ns = MonotonicNowNs();
  RunnerLimits first = limits;
  first.max_steps = std::min(limits.max_steps, kWarmupSnapshotSteps);
  LoopResult result = loop(first);
  if (result.end != LoopEnd::kMaxSteps || result.steps >= limits.max_steps) return result;

  (void)session.SendMemory(MemorySnapshot(std::string(record::memory::kAfterWarmupLabel), s.cell.device));
  ResetPeakMemory(s.cell.device);
  s.steady_peak_window = true;
  s.feeder->MarkSteady();

  RunnerLimits rest = limits;
  rest.max_steps = limits.max_steps - result.steps;
  rest.max_time_s = limits.max_time_s - NsToSeconds(MonotonicNowNs() - begin_ns);
  // Ranks must not decide alone to skip the loop (their peers would wait in a collective): their
  // agreement after the first step ends it on max_time instead.
  if (rest.max_time_s <= 0 && s.ddp) rest.max_time_s = 1e-9;
  if (rest.max_time_s <= 0) {
    result.end = LoopEnd::kMaxTime;
    return result;
  }
  const LoopResult second = loop(rest);
  result.end = second.end;
  result.steps += second.steps;
  return result;
}

// DLBENCH_TORCH_PROFILE (step_profile.h): more of the cell's steps under the profiler, after its
// measured loop and end snapshot. A bad request or a failed profile is stated; the cell stands.
void AddStepProfile(CellState& s, int process_cell, nlohmann::json& extras) {
  const auto request = StepProfileRequestFromEnv();
  if (!request.ok()) {
    extras["info"]["step_profile_error"] = request.error().message;
    return;
  }
  if (!*request) return;
  try {
    const std::string stem = fmt::format("profile-{}-cell{}", ::getpid(), process_cell);
    extras["info"]["step_profile"] = ProfileSteps(**request, stem, s.cuda_device.has_value(), [&s] {
      if (Trains(s.cell.scenario))
        TrainStep(s);
      else
        InferStep(s);
    });
  } catch (const std::exception& e) {
    extras["info"]["step_profile_error"] = e.what();
  }
}

// A load cell's measured part (load_scenario.h): queries instead of steps, then the same reports.
int RunLoadCell(RunnerSession& session, const RunnerLimits& limits, CellState& s, LoadCell& load_cell) {
  const LoadOutcome outcome = load_cell.Run(session, limits);
  if (outcome.failure) return Report(session, *outcome.failure);
  try {
    const nlohmann::json end_memory = MemorySnapshot(std::string(record::memory::kEndLabel), s.cell.device);
    (void)session.SendMemory(end_memory);
    nlohmann::json extras = Extras(s);
    AddMemoryBreakdown(s.expected_memory, PeakFromSnapshot(end_memory, s.rss_before_build, false), extras);
    if (!outcome.info.empty()) extras["info"]["load"] = outcome.info;
    (void)session.SendExtras(extras);
  } catch (...) {
    return Report(session, ClassifyException(std::current_exception()));
  }
  return session.SendDone(outcome.reason, outcome.queries).ok() ? 0 : 1;
}

// A converge cell's training (converge.h), then the same reports as a train cell.
int RunConvergeCell(RunnerSession& session, const RunnerLimits& limits, CellState& s,
                    ConvergeCell& converge) {
  ConvergeContext context{
      s.workload.get(), s.optimizer.get(), s.device, s.memory_format, s.autocast_dtype, [&s] {
        TrainStep(s);
        return s.last_loss;
      }};
  try {
    (void)session.SendMemory(MemorySnapshot(std::string(record::memory::kAfterWarmupLabel), s.cell.device));
    const ConvergeResult result = converge.Run(session, limits, context);
    const nlohmann::json end_memory = MemorySnapshot(std::string(record::memory::kEndLabel), s.cell.device);
    (void)session.SendMemory(end_memory);
    nlohmann::json extras = Extras(s);
    // Where the memory goes, as a train cell's, with the sets kept on the device counted; the
    // peak counters were not reset, so the peak spans the whole training and its evaluations.
    s.expected_memory.dataset_bytes = converge.DatasetBytes();
    AddMemoryBreakdown(s.expected_memory, PeakFromSnapshot(end_memory, s.rss_before_build, false), extras);
    for (const auto& m : result.metrics) extras["metrics"].push_back(m);
    extras["info"]["converge"] = result.info;
    // After the end snapshot, outside every step: the trained model at each eval_precisions entry.
    // A failed evaluation is stated; the trained cell stands.
    if (!s.cell.eval_precisions.empty()) {
      try {
        const PrecisionEvalResult precisions = converge.EvaluatePrecisions(context);
        for (const auto& m : precisions.metrics) extras["metrics"].push_back(m);
        extras["info"]["precision_eval"] = precisions.info;
      } catch (const std::exception& e) {
        extras["info"]["precision_eval_error"] = e.what();
      }
    }
    (void)session.SendExtras(extras);
    return session.SendDone(result.done_reason, result.steps).ok() ? 0 : 1;
  } catch (...) {
    return Report(session, ClassifyException(std::current_exception()));
  }
}

}  // namespace

namespace {

// One cell, from its CONFIGURE to its DONE or ERROR: 0, or 1 when the orchestrator is gone.
// `device` gets the cell's device once it is known; `process_cell` (1, 2, ...) is which cell of the
// process this is, in READY's effective when CONFIGURE offered serve_more.
int ServeCell(RunnerSession& session, const protocol::CellConfig& config, int process_cell,
              std::optional<DeviceSpec>& device) {
  session.set_rank(static_cast<std::uint32_t>(config.rank));

  auto cell = ParseTorchCell(config.params);
  if (!cell.ok())
    return Report(session, {WireKind(cell.error().kind), cell.error().message, nlohmann::json::object()});
  device = cell->device;
  Capabilities caps = ProbeCapabilities(cell->device);
  caps.nccl_built = ddp::NcclCompiledIn();
  caps.aoti_built = AotiBuilt();
  const Status supported = CheckSupported(*cell, caps);
  if (!supported.ok())
    return Report(session,
                  {WireKind(supported.error().kind), supported.error().message, nlohmann::json::object()});
  // Building a model can take minutes; an orchestrator that already sent STOP or went away (a
  // probe, a cancelled run, a harness that only wanted the cell validated) does not wait for it.
  session.FlushSteps(MonotonicNowNs());
  if (session.stop_requested()) return 0;
  // A rank's place needs CONFIGURE's rendezvous, which a validation-only CONFIGURE lacks.
  if (cell->ddp) {
    const Status placed = ddp::PlaceRank(config, *cell, caps);
    if (!placed.ok())
      return Report(session,
                    {WireKind(placed.error().kind), placed.error().message, nlohmann::json::object()});
  }
  // model: allreduce measures the collective alone (ddp/allreduce_cell.h): no model is built.
  const bool allreduce_bytes_given = config.params.contains("allreduce_bytes");
  if (cell->model == ddp::kAllReduceModel) {
    if (!cell->ddp) {
      return Report(session,
                    {RunnerErrorKind::kInvalid,
                     "model allreduce measures the all-reduce of a ddp group: it needs strategy: ddp",
                     nlohmann::json::object()});
    }
    std::int64_t bytes = ddp::kDefaultAllReduceBytes;
    if (allreduce_bytes_given) {
      const nlohmann::json& given = config.params.at("allreduce_bytes");
      if (!given.is_number_integer()) {
        return Report(session, {RunnerErrorKind::kInvalid, "parameter 'allreduce_bytes' must be an integer",
                                nlohmann::json::object()});
      }
      bytes = given.get<std::int64_t>();
    }
    return ddp::RunAllReduceCell(session, config, *cell, bytes);
  }
  if (allreduce_bytes_given) {
    return Report(session,
                  {RunnerErrorKind::kInvalid, "parameter 'allreduce_bytes' applies to model allreduce only",
                   nlohmann::json::object()});
  }

  std::optional<load::EffectiveLoadSettings> load_settings;
  if (load::LoadRequested(config.params)) {
    auto resolved = load::ResolveLoadSettings(config.params, config.seed);
    if (!resolved.ok())
      return Report(session,
                    {WireKind(resolved.error().kind), resolved.error().message, nlohmann::json::object()});
    load_settings = *resolved;
    // The input pipeline feeds the step loop; a load cell's queries make their own inputs.
    if (cell->data.source != DataSource::kDevice) {
      return Report(session, {RunnerErrorKind::kUnsupported,
                              fmt::format("unsupported: data: {} feeds train and infer steps, not load "
                                          "scenarios (use data: device with a load scenario)",
                                          DataSourceName(cell->data.source)),
                              nlohmann::json::object()});
    }
  }

  // memory_cap on CUDA is the caching allocator's fraction, set before the model's first
  // allocation; on the CPU the orchestrator limited this process before CONFIGURE
  // (orchestrator/memory_cap.h).
  nlohmann::json cap_effective;
  if (cell->device.kind == DeviceKind::kCuda && config.params.contains("memory_cap") &&
      config.params["memory_cap"].is_string()) {
    if (const auto bytes = config::ParseByteSize(config.params["memory_cap"].get<std::string>())) {
      const std::optional<CudaMemoryCap> cap = CudaApplyMemoryCap(cell->device.index, *bytes);
      if (!cap) {
        return Report(session,
                      {RunnerErrorKind::kUnsupported,
                       "memory_cap: the CUDA device cannot be queried to set the allocator's fraction",
                       nlohmann::json::object()});
      }
      cap_effective = {{"mechanism", "cuda_memory_fraction"},
                       {"bytes", cap->cap_bytes},
                       {"fraction", cap->fraction},
                       {"device_total_bytes", cap->total_bytes},
                       {"outside_allocator_bytes", cap->outside_allocator_bytes}};
      if (*bytes > cap->total_bytes) cap_effective["warning"] = "memory_cap is above the device's memory";
    }
  }

  CellState state;
  state.host_capped = cell->device.kind == DeviceKind::kCpu && config.params.contains("memory_cap");
  state.cell = std::move(*cell);
  std::unique_ptr<LoadCell> load_cell;
  std::unique_ptr<ConvergeCell> converge;
  try {
    Build(state, config.seed, config.rank);
    if (state.cell.ddp) state.ddp = ddp::JoinGroup(config, state.cell, state.device, *state.workload);
    if (state.cell.scenario == Scenario::kConverge)
      converge = std::make_unique<ConvergeCell>(state.cell, *state.workload, state.device, config.seed);
    if (load_settings) {
      load_cell = MakeLoadCell(*load_settings,
                               {state.workload.get(), state.device, state.memory_format, state.autocast_dtype,
                                state.cell.cuda_graph},
                               config.seed, static_cast<std::uint32_t>(config.rank));
    } else if (state.cell.cuda_graph && Trains(state.cell.scenario)) {
      CaptureTrainStep(state);
    } else if (state.cell.cuda_graph) {
      CaptureInferForward(state);
    }
  } catch (...) {
    return Report(session, ClassifyException(std::current_exception()));
  }
  nlohmann::json effective = Effective(state, config.seed);
  if (config.serve_more) effective["process_cell"] = process_cell;
  if (load_cell) effective["load"] = load_cell->Effective();
  if (converge) effective["converge"] = converge->Effective();
  // The step loop's infer cells evaluate the fixed set after it (reference_eval.h); load cells do not.
  const bool reference_eval = !load_cell && RunsReferenceEval(state.cell);
  if (reference_eval) effective["reference_samples"] = state.cell.reference_samples;
  if (!cap_effective.is_null()) effective["memory_cap_applied"] = cap_effective;
  if (!session.SendReady(effective).ok()) return 1;
  if (load_cell) return RunLoadCell(session, config.limits, state, *load_cell);
  if (converge) return RunConvergeCell(session, config.limits, state, *converge);

  std::exception_ptr step_error;
  const LoopResult loop = RunMeasured(session, config.limits, state, step_error);
  state.feeder->MarkEnd();
  if (step_error) return Report(session, ClassifyException(step_error));
  nlohmann::json ddp_check;
  if (state.ddp) {
    try {
      auto diverged = ddp::CheckRanksAgree(*state.ddp, loop.steps, ddp_check);
      if (diverged) return Report(session, *diverged);
    } catch (...) {
      return Report(session, ClassifyException(std::current_exception()));
    }
  }

  try {
    const nlohmann::json end_memory =
        MemorySnapshot(std::string(record::memory::kEndLabel), state.cell.device);
    (void)session.SendMemory(end_memory);
    nlohmann::json extras = Extras(state);
    AddMemoryBreakdown(state.expected_memory,
                       PeakFromSnapshot(end_memory, state.rss_before_build, state.steady_peak_window),
                       extras);
    if (!ddp_check.is_null()) extras["info"]["ddp_parameter_check"] = ddp_check;
    if (!state.ddp && !state.feeder->pipeline_only()) AddStepProfile(state, process_cell, extras);
    if (reference_eval) {
      // After the end snapshot: the second model's memory is no part of the cell's figures. A
      // failed evaluation is stated; the measured cell stands.
      try {
        extras["info"]["eval"] = RunReferenceEval(state.cell, state.device, state.memory_format);
      } catch (const std::exception& e) {
        extras["info"]["eval_error"] = e.what();
      }
    }
    (void)session.SendExtras(extras);
  } catch (...) {
    return Report(session, ClassifyException(std::current_exception()));
  }
  return session.SendDone(protocol::LoopEndName(loop.end), loop.steps).ok() ? 0 : 1;
}

}  // namespace

int RunTorchCell(RunnerSession& session) {
  nlohmann::json hello = MakeHello();
  hello["multi_cell"] = true;  // serves several cells when CONFIGURE says serve_more
  if (!session.SendHello(hello).ok()) {
    LogError("dlbench-torch: could not send HELLO; the orchestrator is gone");
    return 1;
  }
  std::optional<DeviceSpec> previous_device;
  for (int served = 0;; ++served) {
    if (served > 0) session.BeginNextCell();
    auto config = session.ReceiveConfigure();
    if (!config.ok()) {
      // The end of the command pipe after a served cell is how the orchestrator ends the process.
      if (served > 0 && config.error().kind == ErrorKind::kIo) return 0;
      LogError("dlbench-torch: {}", config.error().message);
      return 1;
    }
    if (previous_device) {
      // The previous cell's model and tensors are gone (its CellState was destroyed); its peaks must
      // not be this cell's.
      (void)ResetProcessForNextCell(*previous_device);
    }
    // With serve_more the process waits for the next CONFIGURE after every cell, DONE or ERROR:
    // dlbench keeps it after a clean DONE and otherwise closes the pipe, which ends it here.
    const int code = ServeCell(session, *config, served + 1, previous_device);
    if (code != 0 || !config->serve_more) return code;
  }
}

}  // namespace dlbench::torchrunner
