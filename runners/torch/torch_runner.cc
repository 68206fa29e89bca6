// The torch runner's cell, from CONFIGURE to DONE or ERROR (torch_runner.h): the checks, the
// measured step loop (or a load or converge cell's part), the memory snapshots and the reports.
// CellState and Build are in cell_state.h, the CUDA-graph capture in cell_capture.h, READY's
// effective cell and EXTRAS in cell_report.h.
#include "torch_runner.h"

#include <fmt/format.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <optional>

#include "aoti_workload.h"
#include "cell_capture.h"
#include "cell_options.h"
#include "cell_report.h"
#include "cell_state.h"
#include "common/clock.h"
#include "common/log.h"
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
#include "load/settings.h"
#include "load_scenario.h"
#include "memory_accounting.h"
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
      // The end of the command pipe before CONFIGURE is how the orchestrator probes a runner's
      // HELLO (docs/protocol.md: the runner exits 0 without error), and after a served cell how it
      // ends the process.
      if (config.error().kind == ErrorKind::kIo) return 0;
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
