#include "foreach_optim.h"

#include <cmath>
#include <stdexcept>

namespace dlbench::torchrunner {
namespace {

std::vector<torch::optim::OptimizerParamGroup> OneGroup(std::vector<torch::Tensor> params) {
  return {torch::optim::OptimizerParamGroup(std::move(params))};
}

torch::Tensor RunClosure(const torch::optim::Optimizer::LossClosure& closure) {
  if (!closure) return {};
  at::AutoGradMode enable_grad(true);
  return closure();
}

}  // namespace

ForeachSgd::ForeachSgd(std::vector<torch::Tensor> params, const torch::optim::SGDOptions& options)
    : Optimizer(OneGroup(std::move(params)), std::make_unique<torch::optim::SGDOptions>(options)) {
  if (options.nesterov()) throw std::invalid_argument("ForeachSgd: nesterov momentum is not implemented");
}

// torch.optim._multi_tensor_sgd without nesterov/maximize: grads += wd * params; buf = grad on the
// first step, else buf = momentum * buf + (1 - dampening) * grad; params -= lr * buf.
torch::Tensor ForeachSgd::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss = RunClosure(closure);
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
    std::vector<torch::Tensor> params, grads;
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      params.push_back(p);
      grads.push_back(p.grad());
    }
    if (params.empty()) continue;
    if (o.weight_decay() != 0) grads = at::_foreach_add(grads, params, o.weight_decay());
    if (o.momentum() != 0) {
      std::vector<torch::Tensor> buffers;
      buffers.reserve(params.size());
      bool all_present = true;
      for (const auto& p : params) {
        auto it = momentum_.find(p.unsafeGetTensorImpl());
        if (it == momentum_.end()) {
          all_present = false;
          break;
        }
        buffers.push_back(it->second);
      }
      if (all_present) {
        at::_foreach_mul_(buffers, o.momentum());
        at::_foreach_add_(buffers, grads, 1 - o.dampening());
      } else {
        buffers.clear();
        for (std::size_t i = 0; i < params.size(); ++i) {
          auto [it, inserted] = momentum_.try_emplace(params[i].unsafeGetTensorImpl());
          if (inserted)
            it->second = grads[i].clone().detach();
          else
            it->second.mul_(o.momentum()).add_(grads[i], 1 - o.dampening());
          buffers.push_back(it->second);
        }
      }
      grads = std::move(buffers);
    }
    at::_foreach_add_(params, grads, -o.lr());
  }
  return loss;
}

ForeachAdamW::ForeachAdamW(std::vector<torch::Tensor> params, const torch::optim::AdamWOptions& options,
                           bool capturable)
    : Optimizer(OneGroup(std::move(params)), std::make_unique<torch::optim::AdamWOptions>(options)),
      capturable_(capturable) {
  if (options.amsgrad()) throw std::invalid_argument("ForeachAdamW: amsgrad is not implemented");
}

// torch.optim._multi_tensor_adamw without amsgrad/maximize/capturable: params *= 1 - lr * wd;
// m = lerp(m, g, 1 - beta1); v = beta2 * v + (1 - beta2) g^2; params -= lr / (1 - beta1^t) * m /
// (sqrt(v) / sqrt(1 - beta2^t) + eps). Capturable: t is the group's device tensor, and the last
// two lines are _multi_tensor_adamw's capturable form: denom = (sqrt(v) / sqrt(1 - beta2^t) + eps)
// / step_size with step_size = -lr / (1 - beta1^t), then params += m / denom.
torch::Tensor ForeachAdamW::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss = RunClosure(closure);
  if (device_steps_.size() < param_groups().size()) device_steps_.resize(param_groups().size());
  std::size_t group_index = 0;
  for (auto& group : param_groups()) {
    torch::Tensor& device_step = device_steps_[group_index++];
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    const double beta1 = std::get<0>(o.betas());
    const double beta2 = std::get<1>(o.betas());
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
    std::vector<at::Scalar> step_sizes, bias_correction2_sqrts;
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      State& s = state_[p.unsafeGetTensorImpl()];
      if (!s.exp_avg.defined()) {
        s.exp_avg = torch::zeros_like(p, torch::MemoryFormat::Preserve);
        s.exp_avg_sq = torch::zeros_like(p, torch::MemoryFormat::Preserve);
      }
      s.step += 1;
      const double t = static_cast<double>(s.step);
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(s.exp_avg);
      exp_avg_sqs.push_back(s.exp_avg_sq);
      step_sizes.emplace_back(-(o.lr() / (1 - std::pow(beta1, t))));
      bias_correction2_sqrts.emplace_back(std::sqrt(1 - std::pow(beta2, t)));
    }
    if (params.empty()) continue;
    torch::Tensor step_size, bias_correction2_sqrt;  // capturable: on the device, 0-dim
    if (capturable_) {
      if (!device_step.defined()) device_step = torch::zeros({}, params[0].options().dtype(torch::kFloat));
      device_step.add_(1);
      step_size = (1 - at::pow(beta1, device_step)).reciprocal_().mul_(-o.lr());
      bias_correction2_sqrt = (1 - at::pow(beta2, device_step)).sqrt_();
    }
    if (o.weight_decay() != 0) at::_foreach_mul_(params, 1 - o.lr() * o.weight_decay());
#if TORCH_VERSION_MAJOR >= 2
    at::_foreach_lerp_(exp_avgs, grads, 1 - beta1);
#else
    at::_foreach_mul_(exp_avgs, beta1);
    at::_foreach_add_(exp_avgs, grads, 1 - beta1);
#endif
    at::_foreach_mul_(exp_avg_sqs, beta2);
    at::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2);
    std::vector<torch::Tensor> denom = at::_foreach_sqrt(exp_avg_sqs);
    if (capturable_) {
      at::_foreach_div_(denom, std::vector<torch::Tensor>(denom.size(), bias_correction2_sqrt));
      at::_foreach_add_(denom, o.eps());
      at::_foreach_div_(denom, std::vector<torch::Tensor>(denom.size(), step_size));
      at::_foreach_addcdiv_(params, exp_avgs, denom);
      continue;
    }
    at::_foreach_div_(denom, bias_correction2_sqrts);
    at::_foreach_add_(denom, o.eps());
    at::_foreach_addcdiv_(params, exp_avgs, denom, step_sizes);
  }
  return loss;
}

std::unique_ptr<torch::optim::Optimizer> ForeachTwin(torch::optim::Optimizer& optimizer, bool capturable) {
  std::vector<torch::Tensor> params;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) params.push_back(p);
  }
  if (const auto* sgd = dynamic_cast<const torch::optim::SGD*>(&optimizer)) {
    const auto& o = static_cast<const torch::optim::SGDOptions&>(sgd->param_groups().at(0).options());
    return std::make_unique<ForeachSgd>(std::move(params), o);
  }
  if (const auto* adamw = dynamic_cast<const torch::optim::AdamW*>(&optimizer)) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(adamw->param_groups().at(0).options());
    return std::make_unique<ForeachAdamW>(std::move(params), o, capturable);
  }
  return nullptr;
}

}  // namespace dlbench::torchrunner
