#include "models/static_int8.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <cmath>

namespace dlbench::torchrunner::models {
namespace {

// torch.finfo(torch.float32).eps: the observers' lower bound on a scale.
constexpr double kMinScale = 1.1920928955078125e-07;
// qint8's symmetric half range, (127 - (-128)) / 2, as the symmetric observers divide by.
constexpr double kSymmetricHalfRange = 127.5;
constexpr std::int64_t kQuint8Max = 255;
constexpr std::int64_t kQuint8ReducedMax = 127;

const c10::OperatorHandle& Conv2dPrepack() {
  static const c10::OperatorHandle op =
      c10::Dispatcher::singleton().findSchemaOrThrow("quantized::conv2d_prepack", "");
  return op;
}
// conv2d_relu.new: (qx, packed, output_scale, output_zero_point); the packed weight carries the
// stride, padding, dilation and groups.
const c10::OperatorHandle& Conv2dRelu() {
  static const c10::OperatorHandle op =
      c10::Dispatcher::singleton().findSchemaOrThrow("quantized::conv2d_relu", "new");
  return op;
}

}  // namespace

void MinMaxRange::Observe(const torch::Tensor& t) {
  if (t.numel() == 0) return;
  const auto [lo, hi] = torch::aminmax(t.detach());
  const double a = lo.item<double>(), b = hi.item<double>();
  min_ = seen_ ? std::min(min_, a) : a;
  max_ = seen_ ? std::max(max_, b) : b;
  seen_ = true;
}

QuantParams MinMaxRange::AffineQuint8(bool reduce_range) const {
  if (!seen_) return {};
  const std::int64_t quant_max = reduce_range ? kQuint8ReducedMax : kQuint8Max;
  const double lo = std::min(min_, 0.0), hi = std::max(max_, 0.0);
  QuantParams p;
  p.scale = std::max((hi - lo) / static_cast<double>(quant_max), kMinScale);
  // std::nearbyint rounds half to even under the default rounding mode, as torch.round does.
  const auto zero = static_cast<std::int64_t>(-std::nearbyint(lo / p.scale));
  p.zero_point = std::clamp<std::int64_t>(zero, 0, quant_max);
  return p;
}

std::pair<torch::Tensor, torch::Tensor> FoldBatchNorm(const torch::Tensor& weight, const torch::Tensor& bias,
                                                      const torch::nn::BatchNorm2d& bn) {
  torch::NoGradGuard no_grad;
  const torch::nn::BatchNorm2dImpl& b = *bn;
  const torch::Tensor inv_std = torch::rsqrt(b.running_var + b.options.eps());
  const torch::Tensor gamma = b.options.affine() ? b.weight : torch::ones_like(b.running_var);
  const torch::Tensor beta = b.options.affine() ? b.bias : torch::zeros_like(b.running_var);
  const torch::Tensor factor = gamma * inv_std;
  const torch::Tensor folded_weight = weight * factor.reshape({-1, 1, 1, 1});
  const torch::Tensor base = bias.defined() ? bias : torch::zeros_like(b.running_mean);
  const torch::Tensor folded_bias = (base - b.running_mean) * factor + beta;
  return {folded_weight, folded_bias};
}

StaticInt8ConvRelu::StaticInt8ConvRelu(const torch::Tensor& weight, const torch::Tensor& bias,
                                       std::int64_t stride, std::int64_t padding, QuantParams output)
    : output_(output) {
  torch::NoGradGuard no_grad;
  const torch::Tensor w = weight.detach().to(torch::kCPU, torch::kFloat).contiguous();
  out_channels_ = w.size(0);
  weight_elements_ = w.numel();
  const torch::Tensor amax = w.abs().amax({1, 2, 3}).to(torch::kDouble);
  const torch::Tensor scales = torch::clamp_min(amax / kSymmetricHalfRange, kMinScale);
  const torch::Tensor zero_points = torch::zeros({out_channels_}, torch::kLong);
  const torch::Tensor qweight = at::quantize_per_channel(w, scales, zero_points, 0, torch::kQInt8);
  c10::IValue b;  // None
  if (bias.defined()) b = bias.detach().to(torch::kCPU, torch::kFloat).contiguous();
  const std::vector<std::int64_t> strides = {stride, stride}, paddings = {padding, padding},
                                  dilation = {1, 1};
  c10::Stack stack = {qweight, b, strides, paddings, dilation, std::int64_t{1}};
  Conv2dPrepack().callBoxed(&stack);
  packed_ = std::move(stack.at(0));
}

torch::Tensor StaticInt8ConvRelu::Forward(const torch::Tensor& qx) const {
  c10::Stack stack = {qx, packed_, output_.scale, output_.zero_point};
  Conv2dRelu().callBoxed(&stack);
  return stack.at(0).toTensor();
}

std::int64_t StaticInt8ConvRelu::weight_bytes() const {
  // Per channel: a double scale and an int64 zero point (ATen's per-channel quantizer's tensors).
  return weight_elements_ + out_channels_ * 16;
}

torch::Tensor QuantizeActivation(const torch::Tensor& x, QuantParams params) {
  return at::quantize_per_tensor(x.contiguous(), params.scale, params.zero_point, torch::kQUInt8);
}

}  // namespace dlbench::torchrunner::models
