#include "precision.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <cstdlib>

namespace dlbench::torchrunner {
namespace {

// The device-generic autocast API arrived in LibTorch 2.4 (pytorch#124359); 1.13 has one pair of
// functions per device type. Newer releases keep the old names only as deprecated wrappers.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool AutocastEnabled(torch::DeviceType t) { return at::autocast::is_autocast_enabled(t); }
void SetAutocastEnabled(torch::DeviceType t, bool on) { at::autocast::set_autocast_enabled(t, on); }
torch::ScalarType GetAutocastDtype(torch::DeviceType t) { return at::autocast::get_autocast_dtype(t); }
void SetAutocastDtype(torch::DeviceType t, torch::ScalarType d) { at::autocast::set_autocast_dtype(t, d); }
#else
bool AutocastEnabled(torch::DeviceType t) {
  return t == torch::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
void SetAutocastEnabled(torch::DeviceType t, bool on) {
  if (t == torch::kCUDA)
    at::autocast::set_enabled(on);
  else
    at::autocast::set_cpu_enabled(on);
}
torch::ScalarType GetAutocastDtype(torch::DeviceType t) {
  return t == torch::kCUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
void SetAutocastDtype(torch::DeviceType t, torch::ScalarType d) {
  if (t == torch::kCUDA)
    at::autocast::set_autocast_gpu_dtype(d);
  else
    at::autocast::set_autocast_cpu_dtype(d);
}
#endif

// Python GradScaler's defaults, so fp16 cells here and in the Python peer scale alike.
constexpr double kInitScale = 65536.0;
constexpr double kGrowthFactor = 2.0;
constexpr double kBackoffFactor = 0.5;
constexpr std::int64_t kGrowthInterval = 2000;

}  // namespace

std::optional<torch::ScalarType> AutocastDtype(Precision precision) {
  switch (precision) {
    case Precision::kBf16:
      return torch::kBFloat16;
    case Precision::kFp16:
      return torch::kHalf;
    case Precision::kFp32:
    case Precision::kTf32:
    case Precision::kInt8:
      return std::nullopt;
  }
  return std::nullopt;
}

AutocastRegion::AutocastRegion(torch::DeviceType device_type, std::optional<torch::ScalarType> dtype)
    : device_type_(device_type) {
  if (!dtype) return;
  active_ = true;
  prev_enabled_ = AutocastEnabled(device_type_);
  prev_dtype_ = GetAutocastDtype(device_type_);
  SetAutocastDtype(device_type_, *dtype);
  SetAutocastEnabled(device_type_, true);
  at::autocast::increment_nesting();
}

AutocastRegion::~AutocastRegion() {
  if (!active_) return;
  // As torch.autocast.__exit__: the outermost exit drops the cached weight casts, so the next
  // region casts the weights the optimizer has just updated.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  SetAutocastEnabled(device_type_, prev_enabled_);
  SetAutocastDtype(device_type_, prev_dtype_);
}

LossScaler::LossScaler(torch::Device device) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(device);
  scale_ = torch::full({1}, kInitScale, f32);
  growth_tracker_ = torch::zeros({1}, torch::TensorOptions().dtype(torch::kInt).device(device));
  found_inf_ = torch::zeros({1}, f32);
}

torch::Tensor LossScaler::Scale(const torch::Tensor& loss) const {
  return loss * scale_.to(loss.scalar_type());
}

bool LossScaler::Step(torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> grads;
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) {
      if (p.grad().defined()) grads.push_back(p.grad());
    }
  }
  found_inf_.zero_();
  // GradScaler computes the inverse in double and rounds once, so the unscaled gradients match.
  const torch::Tensor inv_scale = scale_.to(torch::kDouble).reciprocal().to(torch::kFloat);
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, inv_scale);
  const bool finite = found_inf_.item<float>() == 0.0f;
  if (finite) {
    optimizer.step();
  } else {
    ++skipped_steps_;
  }
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, kGrowthFactor, kBackoffFactor, kGrowthInterval);
  return finite;
}

double LossScaler::scale() const { return scale_.item<double>(); }

nlohmann::json MathSwitches::ToJson() const {
  return {
      {"allow_tf32_cublas", allow_tf32_cublas},     {"allow_tf32_cudnn", allow_tf32_cudnn},
      {"cudnn_benchmark", cudnn_benchmark},         {"cudnn_benchmark_limit", cudnn_benchmark_limit},
      {"cudnn_deterministic", cudnn_deterministic}, {"deterministic_algorithms", deterministic_algorithms}};
}

MathSwitches ApplyMathSwitches(const TorchCell& cell) {
  MathSwitches s;
  const bool cuda = cell.device.kind == DeviceKind::kCuda;
  const bool mixed = cell.precision == Precision::kBf16 || cell.precision == Precision::kFp16;
  s.allow_tf32_cublas = cuda && cell.precision == Precision::kTf32;
  s.allow_tf32_cudnn = cuda && (cell.precision == Precision::kTf32 || mixed);
  s.deterministic_algorithms = cell.deterministic;
  s.cudnn_deterministic = cuda && cell.deterministic;
  // Autotuning picks the fastest kernel by timing, which may differ between runs.
  s.cudnn_benchmark = cuda && cell.cudnn_benchmark && !cell.deterministic;

  auto& ctx = at::globalContext();
  // The library's limit as the process started, so that a later cell in a reused process
  // (--runner-reuse) without the key gets it back.
  static const int library_limit = ctx.benchmarkLimitCuDNN();
  ctx.setBenchmarkLimitCuDNN(cell.cudnn_benchmark_limit.value_or(library_limit));
  s.cudnn_benchmark_limit = ctx.benchmarkLimitCuDNN();
  ctx.setAllowTF32CuBLAS(s.allow_tf32_cublas);
  ctx.setAllowTF32CuDNN(s.allow_tf32_cudnn);
  ctx.setBenchmarkCuDNN(s.cudnn_benchmark);
  ctx.setDeterministicCuDNN(s.cudnn_deterministic);
  if (cell.deterministic && std::getenv("CUBLAS_WORKSPACE_CONFIG") == nullptr) {
    setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0);
  }
  ctx.setDeterministicAlgorithms(cell.deterministic, /*warn_only=*/false);
  return s;
}

}  // namespace dlbench::torchrunner
