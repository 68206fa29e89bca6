// The parts of a cell's analysis (analysis.h) that its files share; not an interface of the
// monitor module. analysis.cc computes the metrics (AnalyzeCell) on the series helpers here
// (analysis_series.cc) and calls the memory growth test (analysis_growth.cc) and the throttle,
// contention and low-GPU-busy checks (analysis_checks.cc, with ExplainChange).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "monitor/analysis.h"
#include "record/records.h"

namespace dlbench::monitor::analysis_parts {

struct Point {
  std::int64_t t_ns;
  double value;
};
using Series = std::vector<Point>;  // ascending t_ns
using SeriesMap = std::map<std::string, Series>;

struct Window {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  bool Contains(std::int64_t t) const { return t >= start_ns && t <= end_ns; }
  double seconds() const { return static_cast<double>(end_ns - start_ns) * 1e-9; }
};

// Adds metrics to a cell's list: declared names only (record/metrics.h), with the declared unit;
// a value that is not finite is left out.
class Metrics {
 public:
  explicit Metrics(std::vector<record::MetricRecord>& out) : out_(out) {}
  void Add(std::string_view name, double value);

 private:
  std::vector<record::MetricRecord>& out_;
};

// --- The series helpers (analysis_series.cc).

// The points by series name, each series in ascending time.
SeriesMap GroupSeries(const std::vector<record::SeriesPoint>& points);

// Every gpu<i>.<reading> series, by GPU index.
std::map<int, const Series*> GpuSeries(const SeriesMap& map, std::string_view reading);

std::vector<double> ValuesIn(const Series& s, const Window& w);

// Per round (shared t_ns), the sum over GPUs of one reading, inside the window.
Series SumPerRound(const std::map<int, const Series*>& by_gpu, const Window& w);

double Mean(const std::vector<double>& v);   // NAN when empty
double MaxOf(const std::vector<double>& v);  // NAN when empty

// The increase of a cumulative counter over the window. nullopt with fewer than two readings or a
// counter that went backwards (a driver reload resets NVML's energy counter).
std::optional<double> CounterDelta(const Series& s, const Window& w);
// Energy over `w` from a cumulative counter read at some rounds only: the counter's rise between
// its first and last reading inside the window, plus `power` integrated over the window's edges
// before the first and after the last reading. nullopt with fewer than two readings inside, or a
// counter that goes down.
std::optional<double> CounterEnergy(const Series& counter, const Series& power, const Window& w);

// Trapezoidal integral of a rate over the window; the rate is held constant beyond the readings.
std::optional<double> Integrate(const Series& s, const Window& w);

// Host CPU cores busy outside the runner's process tree over [start, end]: the whole host's busy
// share times its cores, less the tree's CPU seconds over the span. nullopt without both series.
std::optional<double> OtherCores(const SeriesMap& map, const Window& w);

// --- The memory growth (leak) test (analysis_growth.cc).

// The three metrics a growth test stores: the slope and its interval's ends.
struct GrowthNames {
  std::string_view slope, ci_low, ci_high;
};

// Theil-Sen slope per step with a Mann-Kendall test; a leak when the trend is significant, even the
// CI's lower end exceeds the floor, and the troughs rose steadily (analysis.h). Stores the slope's
// metrics and info[names.slope] (the test's figures). Returns the verdict reason, or "" for none.
std::string Growth(const Series& s, const Window& w, const std::vector<record::StepRecord>& steps,
                   const GrowthNames& names, const std::string& label, Metrics& metrics,
                   nlohmann::json& info);

// --- The throttle, contention and low-GPU-busy checks (analysis_checks.cc).

// The clocks event reasons in the window: clocks_throttled_fraction, and a verdict (or, for the
// power cap unless `power_cap_invalidates`, a warning) per reason seen in kThrottleMinFraction of
// the samples.
void Throttling(const SeriesMap& map, const Window& w, bool power_cap_invalidates, Metrics& metrics,
                CellAnalysis& result);

// The host's CPU use outside the runner, the runner's run-queue wait and other processes on the
// cell's GPUs: their metrics, and a `contended` verdict when the wait or another GPU process says
// so (analysis.h, kContendedWaitRatio). `busiest_elsewhere` is named in the verdict.
void Contention(const SeriesMap& map, const Window& w, const std::string& busiest_elsewhere, Metrics& metrics,
                CellAnalysis& result);

// A GPU busy less than kTrainingMinGpuBusyPct of the window (`util` its samples, `util_mean` their
// mean): a warning with the likely cause the step records show, else what the runner's CPU time
// says (info.bound); in inference only when a cause is found.
void LowGpuBusy(const SeriesMap& map, const Window& w, const std::vector<record::StepRecord>& steps,
                const std::vector<double>& util, double util_mean, Scenario scenario, CellAnalysis& result);

}  // namespace dlbench::monitor::analysis_parts
