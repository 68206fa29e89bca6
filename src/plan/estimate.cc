#include "plan/estimate.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "config/registry.h"
#include "plan/ddp_references.h"

namespace dlbench::plan {
namespace {

std::optional<double> NumberParam(const Cell& cell, const char* name) {
  auto it = cell.params.find(name);
  if (it == cell.params.end() || !it->second.is_number()) return std::nullopt;
  return it->second.get<double>();
}

bool StringParamIs(const Cell& cell, const char* name, const char* value) {
  auto it = cell.params.find(name);
  return it != cell.params.end() && it->second.is_string() && it->second.get<std::string>() == value;
}

// The runner's declared time-shaping parameters (EstimateHint in the registry); a runner without
// them (torch, a command) declares none.
struct Declared {
  double step_ms = 0.0;
  double setup_ms = 0.0;
  double warmup_steps = 0.0;
  double warmup_factor = 1.0;
  bool has_step = false;
};

Declared DeclaredTimes(const Cell& cell, const config::Matrix& matrix) {
  Declared d;
  for (const config::ParamSpec* spec : config::CellParamsForRunner(matrix.runner.name)) {
    if (spec->estimate == config::EstimateHint::kNone) continue;
    const std::optional<double> value = NumberParam(cell, spec->name.c_str());
    if (!value) continue;
    switch (spec->estimate) {
      case config::EstimateHint::kStepMs:
        d.step_ms = *value;
        d.has_step = true;
        break;
      case config::EstimateHint::kSetupMs:
        d.setup_ms = *value;
        break;
      case config::EstimateHint::kWarmupSteps:
        d.warmup_steps = *value;
        break;
      case config::EstimateHint::kWarmupFactor:
        d.warmup_factor = *value;
        break;
      case config::EstimateHint::kNone:
        break;
    }
  }
  return d;
}

}  // namespace

std::optional<std::string> RetryRefusal(const Cell& cell) {
  if (std::any_of(std::begin(config::kBoundarySearchKeys), std::end(config::kBoundarySearchKeys),
                  [&](const char* key) { return StringParamIs(cell, key, "max"); })) {
    return "a boundary search (its probes are measurements of their own)";
  }
  if (cell.params.count("load") > 0) return "a load cell (its verdicts judge the system under load)";
  if (StringParamIs(cell, "scenario", "converge")) {
    return "a converge cell (it trains to a target, not to a stable step time)";
  }
  if (IsDdpCell(cell.params)) return "a ddp cell (its ranks may run on a group run's other tasks)";
  return std::nullopt;
}

double StepsNeeded(const config::MeasureSettings& m) {
  return std::max<double>(config::kMinStepsForInterval, static_cast<double>(m.min_steps)) *
         config::kWarmupCutMargin;
}

std::optional<double> ReachableSteps(const Estimate& e, const config::MeasureSettings& m) {
  if (!e.policy_stops || !e.step_s || *e.step_s <= 0) return std::nullopt;
  return std::floor(m.max_time_s / *e.step_s);
}

Estimate EstimateCell(const Cell& cell, const config::Matrix& matrix,
                      const std::map<std::string, KeyHistory>& history_by_key) {
  const config::MeasureSettings& m = matrix.measure;
  const double idle_s = m.idle_baseline_s.value_or(0.0);
  const Declared d = DeclaredTimes(cell, matrix);
  const double setup_s = d.setup_ms / 1000.0;
  Estimate e;
  e.high_s = idle_s + matrix.timeout_s;
  if (d.has_step) e.step_s = d.step_ms / 1000.0;

  if (StringParamIs(cell, "scenario", "converge")) {
    // Trains to its target or to max_train_time_s (docs/convergence.md); only the timeout bounds
    // it from above, and it may reach its target at once.
    e.policy_stops = false;
    e.low_s = idle_s;
    e.seconds =
        idle_s + std::min(NumberParam(cell, "max_train_time_s").value_or(matrix.timeout_s), matrix.timeout_s);
  } else if (StringParamIs(cell, "target_qps", "max")) {
    // A peak search probes until peak_max_time_s (default and cap: max_time_s) or until it has
    // converged, which may be early (docs/load.md "Peak search"), then confirms its peak within
    // the same budget: at least one confirmation of max(peak_min_probe_s, peak_confirm_s) and its
    // 0.5 s warm-up (docs/load.md "Confirmation").
    e.policy_stops = false;
    const double confirm_s = NumberParam(cell, "peak_confirm_s").value_or(15.0);
    const double confirmation_s =
        confirm_s > 0 ? std::max(NumberParam(cell, "peak_min_probe_s").value_or(5.0), confirm_s) + 0.5 : 0.0;
    e.low_s = idle_s + setup_s +
              std::min(confirmation_s,
                       std::min(NumberParam(cell, "peak_max_time_s").value_or(m.max_time_s), m.max_time_s));
    e.seconds = idle_s + setup_s +
                std::min(NumberParam(cell, "peak_max_time_s").value_or(m.max_time_s), m.max_time_s);
  } else {
    // The least the measurement policy takes: min_time_s, or min_steps at a declared step time
    // when that is longer (warm-up steps at their declared slowdown), capped by max_time_s.
    const double steps_s =
        d.step_ms / 1000.0 *
        (static_cast<double>(m.min_warmup_steps + m.min_steps) + d.warmup_steps * (d.warmup_factor - 1.0));
    e.low_s = idle_s + setup_s + std::min(std::max(m.min_time_s, steps_s), m.max_time_s);
    e.seconds = e.low_s;
  }
  if (std::any_of(std::begin(config::kBoundarySearchKeys), std::end(config::kBoundarySearchKeys),
                  [&](const char* key) { return StringParamIs(cell, key, "max"); })) {
    // A boundary search runs up to boundary_max_probes probes, then the value found, each its own
    // runner process bounded by timeout_s (docs/memory.md "Boundary search").
    const auto probes = cell.params.find("boundary_max_probes");
    const std::int64_t max_probes = probes != cell.params.end() && probes->second.is_number_integer()
                                        ? probes->second.get<std::int64_t>()
                                        : config::kDefaultBoundaryMaxProbes;
    e.high_s = idle_s + static_cast<double>(max_probes + 1) * matrix.timeout_s;
  }
  e.low_s = std::min(e.low_s, e.high_s);
  e.seconds = std::min(e.seconds, e.high_s);

  if (auto it = history_by_key.find(cell.key); it != history_by_key.end() && it->second.cells > 0) {
    const KeyHistory& h = it->second;
    e.from_history = true;
    e.seconds = h.mean_s;
    e.low_s = std::min(e.low_s, h.min_s);
    // A stored cell that ran longer than this matrix's timeout_s allows was run under another one.
    e.high_s = std::max(std::min(h.max_s, e.high_s), e.seconds);
    if (!d.has_step && h.step_s) {
      e.step_s = h.step_s;
      e.step_from_history = true;
    }
  }
  if (m.retry_disturbed > 0 && !RetryRefusal(cell)) e.high_s *= static_cast<double>(m.retry_disturbed + 1);
  return e;
}

}  // namespace dlbench::plan
