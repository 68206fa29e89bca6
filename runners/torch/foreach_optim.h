// Multi-tensor ("foreach") SGD and AdamW: the update rules of LibTorch's torch::optim::SGD and
// AdamW, written as torch.optim's _multi_tensor_sgd / _multi_tensor_adamw write them, one
// _foreach_* kernel launch per operation over all parameters instead of several launches per
// parameter. torch.optim uses this form by default when every parameter is a CUDA tensor
// (foreach=None), so this is what "the same training step as PyTorch eager" means on a GPU; at
// small batches, where the host's kernel launches bound the step, LibTorch's per-parameter loop
// costs BERT-Base about a quarter of its speed (docs/benchmarks.md). On the CPU torch.optim keeps
// the per-parameter loop, and so does dlbench-torch (optimizer_impl: auto).
#pragma once

#include <torch/torch.h>
#include <torch/version.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace dlbench::torchrunner {

class ForeachSgd : public torch::optim::Optimizer {
 public:
  // Nesterov momentum is refused (std::invalid_argument): no model here uses it.
  ForeachSgd(std::vector<torch::Tensor> params, const torch::optim::SGDOptions& options);
  torch::Tensor step(LossClosure closure = nullptr) override;

 private:
  std::unordered_map<const void*, torch::Tensor> momentum_;  // by parameter (TensorImpl*)
};

class ForeachAdamW : public torch::optim::Optimizer {
 public:
  // amsgrad is refused (std::invalid_argument): no model here uses it. `capturable` (torch.optim's
  // capturable=True): the step count is a tensor on the parameters' device and the bias
  // corrections are computed there, so a step launches the same kernels with the same arguments
  // every time and can be captured into a CUDA graph and replayed (cuda_graph: true training);
  // otherwise the count is the host's and the corrections are scalars baked into the launches.
  ForeachAdamW(std::vector<torch::Tensor> params, const torch::optim::AdamWOptions& options,
               bool capturable = false);
  torch::Tensor step(LossClosure closure = nullptr) override;
  bool capturable() const { return capturable_; }

 private:
  struct State {
    torch::Tensor exp_avg;
    torch::Tensor exp_avg_sq;
    std::int64_t step = 0;
  };
  std::unordered_map<const void*, State> state_;  // by parameter (TensorImpl*)
  bool capturable_ = false;
  std::vector<torch::Tensor> device_steps_;  // capturable: each group's step count (float32, 0-dim)
};

// The foreach twin of a LibTorch SGD or AdamW (same parameters and options, fresh state), or
// nullptr for any other optimizer. `capturable`: an AdamW twin keeps its step on the device
// (ForeachSgd needs nothing: its updates use no step count).
std::unique_ptr<torch::optim::Optimizer> ForeachTwin(torch::optim::Optimizer& optimizer,
                                                     bool capturable = false);

}  // namespace dlbench::torchrunner
