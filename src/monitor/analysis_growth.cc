// The memory growth (leak) test of a cell's analysis (analysis_parts.h, Growth; the rule in
// analysis.h and docs/monitoring.md): the slope per step, its significance and the troughs.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "common/human_text.h"
#include "monitor/analysis_parts.h"
#include "stats/descriptive.h"
#include "stats/trend.h"

namespace dlbench::monitor::analysis_parts {
namespace {

using record::StepRecord;

constexpr double kLeakCiLevel = 0.95;

// Fractional step position of time t among the measured steps: k + the share of step k elapsed.
double StepPosition(const std::vector<StepRecord>& steps, std::int64_t t) {
  auto it = std::upper_bound(steps.begin(), steps.end(), t,
                             [](std::int64_t v, const StepRecord& s) { return v < s.start_ns; });
  if (it == steps.begin()) return 0;
  std::size_t k = static_cast<std::size_t>(it - steps.begin()) - 1;
  const StepRecord& s = steps[k];
  double f = s.end_ns > s.start_ns
                 ? static_cast<double>(t - s.start_ns) / static_cast<double>(s.end_ns - s.start_ns)
                 : 1.0;
  return static_cast<double>(k) + std::clamp(f, 0.0, 1.0);
}

}  // namespace

std::string Growth(const Series& s, const Window& w, const std::vector<StepRecord>& steps,
                   const GrowthNames& names, const std::string& label, Metrics& metrics,
                   nlohmann::json& info) {
  const std::string metric(names.slope);
  std::vector<double> x, y;
  std::vector<std::int64_t> t;
  for (const auto& p : s) {
    if (!w.Contains(p.t_ns)) continue;
    x.push_back(StepPosition(steps, p.t_ns));
    y.push_back(p.value);
    t.push_back(p.t_ns);
  }
  nlohmann::json detail = {{"samples", y.size()}};
  if (y.size() < kLeakMinSamples || x.back() - x.front() < 2) {
    detail["skipped"] = "fewer than " + std::to_string(kLeakMinSamples) + " samples or 2 steps in the window";
    info[metric] = detail;
    return "";
  }
  auto ts = stats::TheilSen(x, y, kLeakCiLevel);
  auto mk = stats::MannKendall(y);
  if (!std::isfinite(ts.slope)) return "";
  metrics.Add(names.slope, ts.slope);
  metrics.Add(names.ci_low, ts.slope_ci.low);
  metrics.Add(names.ci_high, ts.slope_ci.high);
  const double floor = std::max(kLeakFloorBytesPerStep, kLeakFloorFractionPerStep * stats::Median(y));
  // The troughs (analysis.h, kLeakMinTroughRiseBytes): the lowest sample of each third, in time
  // order (a third is at least 3 samples), and the pace between them in bytes per second.
  const auto third = static_cast<std::ptrdiff_t>(y.size() / 3);
  auto lowest = [&](std::ptrdiff_t from, std::ptrdiff_t to) {
    return static_cast<std::size_t>(std::min_element(y.begin() + from, y.begin() + to) - y.begin());
  };
  const auto n = static_cast<std::ptrdiff_t>(y.size());
  const std::size_t a = lowest(0, third), b = lowest(third, n - third), c = lowest(n - third, n);
  auto pace = [&](std::size_t from, std::size_t to) {
    return (y[to] - y[from]) / std::max(1e-9 * static_cast<double>(t[to] - t[from]), 1e-9);
  };
  const double first = y[a], middle = y[b], last = y[c];
  const double early_pace = pace(a, b), late_pace = pace(b, c);
  detail["slope_bytes_per_step"] = ts.slope;
  detail["ci_low"] = ts.slope_ci.low;
  detail["ci_high"] = ts.slope_ci.high;
  detail["mann_kendall_p"] = mk.p_value;
  detail["floor_bytes_per_step"] = floor;
  detail["troughs_bytes"] = {first, middle, last};
  detail["trough_pace_bytes_per_s"] = {early_pace, late_pace};
  const bool trend = mk.p_value < kLeakMaxPValue && ts.slope_ci.low > floor;
  const bool kept = last - first > kLeakMinTroughRiseBytes;
  const bool steady = late_pace >= kLeakMinLatePaceRatio * early_pace;
  auto mib = [](double bytes) { return fmt::format("{:.2f} MiB", bytes / (1 << 20)); };
  if (trend && !kept) {
    detail["not_a_leak"] = fmt::format("the lowest readings rose {}, not more than {}", mib(last - first),
                                       mib(kLeakMinTroughRiseBytes));
  } else if (trend && !steady) {
    detail["not_a_leak"] =
        fmt::format("the lowest readings rose {}/s up to the middle third's and {}/s after it: levelling off",
                    mib(early_pace), mib(late_pace));
  }
  const bool leak = trend && kept && steady;
  detail["leak"] = leak;
  info[metric] = detail;
  if (!leak) return "";
  return fmt::format("leaking: {} grows {:.0f} B/step [CI {}, {}]", label, ts.slope,
                     FormatSignificant(ts.slope_ci.low, 3), FormatSignificant(ts.slope_ci.high, 3));
}

}  // namespace dlbench::monitor::analysis_parts
