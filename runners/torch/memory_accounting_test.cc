// Where the memory goes (memory_accounting.h) on tiny modules whose bytes are counted by hand:
// Linear(6, 5) and Linear(5, 3) hold 6x5 + 5 + 5x3 + 3 = 53 fp32 parameters, 212 bytes, the largest
// tensor 30 floats (120 bytes).
#include "memory_accounting.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "foreach_optim.h"
#include "record/metrics.h"

namespace dlbench::torchrunner {
namespace {

constexpr std::int64_t kParamBytes = 212;    // 53 floats
constexpr std::int64_t kLargestBytes = 120;  // the 5 x 6 weight

torch::nn::Sequential Net() {
  return torch::nn::Sequential(torch::nn::Linear(6, 5), torch::nn::Tanh(), torch::nn::Linear(5, 3));
}

// The fixed batch: a [2, 6] float input (48 bytes) and a [2] int64 target (16 bytes).
std::vector<torch::Tensor> Feed() { return {torch::zeros({2, 6}), torch::zeros({2}, torch::kLong)}; }

double MetricOf(const nlohmann::json& extras, std::string_view name) {
  for (const auto& m : extras.at("metrics")) {
    if (m.at("name") == name) return m.at("value").get<double>();
  }
  ADD_FAILURE() << "no metric " << name << " in " << extras.dump();
  return -1;
}

bool HasMetricNamed(const nlohmann::json& extras, std::string_view name) {
  for (const auto& m : extras.at("metrics")) {
    if (m.at("name") == name) return true;
  }
  return false;
}

TEST(MemoryAccounting, SgdWithMomentumHoldsOneBufferPerParameter) {
  torch::nn::Sequential net = Net();
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-4));
  const ExpectedMemory per_param =
      ExpectMemory(net->parameters(), net->buffers(), Feed(), std::nullopt, &sgd, false);
  EXPECT_EQ(per_param.weight_bytes, kParamBytes);
  EXPECT_EQ(per_param.gradient_bytes, kParamBytes);
  EXPECT_EQ(per_param.optimizer_state_bytes, kParamBytes);
  EXPECT_EQ(per_param.input_bytes, 48 + 16);
  EXPECT_EQ(per_param.resident_bytes(), 3 * kParamBytes + 64);
  EXPECT_EQ(per_param.optimizer_step_counters, 0);
  // Weight decay: the per-parameter loop adds it into one new tensor at a time, foreach into all.
  EXPECT_EQ(per_param.optimizer_step_temporary_bytes, kLargestBytes);
  ForeachSgd foreach (net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-4));
  const ExpectedMemory fused =
      ExpectMemory(net->parameters(), net->buffers(), Feed(), std::nullopt, &foreach, true);
  EXPECT_EQ(fused.optimizer_state_bytes, kParamBytes);
  EXPECT_EQ(fused.optimizer_step_temporary_bytes, kParamBytes);
  EXPECT_NE(fused.optimizer_rule.find("(foreach)"), std::string::npos) << fused.optimizer_rule;

  // The count is what the optimizer really keeps: LibTorch's SGD after one step.
  sgd.zero_grad();
  net->forward(torch::ones({2, 6})).sum().backward();
  sgd.step();
  std::int64_t held = 0;
  for (const auto& [key, state] : sgd.state()) {
    const auto& buffer = static_cast<const torch::optim::SGDParamState&>(*state).momentum_buffer();
    held += buffer.numel() * static_cast<std::int64_t>(buffer.element_size());
  }
  EXPECT_EQ(held, per_param.optimizer_state_bytes);

  torch::optim::SGD plain(net->parameters(), torch::optim::SGDOptions(0.1));
  const ExpectedMemory none =
      ExpectMemory(net->parameters(), net->buffers(), Feed(), std::nullopt, &plain, false);
  EXPECT_EQ(none.optimizer_state_bytes, 0);
  EXPECT_EQ(none.optimizer_step_temporary_bytes, 0);
}

TEST(MemoryAccounting, AdamWHoldsTwoBuffersAndAStepPerParameter) {
  torch::nn::Sequential net = Net();
  torch::optim::AdamW adamw(net->parameters(), torch::optim::AdamWOptions(1e-3));
  const ExpectedMemory per_param =
      ExpectMemory(net->parameters(), net->buffers(), Feed(), std::nullopt, &adamw, false);
  EXPECT_EQ(per_param.gradient_bytes, kParamBytes);
  EXPECT_EQ(per_param.optimizer_state_bytes, 2 * kParamBytes);
  EXPECT_EQ(per_param.optimizer_step_counters, 4);                         // four parameter tensors
  EXPECT_EQ(per_param.optimizer_step_temporary_bytes, 2 * kLargestBytes);  // sqrt, then its quotient
  EXPECT_EQ(per_param.resident_bytes(), 4 * kParamBytes + 64);
  ForeachAdamW foreach (net->parameters(), torch::optim::AdamWOptions(1e-3));
  const ExpectedMemory fused =
      ExpectMemory(net->parameters(), net->buffers(), Feed(), std::nullopt, &foreach, true);
  EXPECT_EQ(fused.optimizer_state_bytes, 2 * kParamBytes);
  EXPECT_EQ(fused.optimizer_step_temporary_bytes, kParamBytes);  // _foreach_sqrt of every exp_avg_sq

  adamw.zero_grad();
  net->forward(torch::ones({2, 6})).sum().backward();
  adamw.step();
  std::int64_t held = 0;
  for (const auto& [key, state] : adamw.state()) {
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*state);
    held += s.exp_avg().numel() * 4 + s.exp_avg_sq().numel() * 4;
  }
  EXPECT_EQ(held, per_param.optimizer_state_bytes);
  EXPECT_EQ(static_cast<std::int64_t>(adamw.state().size()), per_param.optimizer_step_counters);
}

TEST(MemoryAccounting, BuffersFrozenAndSharedTensorsAndInference) {
  // BatchNorm1d(4): weight and bias (8 floats, 32 bytes) train; running_mean and running_var
  // (8 floats) and num_batches_tracked (one int64) are buffers: 40 bytes, no gradient.
  torch::nn::BatchNorm1d norm(4);
  torch::optim::SGD sgd(norm->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  ExpectedMemory e = ExpectMemory(norm->parameters(), norm->buffers(), {}, std::nullopt, &sgd, false);
  EXPECT_EQ(e.weight_bytes, 32 + 40);
  EXPECT_EQ(e.gradient_bytes, 32);
  EXPECT_EQ(e.optimizer_state_bytes, 32);
  EXPECT_EQ(e.input_bytes, 0);

  // A frozen parameter has neither gradient nor state; a tensor listed twice counts once.
  torch::nn::Sequential net = Net();
  std::vector<torch::Tensor> params = net->parameters();
  params[0].set_requires_grad(false);  // the 120-byte weight
  params.push_back(params[1]);         // the first bias (20 bytes) again
  e = ExpectMemory(params, {}, Feed(), std::nullopt, &sgd, false);
  EXPECT_EQ(e.weight_bytes, kParamBytes);
  EXPECT_EQ(e.gradient_bytes, kParamBytes - kLargestBytes);

  // Inference: weights and the batch only; a deployed size replaces the tensors' sum (int8).
  e = ExpectMemory(net->parameters(), net->buffers(), Feed(), std::nullopt, nullptr, false);
  EXPECT_EQ(e.gradient_bytes, 0);
  EXPECT_EQ(e.optimizer_state_bytes, 0);
  EXPECT_TRUE(e.optimizer_rule.empty());
  EXPECT_EQ(e.resident_bytes(), kParamBytes + 64);
  e = ExpectMemory(net->parameters(), net->buffers(), Feed(), 100, nullptr, false);
  EXPECT_EQ(e.weight_bytes, 100);
}

TEST(MemoryAccounting, ThePeakAndWhatIsLeftForActivations) {
  namespace memory = record::memory;
  namespace metric = record::metric;
  ExpectedMemory e;
  e.weight_bytes = 1000;
  e.gradient_bytes = 1000;
  e.optimizer_state_bytes = 2000;
  e.input_bytes = 100;
  e.optimizer_rule = "AdamW (per parameter)";

  // CUDA: the allocator's peaks; reserved - allocated is fragmentation.
  const nlohmann::json cuda = {{std::string(memory::kDeviceAllocatedPeakBytes), 10'000},
                               {std::string(memory::kDeviceReservedPeakBytes), 12'000},
                               {std::string(memory::kHostPeakRssBytes), 1 << 30}};
  auto peak = PeakFromSnapshot(cuda, 5000, true);
  ASSERT_TRUE(peak.has_value());
  EXPECT_EQ(peak->bytes, 10'000);
  nlohmann::json extras = {{"metrics", nlohmann::json::array()}, {"info", nlohmann::json::object()}};
  AddMemoryBreakdown(e, peak, extras);
  EXPECT_EQ(MetricOf(extras, metric::kWeightBytes), 1000);
  EXPECT_EQ(MetricOf(extras, metric::kGradBytes), 1000);
  EXPECT_EQ(MetricOf(extras, metric::kOptimizerStateBytes), 2000);
  EXPECT_EQ(MetricOf(extras, metric::kInputBatchBytes), 100);
  EXPECT_EQ(MetricOf(extras, metric::kExpectedResidentBytes), 4100);
  EXPECT_EQ(MetricOf(extras, metric::kMemoryPeakBytes), 10'000);
  EXPECT_EQ(MetricOf(extras, metric::kActivationWorkspaceBytes), 5900);
  EXPECT_EQ(MetricOf(extras, metric::kAllocatorFragmentationBytes), 2000);
  EXPECT_NE(extras["info"]["memory"]["peak"].get<std::string>().find("after the warm-up"), std::string::npos);

  // CPU: the peak RSS above the RSS before the build; below the expected bytes, no remainder.
  const nlohmann::json cpu = {{std::string(memory::kHostPeakRssBytes), 9000}};
  peak = PeakFromSnapshot(cpu, 6000, false);
  ASSERT_TRUE(peak.has_value());
  EXPECT_EQ(peak->bytes, 3000);
  EXPECT_FALSE(peak->reserved_bytes.has_value());
  extras = {{"metrics", nlohmann::json::array()}, {"info", nlohmann::json::object()}};
  AddMemoryBreakdown(e, peak, extras);
  EXPECT_EQ(MetricOf(extras, metric::kMemoryPeakBytes), 3000);
  EXPECT_FALSE(HasMetricNamed(extras, metric::kActivationWorkspaceBytes));
  EXPECT_FALSE(HasMetricNamed(extras, metric::kAllocatorFragmentationBytes));
  EXPECT_TRUE(extras["info"]["memory"].contains("peak_below_expected"));

  // Nothing measured: no peak, the expected bytes still sent.
  EXPECT_FALSE(PeakFromSnapshot(nlohmann::json::object(), 6000, false).has_value());
  EXPECT_FALSE(PeakFromSnapshot(cpu, 0, false).has_value());
  extras = {{"metrics", nlohmann::json::array({{{"name", "weight_bytes"}, {"value", 1000.0}}})}};
  AddMemoryBreakdown(e, std::nullopt, extras);
  EXPECT_EQ(extras["metrics"].size(), 5u);  // weight_bytes once, not twice
  EXPECT_FALSE(HasMetricNamed(extras, metric::kMemoryPeakBytes));
}

}  // namespace
}  // namespace dlbench::torchrunner
