// Static int8 convolutions from C++, as PyTorch's eager-mode post-training quantization makes them
// (torch.ao.quantization prepare / calibrate / convert): the activation ranges observed on
// calibration data (MinMaxObserver, quint8, per tensor, affine), the weights quantized once per
// output channel (symmetric qint8, PerChannelMinMaxObserver's scale max |w_c| / 127.5) and prepacked
// by quantized::conv2d_prepack, and each forward a quantized::conv2d_relu from a quint8 input to a
// quint8 output at the calibrated scale. A BatchNorm after the convolution is folded into its
// weight and bias first (eval-mode statistics), as fuse_modules does. docs/precisions.md.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace dlbench::torchrunner::models {

// A per-tensor affine quantization: real = scale x (q - zero_point).
struct QuantParams {
  double scale = 1.0;
  std::int64_t zero_point = 0;
};

// The range of the values observed so far, as MinMaxObserver keeps it.
class MinMaxRange {
 public:
  void Observe(const torch::Tensor& t);
  bool empty() const { return !seen_; }
  double min() const { return min_; }
  double max() const { return max_; }
  // quint8 affine parameters for the range, as torch's _calculate_qparams computes them: the range
  // widened to hold 0, scale = (max - min) / (quant_max - quant_min) (at least float32's epsilon),
  // zero_point = quant_min - round(min / scale) clamped to [quant_min, quant_max]; quant_max is 255,
  // or 127 with reduce_range. An empty range gives scale 1, zero point 0.
  QuantParams AffineQuint8(bool reduce_range) const;

 private:
  bool seen_ = false;
  double min_ = 0.0, max_ = 0.0;
};

// A convolution's weight and bias with a following BatchNorm folded in (eval mode: running
// statistics): w' = w x gamma / sqrt(var + eps) per output channel, b' = (b - mean) x gamma /
// sqrt(var + eps) + beta. `bias` may be undefined (taken as zero).
std::pair<torch::Tensor, torch::Tensor> FoldBatchNorm(const torch::Tensor& weight, const torch::Tensor& bias,
                                                      const torch::nn::BatchNorm2d& bn);

// One convolution + ReLU in static int8, groups 1, dilation 1.
class StaticInt8ConvRelu {
 public:
  // Quantizes `weight` [out, in, kh, kw] per output channel (qint8, symmetric) and prepacks it with
  // the fp32 `bias` on the current quantized engine; the output is requantized to `output`.
  // Throws c10::Error when the engine has no quantized convolution.
  StaticInt8ConvRelu(const torch::Tensor& weight, const torch::Tensor& bias, std::int64_t stride,
                     std::int64_t padding, QuantParams output);
  // quint8 [N, in, H, W] -> quint8 [N, out, H', W'] at the output's parameters.
  torch::Tensor Forward(const torch::Tensor& qx) const;

  std::int64_t weight_elements() const { return weight_elements_; }
  std::int64_t out_channels() const { return out_channels_; }
  // The weight as deployed: 1 byte per element plus a double scale and an int64 zero point per
  // output channel; the fp32 bias at 4 bytes per element.
  std::int64_t weight_bytes() const;
  std::int64_t bias_bytes() const { return out_channels_ * 4; }

 private:
  c10::IValue packed_;
  QuantParams output_;
  std::int64_t weight_elements_ = 0;
  std::int64_t out_channels_ = 0;
};

// quint8 quantization of an fp32 activation at `params`.
torch::Tensor QuantizeActivation(const torch::Tensor& x, QuantParams params);

}  // namespace dlbench::torchrunner::models
