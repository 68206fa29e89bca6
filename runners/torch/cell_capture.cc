// CUDA-graph capture of a step-loop cell and its effective entry (cell_capture.h).
#include "cell_capture.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "cell_options.h"
#include "common/clock.h"
#include "cuda_graph.h"
#include "failure.h"
#include "foreach_optim.h"
#include "precision.h"
#include "workload.h"

namespace dlbench::torchrunner {
namespace {

// Eager runs of the forward on the capture's side stream before it is captured (cuda_graph.h).
constexpr int kCudaGraphWarmupRuns = 3;

}  // namespace

void CaptureInferForward(CellState& s) {
  const std::int64_t start_ns = MonotonicNowNs();
  s.graph = CaptureForward(s.device, kCudaGraphWarmupRuns, [&s] {
    c10::InferenceMode inference;
    AutocastRegion region(s.device.type(), s.autocast_dtype);
    return s.workload->Forward();
  });
  s.graph_capture_s = NsToSeconds(MonotonicNowNs() - start_ns);
}

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

}  // namespace dlbench::torchrunner
