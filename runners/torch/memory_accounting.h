// Where a cell's memory goes (docs/memory.md "Where the memory goes"): the bytes a training or
// inference step must hold whatever the batch's activations, computed from the model's tensors and
// its optimizer, set against the measured peak; what the peak holds beyond them is attributed to
// activations and workspaces.
//
// Expected (from the tensors, exact for what they count):
//   weights          every parameter and buffer at its dtype (packed int8 layers as packed); under
//                    autocast the parameters stay fp32 (the master weights), so they count at 4
//                    bytes each, and the per-step low-precision copies are activations/workspaces;
//   gradients        train: one per trainable parameter, at the parameter's dtype;
//   optimizer state  train: SGD with momentum one buffer per trainable parameter (none without
//                    momentum); AdamW (and Adam) two (three with amsgrad), plus one int64 step
//                    counter per parameter tensor on the host (LibTorch keeps the step as a C++
//                    integer, not a tensor as torch.optim does); the same for the foreach twins;
//   input batch      the fixed batch every step reads (inputs and target);
//   dataset          scenario: converge: the training and held-out sets the cell keeps in memory
//                    on its device (converge.h), which its steps' batches are gathered from.
// The optimizer step's own temporaries are stated apart (not resident): the foreach forms make
// one temporary per parameter at once (SGD with weight decay: the decayed gradients; AdamW: the
// denominators), the per-parameter loop one parameter's worth at a time (two for AdamW).
//
// Measured peak: on CUDA the caching allocator's peak allocated bytes (the "end" snapshot's, whose
// window starts after the warm-up snapshot when the cell ran past it), and reserved - allocated at
// the peaks as the allocator's fragmentation; on the CPU LibTorch keeps no allocator statistics,
// so the peak is the process's peak RSS above its RSS just before the model was built, which also
// counts library code first touched by the steps, thread stacks and the math libraries' scratch.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace dlbench::torchrunner {

// What the optimizer keeps per parameter, read from its options (LibTorch's SGD and AdamW and the
// foreach twins of foreach_optim.h share their option types).
struct OptimizerMemoryRule {
  bool known = false;           // false: an optimizer of another kind; its state is not counted
  int buffers_per_param = 0;    // tensors shaped like each trainable parameter
  bool step_counters = false;   // one int64 per parameter tensor, on the host
  bool decays_weights = false;  // SGD's weight decay makes a temporary of the gradients
  bool adam = false;            // the denominators of the Adam family are a temporary
  std::string text;             // "SGD with momentum: 1 buffer per parameter"
};
OptimizerMemoryRule OptimizerRule(const torch::optim::Optimizer& optimizer);

struct ExpectedMemory {
  std::int64_t weight_bytes = 0;
  std::int64_t gradient_bytes = 0;
  std::int64_t optimizer_state_bytes = 0;
  std::int64_t input_bytes = 0;
  std::int64_t dataset_bytes = 0;                   // converge: ConvergeCell::DatasetBytes
  std::int64_t optimizer_step_counters = 0;         // host int64s, not in optimizer_state_bytes
  std::int64_t optimizer_step_temporary_bytes = 0;  // the most the step allocates at once
  bool optimizer_known = true;                      // false: optimizer_state_bytes is not known
  std::string optimizer_rule;                       // OptimizerMemoryRule::text, "" for inference
  // weights + gradients + optimizer state + input batch + dataset.
  std::int64_t resident_bytes() const {
    return weight_bytes + gradient_bytes + optimizer_state_bytes + input_bytes + dataset_bytes;
  }
};

// The expected bytes of a cell. `parameters` and `buffers` are the model's (Workload::Parameters
// and Buffers); `deployed_weight_bytes`, when given, replaces their sum (a dynamic int8 model's
// packed weights are not its parameters); `feed` the fixed batch (Workload::FeedTensors);
// `optimizer` null for inference; `foreach` whether the optimizer runs as multi-tensor kernels.
// Tensors sharing storage count once.
ExpectedMemory ExpectMemory(const std::vector<torch::Tensor>& parameters,
                            const std::vector<torch::Tensor>& buffers, const std::vector<torch::Tensor>& feed,
                            std::optional<std::int64_t> deployed_weight_bytes,
                            const torch::optim::Optimizer* optimizer, bool foreach);

// The measured side, from the "end" MEMORY snapshot (device_info.h's MemorySnapshot body).
// `rss_before_build` is the runner's RSS just before the model was built (CPU cells);
// `steady_window` whether the device's peak counters were reset after the warm-up snapshot.
struct MeasuredPeak {
  std::int64_t bytes = 0;
  std::string source;                          // what `bytes` is, for extras.info.memory
  std::optional<std::int64_t> reserved_bytes;  // CUDA: the allocator's reserved peak
};
std::optional<MeasuredPeak> PeakFromSnapshot(const nlohmann::json& end_snapshot,
                                             std::int64_t rss_before_build, bool steady_window);

// Appends the breakdown to an EXTRAS body ({"metrics": [...], "info": {...}}): the metrics
// grad_bytes, optimizer_state_bytes (train), input_batch_bytes, dataset_bytes (when not 0),
// expected_resident_bytes,
// memory_peak_bytes, activation_workspace_bytes (the peak less the resident bytes, when not
// negative) and allocator_fragmentation_bytes (CUDA), and info.memory with the rules and sources.
// weight_bytes is the runner's own metric already (Extras in cell_report.cc).
void AddMemoryBreakdown(const ExpectedMemory& expected, const std::optional<MeasuredPeak>& peak,
                        nlohmann::json& extras);

}  // namespace dlbench::torchrunner
