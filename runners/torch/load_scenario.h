// Inference under load in the torch runner (docs/load.md): the system under test that src/load's
// generator drives inside this process, so no pipe sits in the timed path.
//
// The sample library is sample_library_size pre-made synthetic samples of the model's input. A
// query's samples are gathered from it into a per-stream input buffer (host pre-processing), copied
// to the device from page-locked memory (H2D), run (compute), copied back (D2H) and post-processed
// on the host (SSD's decoding and NMS); input_residency: device keeps today's device-resident
// input instead (the first samples of a pre-made device batch, a view: pure compute latency, with
// post-processing on the device as back-to-back infer does it). single_stream, multi_stream and
// offline run on the issue thread (offline in batches of batch_size); server goes through the
// dynamic batcher with one thread and one CUDA stream per `streams`.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "failure.h"
#include "load/settings.h"
#include "protocol/runner_session.h"
#include "workload.h"

namespace dlbench::torchrunner {

// What the load scenario drives, built by the runner's Build() like any cell.
struct LoadTarget {
  Workload* workload = nullptr;
  torch::Device device{torch::kCPU};
  torch::MemoryFormat memory_format = torch::MemoryFormat::Contiguous;
  std::optional<torch::ScalarType> autocast_dtype;
  bool cuda_graph = false;  // replay each batch size's forward from a CUDA graph (cuda_graph.h)
};

// How a load cell ended, for DONE (or ERROR when `failure` is set).
struct LoadOutcome {
  std::string reason;        // "stopped", "max_steps", "max_time", "too_many_outstanding", "peak_search"
  std::int64_t queries = 0;  // issued
  std::optional<Failure> failure;
  nlohmann::json info = nlohmann::json::object();  // EXTRAS info.load: the peak search's probes
};

class LoadCell {
 public:
  virtual ~LoadCell() = default;
  // The `load` object of READY's effective cell: the normalised settings, the input path and the
  // timing method.
  virtual nlohmann::json Effective() const = 0;
  // Runs the scenario until STOP or the ceilings (limits.max_steps counts queries), streaming
  // QUERIES frames on the session's output fd. With target_qps: max it runs the peak search
  // instead (docs/load.md "Peak search"): probes one after another, every record streamed, the
  // probes' windows and verdicts in `info`.
  virtual LoadOutcome Run(protocol::RunnerSession& session, const protocol::RunnerLimits& limits) = 0;
};

// Builds the sample library, the per-stream buffers and timers, and runs every batch size the
// scenario will use once (so lazy allocations and cuDNN's autotuning happen here, before READY).
// Throws what building a cell throws (the caller classifies): UnsupportedError for a workload
// without a batch dimension the library can gather along (TorchScript) or CUDA in a CPU build.
std::unique_ptr<LoadCell> MakeLoadCell(const load::EffectiveLoadSettings& settings, const LoadTarget& target,
                                       std::uint64_t seed, std::uint32_t rank);

}  // namespace dlbench::torchrunner
