#include "models/dynamic_int8.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/QEngine.h>

#include <algorithm>
#include <cctype>
#include <vector>

namespace dlbench::torchrunner::models {
namespace {

// quint8/qint8's symmetric half range, (quant_max - quant_min) / 2, as MinMaxObserver divides by.
constexpr double kSymmetricHalfRange = 127.5;
// MinMaxObserver's lower bound on the scale (torch.finfo(torch.float32).eps).
constexpr double kMinScale = 1.1920928955078125e-07;

// The registered op (an unknown name throws c10::Error). Looked up once: the dispatcher's table
// lookup takes a lock, and Forward runs per layer per step.
const c10::OperatorHandle& LinearPrepack() {
  static const c10::OperatorHandle op =
      c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_prepack", "");
  return op;
}
const c10::OperatorHandle& LinearDynamic() {
  static const c10::OperatorHandle op =
      c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_dynamic", "");
  return op;
}

c10::Stack Call(const c10::OperatorHandle& op, c10::Stack stack) {
  op.callBoxed(&stack);
  return stack;
}

}  // namespace

DynamicInt8Linear::DynamicInt8Linear(const torch::nn::Linear& linear) : reduce_range_(ReduceRangeOnEngine()) {
  torch::NoGradGuard no_grad;
  const torch::Tensor weight = linear->weight.detach().to(torch::kCPU, torch::kFloat).contiguous();
  const double amax = weight.abs().max().item<double>();
  const double scale = std::max(amax / kSymmetricHalfRange, kMinScale);
  const torch::Tensor qweight = at::quantize_per_tensor(weight, scale, 0, torch::kQInt8);
  weight_elements_ = weight.numel();
  c10::IValue bias;  // None
  if (linear->bias.defined()) {
    bias = linear->bias.detach().to(torch::kCPU, torch::kFloat).contiguous();
    bias_elements_ = linear->bias.numel();
  }
  c10::Stack out = Call(LinearPrepack(), {qweight, bias});
  packed_ = std::move(out.at(0));
}

torch::Tensor DynamicInt8Linear::Forward(const torch::Tensor& x) const {
  c10::Stack out = Call(LinearDynamic(), {x.contiguous(), packed_, reduce_range_});
  return out.at(0).toTensor();
}

void Int8Slot::Quantize(const torch::nn::Linear& linear) {
  int8_ = std::make_shared<const DynamicInt8Linear>(linear);
  torch::NoGradGuard no_grad;
  torch::nn::LinearImpl& impl = *linear.ptr();
  impl.weight.set_data(torch::empty({0}, impl.weight.options()));
  if (impl.bias.defined()) impl.bias.set_data(torch::empty({0}, impl.bias.options()));
}

std::string QuantizedEngineName() {
  std::string name = c10::toString(at::globalContext().qEngine());
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name;
}

bool ReduceRangeOnEngine() {
  const std::string engine = QuantizedEngineName();
  return engine == "fbgemm" || engine == "x86";
}

}  // namespace dlbench::torchrunner::models
