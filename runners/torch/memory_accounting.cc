#include "memory_accounting.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string_view>

#include "record/metrics.h"

namespace dlbench::torchrunner {
namespace {

namespace memory = record::memory;

std::int64_t Bytes(const torch::Tensor& t) {
  return t.defined() ? static_cast<std::int64_t>(t.numel()) * static_cast<std::int64_t>(t.element_size()) : 0;
}

// The tensors' bytes, each storage once (a tied weight is one tensor held twice).
std::int64_t UniqueBytes(const std::vector<torch::Tensor>& tensors, std::set<const void*>& seen) {
  std::int64_t total = 0;
  for (const torch::Tensor& t : tensors) {
    if (!t.defined() || t.numel() == 0) continue;
    if (!seen.insert(t.data_ptr()).second) continue;
    total += Bytes(t);
  }
  return total;
}

std::optional<std::int64_t> Field(const nlohmann::json& snapshot, std::string_view name) {
  const auto it = snapshot.find(std::string(name));
  if (it == snapshot.end() || !it->is_number()) return std::nullopt;
  return it->get<std::int64_t>();
}

nlohmann::json Metric(std::string_view name, std::int64_t value) {
  return {{"name", name}, {"value", static_cast<double>(value)}, {"unit", record::MetricUnit(name)}};
}

bool HasMetric(const nlohmann::json& metrics, std::string_view name) {
  return std::any_of(metrics.begin(), metrics.end(), [&](const nlohmann::json& m) {
    return m.is_object() && m.value("name", std::string()) == name;
  });
}

}  // namespace

OptimizerMemoryRule OptimizerRule(const torch::optim::Optimizer& optimizer) {
  OptimizerMemoryRule rule;
  if (optimizer.param_groups().empty()) return rule;
  const torch::optim::OptimizerOptions& options = optimizer.param_groups().front().options();
  if (const auto* sgd = dynamic_cast<const torch::optim::SGDOptions*>(&options)) {
    rule.known = true;
    rule.buffers_per_param = sgd->momentum() != 0 ? 1 : 0;
    rule.decays_weights = sgd->weight_decay() != 0;
    rule.text =
        sgd->momentum() != 0 ? "SGD with momentum: 1 buffer per parameter" : "SGD without momentum: no state";
    return rule;
  }
  auto adam_family = [&rule](const char* name, bool amsgrad) {
    rule.known = true;
    rule.adam = true;
    rule.buffers_per_param = amsgrad ? 3 : 2;
    rule.step_counters = true;
    rule.text = fmt::format("{}: {} buffers per parameter (exp_avg, exp_avg_sq{}) and an int64 step each",
                            name, rule.buffers_per_param, amsgrad ? ", max_exp_avg_sq" : "");
  };
  if (const auto* adamw = dynamic_cast<const torch::optim::AdamWOptions*>(&options)) {
    adam_family("AdamW", adamw->amsgrad());
  } else if (const auto* adam = dynamic_cast<const torch::optim::AdamOptions*>(&options)) {
    adam_family("Adam", adam->amsgrad());
  } else {
    rule.text = "an optimizer whose state is not counted";
  }
  return rule;
}

ExpectedMemory ExpectMemory(const std::vector<torch::Tensor>& parameters,
                            const std::vector<torch::Tensor>& buffers, const std::vector<torch::Tensor>& feed,
                            std::optional<std::int64_t> deployed_weight_bytes,
                            const torch::optim::Optimizer* optimizer, bool foreach) {
  ExpectedMemory out;
  std::set<const void*> weights_seen;
  const std::int64_t tensors_weight =
      UniqueBytes(parameters, weights_seen) + UniqueBytes(buffers, weights_seen);
  out.weight_bytes = deployed_weight_bytes.value_or(tensors_weight);
  std::set<const void*> feed_seen;
  out.input_bytes = UniqueBytes(feed, feed_seen);
  if (optimizer == nullptr) return out;

  // The trainable parameters, each once: what gets a gradient and the optimizer's state.
  std::set<const void*> trained_seen;
  std::int64_t trained = 0, largest = 0, tensors = 0;
  for (const torch::Tensor& p : parameters) {
    if (!p.defined() || !p.requires_grad() || p.numel() == 0) continue;
    if (!trained_seen.insert(p.data_ptr()).second) continue;
    trained += Bytes(p);
    largest = std::max(largest, Bytes(p));
    ++tensors;
  }
  out.gradient_bytes = trained;
  const OptimizerMemoryRule rule = OptimizerRule(*optimizer);
  out.optimizer_rule = rule.text + (foreach ? " (foreach)" : " (per parameter)");
  out.optimizer_known = rule.known;
  if (!rule.known) return out;
  out.optimizer_state_bytes = rule.buffers_per_param * trained;
  out.optimizer_step_counters = rule.step_counters ? tensors : 0;
  // The step's temporaries (foreach_optim.cc; LibTorch's SGD::step and AdamW::step): foreach makes
  // them for every parameter at once, the per-parameter loop for one parameter at a time.
  if (rule.adam) {
    out.optimizer_step_temporary_bytes = foreach ? trained : 2 * largest;
  } else if (rule.decays_weights) {
    out.optimizer_step_temporary_bytes = foreach ? trained : largest;
  }
  return out;
}

std::optional<MeasuredPeak> PeakFromSnapshot(const nlohmann::json& end_snapshot,
                                             std::int64_t rss_before_build, bool steady_window) {
  if (!end_snapshot.is_object()) return std::nullopt;
  if (const auto allocated = Field(end_snapshot, memory::kDeviceAllocatedPeakBytes)) {
    MeasuredPeak peak;
    peak.bytes = *allocated;
    peak.source = std::string(memory::kDeviceAllocatedPeakBytes) +
                  (steady_window ? " after the warm-up snapshot" : " over the whole cell");
    peak.reserved_bytes = Field(end_snapshot, memory::kDeviceReservedPeakBytes);
    return peak;
  }
  const auto rss = Field(end_snapshot, memory::kHostPeakRssBytes);
  if (!rss || *rss <= 0 || rss_before_build <= 0) return std::nullopt;
  MeasuredPeak peak;
  peak.bytes = std::max<std::int64_t>(0, *rss - rss_before_build);
  peak.source = fmt::format(
      "{} - the RSS before the model was built ({} bytes): no allocator statistics on "
      "the CPU",
      memory::kHostPeakRssBytes, rss_before_build);
  return peak;
}

void AddMemoryBreakdown(const ExpectedMemory& expected, const std::optional<MeasuredPeak>& peak,
                        nlohmann::json& extras) {
  nlohmann::json& metrics = extras["metrics"];
  if (!metrics.is_array()) metrics = nlohmann::json::array();
  namespace metric = record::metric;
  if (!HasMetric(metrics, metric::kWeightBytes))
    metrics.push_back(Metric(metric::kWeightBytes, expected.weight_bytes));
  const bool trains = !expected.optimizer_rule.empty();
  if (trains) {
    metrics.push_back(Metric(metric::kGradBytes, expected.gradient_bytes));
    if (expected.optimizer_known)
      metrics.push_back(Metric(metric::kOptimizerStateBytes, expected.optimizer_state_bytes));
  }
  metrics.push_back(Metric(metric::kInputBatchBytes, expected.input_bytes));
  if (expected.dataset_bytes > 0) metrics.push_back(Metric(metric::kDatasetBytes, expected.dataset_bytes));
  // The sum is only what it says when every part is known.
  const bool complete = !trains || expected.optimizer_known;
  if (complete) metrics.push_back(Metric(metric::kExpectedResidentBytes, expected.resident_bytes()));

  nlohmann::json info = {
      {"weights", "parameters and buffers at their dtype (autocast: fp32 master weights)"}};
  if (trains) {
    info["optimizer"] = expected.optimizer_rule;
    info["optimizer_step_counters"] = expected.optimizer_step_counters;
    info["optimizer_step_temporary_bytes"] = expected.optimizer_step_temporary_bytes;
  }
  if (peak) {
    metrics.push_back(Metric(metric::kMemoryPeakBytes, peak->bytes));
    info["peak"] = peak->source;
    const std::int64_t rest = peak->bytes - expected.resident_bytes();
    if (complete && rest >= 0) {
      metrics.push_back(Metric(metric::kActivationWorkspaceBytes, rest));
    } else if (complete) {
      info["peak_below_expected"] = fmt::format(
          "the measured peak is {} bytes below the expected resident bytes (on the CPU the RSS before the "
          "build can hold pages the model then reused)",
          -rest);
    }
    if (peak->reserved_bytes && *peak->reserved_bytes >= peak->bytes) {
      metrics.push_back(Metric(metric::kAllocatorFragmentationBytes, *peak->reserved_bytes - peak->bytes));
    }
  } else {
    info["peak"] = "not measured: the end snapshot has neither allocator statistics nor a peak RSS";
  }
  extras["info"]["memory"] = std::move(info);
}

}  // namespace dlbench::torchrunner
