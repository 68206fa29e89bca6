// Mixed precision from C++: autocast regions and dynamic loss scaling, written once over the
// LibTorch 1.13 and 2.x APIs (docs/torch-runner.md, "Precisions").
//
// Two traps this file exists for:
//  - Autocast caches the low-precision copy of each weight. Python clears that cache when the
//    outermost `with autocast()` exits; a C++ loop that only flips the switch never does, and
//    after optimizer.step() the next forward would use stale weights. AutocastRegion mirrors the
//    Python context manager, cache clearing included.
//  - There is no GradScaler in C++. LossScaler is Python's GradScaler algorithm over the same
//    ATen kernels (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_).
#pragma once

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "cell_options.h"

namespace dlbench::torchrunner {

// The autocast dtype of a precision, or nullopt when the precision runs without autocast
// (fp32, tf32).
std::optional<torch::ScalarType> AutocastDtype(Precision precision);

// RAII autocast region for one device type, entered on construction and left on destruction the
// way Python's torch.autocast does: the previous state is restored and the cast cache is cleared
// when the outermost region ends. `dtype` nullopt makes an inactive region (no state touched).
// Autocast state is thread-local: construct it on the thread that runs the model.
class AutocastRegion {
 public:
  AutocastRegion(torch::DeviceType device_type, std::optional<torch::ScalarType> dtype);
  ~AutocastRegion();
  AutocastRegion(const AutocastRegion&) = delete;
  AutocastRegion& operator=(const AutocastRegion&) = delete;

 private:
  bool active_ = false;
  torch::DeviceType device_type_;
  bool prev_enabled_ = false;
  torch::ScalarType prev_dtype_ = torch::kFloat;
};

// Dynamic loss scaling with Python GradScaler's defaults (init 2^16, growth 2.0 every 2000
// finite steps, backoff 0.5). CUDA only (1.13 has no CPU kernels for the unscale/update ops).
class LossScaler {
 public:
  explicit LossScaler(torch::Device device);
  // loss * scale, for backward().
  torch::Tensor Scale(const torch::Tensor& loss) const;
  // Unscales the gradients of `optimizer`'s parameters in place, runs optimizer.step() unless a
  // gradient is inf/NaN, then updates the scale. Reads one flag from the device (a host sync,
  // as GradScaler.step does); returns whether the step was taken.
  bool Step(torch::optim::Optimizer& optimizer);
  double scale() const;
  std::int64_t skipped_steps() const { return skipped_steps_; }

 private:
  torch::Tensor scale_;           // float32 [1] on the device
  torch::Tensor growth_tracker_;  // int32 [1] on the device
  torch::Tensor found_inf_;       // float32 [1] on the device
  std::int64_t skipped_steps_ = 0;
};

// The process-wide math switches a cell sets before its model is built, and what they were set
// to (recorded in the effective cell).
struct MathSwitches {
  bool allow_tf32_cublas = false;
  bool allow_tf32_cudnn = false;
  bool cudnn_benchmark = false;
  int cudnn_benchmark_limit = 0;  // what the library's context holds after the cell's setting
  bool cudnn_deterministic = false;
  bool deterministic_algorithms = false;
  nlohmann::json ToJson() const;
};

// Sets TF32 (off for fp32 so fp32 is true fp32; on for tf32; PyTorch's defaults, cuBLAS off and
// cuDNN on, for bf16/fp16), cuDNN autotuning (off when deterministic) and deterministic
// algorithms. Deterministic mode also sets CUBLAS_WORKSPACE_CONFIG=:4096:8 when it is unset,
// which cuBLAS needs for reproducible results; call before any cuBLAS work.
MathSwitches ApplyMathSwitches(const TorchCell& cell);

}  // namespace dlbench::torchrunner
