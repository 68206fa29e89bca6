// Dynamic int8 Linear layers from C++, as torch.ao.quantization.quantize_dynamic makes them for
// nn.Linear: the weight quantized once (symmetric qint8, one scale per tensor: the default
// weight observer), prepacked by the quantized engine, and each forward quantizing its input on
// the fly (quantized::linear_dynamic), returning fp32. The bias stays fp32 inside the packed
// parameters. docs/torch-runner.md, "int8".
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace dlbench::torchrunner::models {

// Bytes of one per-tensor quantized weight's parameters besides its int8 data: ATen keeps the
// scale as a double and the zero point as an int64.
inline constexpr std::int64_t kPerTensorQParamBytes = 16;

class DynamicInt8Linear {
 public:
  // Quantizes `linear`'s weight (scale = max|w| / 127.5, zero point 0, range [-128, 127], as
  // MinMaxObserver(qint8, per_tensor_symmetric)) and prepacks it with the fp32 bias on the
  // current quantized engine. Throws c10::Error when the engine has no dynamic linear.
  explicit DynamicInt8Linear(const torch::nn::Linear& linear);
  // x [..., in_features] fp32 -> [..., out_features] fp32.
  torch::Tensor Forward(const torch::Tensor& x) const;

  std::int64_t weight_elements() const { return weight_elements_; }
  std::int64_t bias_elements() const { return bias_elements_; }
  // The weight as deployed: 1 byte per element plus its quantization parameters.
  std::int64_t weight_bytes() const { return weight_elements_ + kPerTensorQParamBytes; }
  // The fp32 bias kept in the packed parameters.
  std::int64_t bias_bytes() const { return bias_elements_ * 4; }

 private:
  c10::IValue packed_;
  bool reduce_range_ = false;
  std::int64_t weight_elements_ = 0;
  std::int64_t bias_elements_ = 0;
};

// One Linear layer's forward: fp32 through the layer until Quantize(), dynamic int8 after.
//
// The fp32 path calls ATen's linear, not the module's forward: LibTorch's C++ frontend
// (torch::nn::functional::linear, which LinearImpl::forward calls) computes an input of more than
// two dimensions as matmul, then `output += bias`. Under autocast the matmul is bf16/fp16 and the
// bias stays fp32, so the add is a separate mixed-dtype kernel on the whole output; ATen's linear
// (what Python's nn.Linear calls) is an autocast op that casts the bias too and, for a contiguous
// 3-D input, runs one GEMM with the bias in its epilogue. On an H100 (torch 2.11, BERT-base bs64
// seq128 bf16) the frontend's adds were 36 kernels and 2.05 ms of a 7.0 ms step
// (docs/benchmarks.md "BERT-base: where the C++ step lost its time").
class Int8Slot {
 public:
  torch::Tensor Forward(const torch::nn::Linear& linear, const torch::Tensor& x) const {
    return int8_ ? int8_->Forward(x) : torch::linear(x, linear->weight, linear->bias);
  }
  // Packs `linear`'s weight and bias, then frees its fp32 weight and bias (emptied in place, so
  // the module's parameters stay registered): the deployed model holds the packed copy only.
  void Quantize(const torch::nn::Linear& linear);
  // The packed layer, or null before Quantize().
  const DynamicInt8Linear* packed() const { return int8_.get(); }

 private:
  std::shared_ptr<const DynamicInt8Linear> int8_;
};

// The quantized engine LibTorch uses now ("onednn", "qnnpack", "fbgemm", "x86", ...).
std::string QuantizedEngineName();
// Whether linear_dynamic's activations use 7 bits on this engine: true on fbgemm and x86, whose
// AVX2 int8 dot products can saturate with 8-bit activations (PyTorch's qconfigs for them set
// reduce_range); false on onednn and qnnpack, which do not need it.
bool ReduceRangeOnEngine();

}  // namespace dlbench::torchrunner::models
