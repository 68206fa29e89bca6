// The outputs of an infer cell's model, as deployed at its precision, on a fixed evaluation set:
// what the comparison with the fp32 cell of the same model reads (docs/precisions.md).
//
// A cell's own weights come from its seed, which the plan derives from the cell key, so cells
// that differ only in precision hold different weights. The evaluation therefore builds a second
// copy of the model from fixed seeds (weights kEvalWeightsSeed, inputs kEvalInputsSeed), applies
// the cell's precision (autocast dtype, or the dynamic int8 packing) and runs one forward in
// inference mode. It runs after the measured loop and the end memory snapshot, never inside a
// timed step. Both hashes are recorded, so a comparison can check that the two cells started
// from the same fp32 weights and read the same inputs.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <nlohmann/json.hpp>

#include "cell_options.h"
#include "layer_fault.h"

namespace dlbench::torchrunner {

inline constexpr std::uint64_t kEvalWeightsSeed = 0x5eed0001;
inline constexpr std::uint64_t kEvalInputsSeed = 0x5eed0002;
// Bounds on what EXTRAS carries: the first kEvalMaxValues output values and the top-1 class of
// the first kEvalMaxRows output rows.
inline constexpr std::int64_t kEvalMaxValues = 4096;
inline constexpr std::int64_t kEvalMaxRows = 1024;
// Detection models: at most this many boxes in all, the same number per image (the first by score).
inline constexpr std::int64_t kEvalMaxDetections = 2048;

class Workload;

// Whether the cell runs the evaluation: scenario infer, a zoo model, reference_samples > 0.
bool RunsReferenceEval(const TorchCell& cell);

// Runs the evaluation of `cell` on `device` in `format` and returns EXTRAS' info.eval:
//   weights_seed, inputs_seed, samples, weights_hash and inputs_hash (FNV-1a 64 of the fp32
//   weights before any precision change and of the input tensors' bytes, hex), output_shape
//   (of the first output), rows (its elements / last dimension), top1 (argmax over the last
//   dimension per row), values (flattened, as double; a non-finite value is null), values_total,
//   cudnn_benchmark (false: the evaluation runs with cuDNN autotuning off, restored after);
//   for a detection model (its post-processing returns boxes: SSD) detections, rows [image, x1,
//   y1, x2, y2, score, class] (the first kEvalMaxDetections / samples of each image by score),
//   and detections_total;
//   with a tolerance (min_agreement, max_abs_diff, max_mean_abs_diff) set for a precision other
//   than fp32: each tolerance set, under its key; self_check (the same copy's fp32 forward against
//   the precision's first output: top1_agreement, rows, max_abs_diff, mean_abs_diff; a difference
//   that is not finite is null and exceeds any bound) and, when a figure is beyond its tolerance,
//   fault (LocateFault's JSON).
// Throws what building or running the model throws.
nlohmann::json RunReferenceEval(const TorchCell& cell, torch::Device device, torch::MemoryFormat format);

// The layer most likely at fault (layer_fault.h) of `workload`, the evaluation copy at the cell's
// precision: its stage chain against an fp32 chain (a second copy of the same seeds for int8,
// which changed the first in place; the same copy otherwise), or why_none for a model without one.
LayerFault LocateFault(const TorchCell& cell, Workload& workload, torch::Device device,
                       torch::MemoryFormat format);

// FNV-1a 64 over the bytes of `tensors` (each made contiguous on the CPU), in order, as 16 hex
// digits.
std::string HashTensors(const std::vector<torch::Tensor>& tensors);

}  // namespace dlbench::torchrunner
