// The multi-tensor optimizers must make the same updates as LibTorch's per-parameter SGD and
// AdamW: same parameters, same gradients, three steps, parameters equal to float rounding.
#include "foreach_optim.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>

namespace dlbench::torchrunner {
namespace {

// A small network whose parameters (weights and biases of three shapes) all get gradients.
torch::nn::Sequential Net() {
  torch::manual_seed(3);
  return torch::nn::Sequential(torch::nn::Linear(6, 5), torch::nn::Tanh(), torch::nn::Linear(5, 3));
}

// Runs `steps` optimizer steps on a fixed batch and returns the parameters after them.
std::vector<torch::Tensor> Train(
    const std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor>)>& make,
    int steps) {
  torch::nn::Sequential net = Net();
  auto optimizer = make(net->parameters());
  torch::manual_seed(5);
  const torch::Tensor x = torch::randn({8, 6});
  const torch::Tensor y = torch::randn({8, 3});
  for (int i = 0; i < steps; ++i) {
    optimizer->zero_grad();
    torch::mse_loss(net->forward(x), y).backward();
    optimizer->step();
  }
  std::vector<torch::Tensor> out;
  for (const auto& p : net->parameters()) out.push_back(p.detach().clone());
  return out;
}

void ExpectSame(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b,
                const std::vector<torch::Tensor>& start) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-5, 1e-6)) << "parameter " << i << "\n" << a[i] << "\n" << b[i];
    EXPECT_FALSE(torch::allclose(a[i], start[i])) << "parameter " << i << " did not move";
  }
}

TEST(ForeachOptim, SgdWithMomentumAndWeightDecayMatchesLibTorch) {
  const auto options = torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-2);
  const auto start = Train(
      [](std::vector<torch::Tensor> p) {
        return std::make_unique<torch::optim::SGD>(p, torch::optim::SGDOptions(0.0));
      },
      0);
  const auto reference =
      Train([&](std::vector<torch::Tensor> p) { return std::make_unique<torch::optim::SGD>(p, options); }, 3);
  const auto foreach =
      Train([&](std::vector<torch::Tensor> p) { return std::make_unique<ForeachSgd>(p, options); }, 3);
  ExpectSame(foreach, reference, start);
}

TEST(ForeachOptim, SgdWithoutMomentumMatchesLibTorch) {
  const auto options = torch::optim::SGDOptions(0.05);
  const auto start = Train(
      [](std::vector<torch::Tensor> p) {
        return std::make_unique<torch::optim::SGD>(p, torch::optim::SGDOptions(0.0));
      },
      0);
  ExpectSame(
      Train([&](std::vector<torch::Tensor> p) { return std::make_unique<ForeachSgd>(p, options); }, 3),
      Train([&](std::vector<torch::Tensor> p) { return std::make_unique<torch::optim::SGD>(p, options); }, 3),
      start);
}

TEST(ForeachOptim, AdamWMatchesLibTorch) {
  const auto options = torch::optim::AdamWOptions(1e-2).weight_decay(0.05);
  const auto start = Train(
      [](std::vector<torch::Tensor> p) {
        return std::make_unique<torch::optim::SGD>(p, torch::optim::SGDOptions(0.0));
      },
      0);
  ExpectSame(
      Train([&](std::vector<torch::Tensor> p) { return std::make_unique<ForeachAdamW>(p, options); }, 3),
      Train([&](std::vector<torch::Tensor> p) { return std::make_unique<torch::optim::AdamW>(p, options); },
            3),
      start);
}

// The capturable form (device step count, cuda_graph training) makes the same updates.
TEST(ForeachOptim, CapturableAdamWMatchesLibTorch) {
  const auto options = torch::optim::AdamWOptions(1e-2).weight_decay(0.05);
  const auto start = Train(
      [](const std::vector<torch::Tensor>& p) {
        return std::make_unique<torch::optim::SGD>(p, torch::optim::SGDOptions(0.0));
      },
      0);
  ExpectSame(Train(
                 [&](const std::vector<torch::Tensor>& p) {
                   return std::make_unique<ForeachAdamW>(p, options, true);
                 },
                 4),
             Train(
                 [&](const std::vector<torch::Tensor>& p) {
                   return std::make_unique<torch::optim::AdamW>(p, options);
                 },
                 4),
             start);
}

TEST(ForeachOptim, TwinKeepsParametersAndOptionsAndRefusesOthers) {
  torch::nn::Sequential net = Net();
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(0.3).momentum(0.8));
  auto twin = ForeachTwin(sgd);
  ASSERT_NE(dynamic_cast<ForeachSgd*>(twin.get()), nullptr);
  EXPECT_EQ(twin->param_groups().at(0).params().size(), net->parameters().size());
  EXPECT_DOUBLE_EQ(static_cast<torch::optim::SGDOptions&>(twin->param_groups().at(0).options()).momentum(),
                   0.8);
  torch::optim::AdamW adamw(net->parameters(), torch::optim::AdamWOptions(1e-3));
  EXPECT_NE(dynamic_cast<ForeachAdamW*>(ForeachTwin(adamw).get()), nullptr);
  EXPECT_FALSE(dynamic_cast<ForeachAdamW&>(*ForeachTwin(adamw)).capturable());
  EXPECT_TRUE(dynamic_cast<ForeachAdamW&>(*ForeachTwin(adamw, true)).capturable());
  torch::optim::Adagrad adagrad(net->parameters(), torch::optim::AdagradOptions(0.1));
  EXPECT_EQ(ForeachTwin(adagrad), nullptr);
  EXPECT_THROW(ForeachSgd(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true)),
               std::invalid_argument);
}

}  // namespace
}  // namespace dlbench::torchrunner
