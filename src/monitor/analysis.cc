#include "monitor/analysis.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "common/human_text.h"
#include "monitor/nvml_sampler.h"
#include "record/metrics.h"
#include "record/series.h"
#include "stats/descriptive.h"
#include "stats/trend.h"

namespace dlbench::monitor {
namespace {

using record::MetricRecord;
using record::SeriesPoint;
using record::StepRecord;
namespace metric = record::metric;
namespace series = record::series;

struct Point {
  std::int64_t t_ns;
  double value;
};
using Series = std::vector<Point>;  // ascending t_ns
using SeriesMap = std::map<std::string, Series>;

constexpr double kLeakCiLevel = 0.95;
// A cause of low GPU busy time is named when it takes at least this share of the time.
constexpr double kMinCauseFraction = 0.10;

SeriesMap GroupSeries(const std::vector<SeriesPoint>& points) {
  SeriesMap map;
  for (const auto& p : points) map[p.series].push_back({p.t_ns, p.value});
  for (auto& [name, series] : map) {
    std::stable_sort(series.begin(), series.end(),
                     [](const Point& a, const Point& b) { return a.t_ns < b.t_ns; });
  }
  return map;
}

// Every gpu<i>.<reading> series, by GPU index.
std::map<int, const Series*> GpuSeries(const SeriesMap& map, std::string_view reading) {
  std::map<int, const Series*> out;
  for (const auto& [name, series] : map) {
    auto ref = record::series::ParseGpuSeriesName(name);
    if (ref && ref->field == reading) out[ref->index] = &series;
  }
  return out;
}

struct Window {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  bool Contains(std::int64_t t) const { return t >= start_ns && t <= end_ns; }
  double seconds() const { return static_cast<double>(end_ns - start_ns) * 1e-9; }
};

std::vector<double> ValuesIn(const Series& s, const Window& w) {
  std::vector<double> v;
  for (const auto& p : s) {
    if (w.Contains(p.t_ns)) v.push_back(p.value);
  }
  return v;
}

// Per round (shared t_ns), the sum over GPUs of one reading, inside the window.
Series SumPerRound(const std::map<int, const Series*>& by_gpu, const Window& w) {
  std::map<std::int64_t, double> sums;
  for (const auto& [index, series] : by_gpu) {
    for (const auto& p : *series) {
      if (w.Contains(p.t_ns)) sums[p.t_ns] += p.value;
    }
  }
  Series out;
  for (const auto& [t, v] : sums) out.push_back({t, v});
  return out;
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? NAN : sum / static_cast<double>(v.size());
}

double MaxOf(const std::vector<double>& v) { return v.empty() ? NAN : *std::max_element(v.begin(), v.end()); }

// The value of a piecewise-linear series at t; beyond its ends, extended along the nearest segment
// (a counter's rate continues) or held (with one point).
double InterpolateAt(const Series& s, std::int64_t t) {
  if (s.size() == 1) return s.front().value;
  auto it =
      std::lower_bound(s.begin(), s.end(), t, [](const Point& p, std::int64_t v) { return p.t_ns < v; });
  std::size_t hi = static_cast<std::size_t>(it - s.begin());
  hi = std::clamp<std::size_t>(hi, 1, s.size() - 1);
  const Point& a = s[hi - 1];
  const Point& b = s[hi];
  if (b.t_ns == a.t_ns) return b.value;
  double f = static_cast<double>(t - a.t_ns) / static_cast<double>(b.t_ns - a.t_ns);
  return a.value + f * (b.value - a.value);
}

// The increase of a cumulative counter over the window. nullopt with fewer than two readings or a
// counter that went backwards (a driver reload resets NVML's energy counter).
std::optional<double> CounterDelta(const Series& s, const Window& w) {
  if (s.size() < 2) return std::nullopt;
  for (std::size_t i = 1; i < s.size(); ++i) {
    if (s[i].value < s[i - 1].value) return std::nullopt;
  }
  return InterpolateAt(s, w.end_ns) - InterpolateAt(s, w.start_ns);
}

// Trapezoidal integral of a rate over the window; the rate is held constant beyond the readings.
std::optional<double> Integrate(const Series& s, const Window& w) {
  if (s.empty()) return std::nullopt;
  auto at = [&](std::int64_t t) {
    if (t <= s.front().t_ns) return s.front().value;
    if (t >= s.back().t_ns) return s.back().value;
    return InterpolateAt(s, t);
  };
  std::vector<Point> knots{{w.start_ns, at(w.start_ns)}};
  for (const auto& p : s) {
    if (p.t_ns > w.start_ns && p.t_ns < w.end_ns) knots.push_back(p);
  }
  knots.push_back({w.end_ns, at(w.end_ns)});
  double joules = 0;
  for (std::size_t i = 1; i < knots.size(); ++i) {
    joules += 0.5 * (knots[i].value + knots[i - 1].value) *
              static_cast<double>(knots[i].t_ns - knots[i - 1].t_ns) * 1e-9;
  }
  return joules;
}

// Mean power over a span of samples (the idle baseline): from the counters when every GPU has
// one, else the mean of the summed power readings.
std::optional<double> IdlePowerW(const SeriesMap& idle) {
  auto energy = GpuSeries(idle, series::kEnergyJ);
  auto power = GpuSeries(idle, series::kPowerW);
  double watts = 0;
  bool any = false;
  if (!energy.empty()) {
    for (const auto& [index, series] : energy) {
      if (series->size() < 2 || series->back().t_ns <= series->front().t_ns) return std::nullopt;
      Window span{series->front().t_ns, series->back().t_ns};
      auto delta = CounterDelta(*series, span);
      if (!delta) return std::nullopt;
      watts += *delta / span.seconds();
      any = true;
    }
    return any ? std::optional<double>(watts) : std::nullopt;
  }
  for (const auto& [index, series] : power) {
    std::vector<double> v;
    for (const auto& p : *series) v.push_back(p.value);
    if (v.empty()) continue;
    watts += Mean(v);
    any = true;
  }
  return any ? std::optional<double>(watts) : std::nullopt;
}

class Metrics {
 public:
  explicit Metrics(std::vector<MetricRecord>& out) : out_(out) {}
  // Declared names only (record/metrics.h); the unit is the declared one.
  void Add(std::string_view name, double value) {
    if (std::isfinite(value))
      out_.push_back({std::string(name), value, std::string(record::MetricUnit(name))});
  }

 private:
  std::vector<MetricRecord>& out_;
};

// The analysed rank's records: rank 0, or the lowest rank present.
std::vector<StepRecord> AnalysedSteps(const std::vector<record::StepRow>& rows) {
  if (rows.empty()) return {};
  std::uint32_t rank = rows.front().rank;
  for (const auto& r : rows) rank = std::min(rank, r.rank);
  std::vector<StepRecord> out;
  for (const auto& r : rows) {
    if (r.rank == rank) out.push_back(r.record);
  }
  return out;
}

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

// Theil-Sen slope per step with a Mann-Kendall test; a leak when the trend is significant, even the
// CI's lower end exceeds the floor, and the troughs rose steadily (analysis.h). Returns the verdict
// reason, or "" for none.
// The three metrics a growth test stores: the slope and its interval's ends.
struct GrowthNames {
  std::string_view slope, ci_low, ci_high;
};

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

struct ThrottleBit {
  std::uint64_t bit;
  const char* name;
  bool is_power_cap;
};
constexpr ThrottleBit kThrottleBits[] = {
    {kClocksEventSwPowerCap, "sw_power_cap", true},
    {kClocksEventHwSlowdown, "hw_slowdown", false},
    {kClocksEventSwThermal, "sw_thermal_slowdown", false},
    {kClocksEventHwThermal, "hw_thermal_slowdown", false},
    {kClocksEventHwPowerBrake, "hw_power_brake_slowdown", false},
};

void Throttling(const SeriesMap& map, const Window& w, bool power_cap_invalidates, Metrics& metrics,
                CellAnalysis& result) {
  auto events = GpuSeries(map, series::kClocksEventReasons);
  if (events.empty()) return;
  std::size_t total = 0, any_throttle = 0;
  std::map<std::string, std::pair<std::size_t, std::set<int>>> seen;  // reason -> (count, gpus)
  std::uint64_t throttle_mask = 0;
  for (const auto& b : kThrottleBits) throttle_mask |= b.bit;
  for (const auto& [index, series] : events) {
    for (double v : ValuesIn(*series, w)) {
      auto mask = static_cast<std::uint64_t>(v);
      ++total;
      if (mask & throttle_mask) ++any_throttle;
      for (const auto& b : kThrottleBits) {
        if (mask & b.bit) {
          ++seen[b.name].first;
          seen[b.name].second.insert(index);
        }
      }
    }
  }
  if (total == 0) return;
  metrics.Add(metric::kClocksThrottledFraction,
              static_cast<double>(any_throttle) / static_cast<double>(total));
  for (const auto& b : kThrottleBits) {
    auto it = seen.find(b.name);
    if (it == seen.end()) continue;
    double fraction = static_cast<double>(it->second.first) / static_cast<double>(total);
    if (fraction < kThrottleMinFraction) continue;
    std::string gpus;
    for (int g : it->second.second) gpus += (gpus.empty() ? "gpu" : ", gpu") + std::to_string(g);
    std::string text =
        fmt::format("throttled: {} during {:.0f}% of samples ({})", b.name, 100 * fraction, gpus);
    if (b.is_power_cap && !power_cap_invalidates) {
      result.warnings.push_back(text + "; the board is at its power limit, which the fingerprint records");
    } else {
      result.verdict_reasons.push_back(text);
    }
  }
}

// Why a training cell's GPU sits idle, from its step records.
// The largest cause of a GPU kept waiting that the step records show ("likely cause: data wait
// ..."), or "" when none is large enough to name.
std::string LowBusyCause(const std::vector<StepRecord>& steps, const Window& w) {
  double in_steps = 0, wait = 0, wait_base = 0, comm = 0, comm_base = 0, other = 0, other_base = 0;
  for (const auto& s : steps) {
    double d = static_cast<double>(s.end_ns - s.start_ns);
    in_steps += d;
    if (s.present & record::kHasDataWait) {
      wait += static_cast<double>(s.data_wait_ns);
      wait_base += d;
    }
    if (s.present & record::kHasComm) {
      comm += static_cast<double>(s.comm_ns);
      comm_base += d;
    }
    if (s.present & record::kHasCompute) {
      double known = static_cast<double>(s.compute_ns);
      if (s.present & record::kHasDataWait) known += static_cast<double>(s.data_wait_ns);
      if (s.present & record::kHasComm) known += static_cast<double>(s.comm_ns);
      other += std::max(0.0, d - known);
      other_base += d;
    }
  }
  const double window_ns = static_cast<double>(w.end_ns - w.start_ns);
  struct Cause {
    double fraction;
    std::string text;
  };
  std::vector<Cause> causes;
  if (window_ns > 0) {
    double gaps = std::max(0.0, 1.0 - in_steps / window_ns);
    causes.push_back({gaps, fmt::format("long gaps between steps ({:.0f}% of the window is outside any step: "
                                        "host work between steps such as logging or checkpointing)",
                                        100 * gaps)});
  }
  if (wait_base > 0) {
    double f = wait / wait_base;
    causes.push_back(
        {f, fmt::format("data wait ({:.0f}% of step time: the input pipeline does not keep up)", 100 * f)});
  }
  if (comm_base > 0) {
    double f = comm / comm_base;
    causes.push_back({f, fmt::format("exposed communication ({:.0f}% of step time)", 100 * f)});
  }
  if (other_base > 0) {
    double f = other / other_base;
    causes.push_back(
        {f, fmt::format("host-side time inside steps ({:.0f}% of step time outside compute, data "
                        "wait and communication)",
                        100 * f)});
  }
  auto best = std::max_element(causes.begin(), causes.end(),
                               [](const Cause& a, const Cause& b) { return a.fraction < b.fraction; });
  if (best != causes.end() && best->fraction >= kMinCauseFraction) return "likely cause: " + best->text;
  return "";
}

constexpr const char* kCauseNotVisible =
    "cause not visible in the step records (no phase times, no gaps): small kernels or launch overhead are "
    "likely; profile a window of steps";

// The host's side of a GPU kept waiting (analysis.h, kHostBoundMinCores): "host-bound (kernel
// launch): ..." or "the host was not busy either: ...", with info.bound; "" when the runner's CPU
// time is unknown or between the two thresholds.
std::string HostFinding(double gpu_busy_pct, std::optional<double> runner_cores, nlohmann::json& info) {
  if (!runner_cores || !std::isfinite(*runner_cores)) return "";
  const char* kind = nullptr;
  std::string text;
  if (*runner_cores >= kHostBoundMinCores && *runner_cores < kHostBoundMaxLaunchCores) {
    kind = "host_bound";
    text = fmt::format(
        "host-bound (kernel launch): the runner's process used {:.2f} CPU cores while the GPU idled {:.0f}% "
        "of "
        "the window, so launching kernels sets the pace; what would help: a larger batch_size (more work per "
        "launch), fewer and fused kernels (a compiled model), or replaying the step as a CUDA graph",
        *runner_cores, 100 - gpu_busy_pct);
  } else if (*runner_cores >= kHostBoundMaxLaunchCores) {
    kind = "host_bound";
    text = fmt::format(
        "host-bound: the runner's process used {:.2f} CPU cores while the GPU idled {:.0f}% of the window, "
        "more "
        "than the one thread that launches kernels: CPU work inside the step (pre-processing, CPU operators) "
        "sets the pace; profile the host side of a step",
        *runner_cores, 100 - gpu_busy_pct);
  } else if (*runner_cores < kHostIdleMaxCores) {
    kind = "host_idle";
    text = fmt::format(
        "the host was not busy either (the runner's process used {:.2f} CPU cores): the step waits on "
        "something that is neither GPU nor CPU work (synchronisation, I/O, sleeps, another process)",
        *runner_cores);
  } else {
    return "";
  }
  info["bound"] = {{"kind", kind}, {"gpu_busy_pct", gpu_busy_pct}, {"runner_cores", *runner_cores}};
  return text;
}

// Host CPU cores busy outside the runner's process tree over [start, end]: the whole host's busy
// share times its cores, less the tree's CPU seconds over the span. nullopt without both series.
std::optional<double> OtherCores(const SeriesMap& map, const Window& w) {
  auto host = map.find(std::string(series::kHostCpuBusyCores));
  auto proc = map.find(std::string(series::kProcCpuS));
  if (host == map.end() || proc == map.end() || w.seconds() <= 0) return std::nullopt;
  const double host_busy = Mean(ValuesIn(host->second, w));
  const auto tree_s = CounterDelta(proc->second, w);
  if (!std::isfinite(host_busy) || !tree_s) return std::nullopt;
  return std::max(0.0, host_busy - *tree_s / w.seconds());
}

// Run-queue wait of the runner tree over its CPU time in the window; nullopt without both series
// or without CPU time.
std::optional<double> RunqueueWaitRatio(const SeriesMap& map, const Window& w) {
  auto wait = map.find(std::string(series::kProcRunqueueWaitS));
  auto proc = map.find(std::string(series::kProcCpuS));
  if (wait == map.end() || proc == map.end()) return std::nullopt;
  const auto wait_s = CounterDelta(wait->second, w);
  const auto cpu_s = CounterDelta(proc->second, w);
  if (!wait_s || !cpu_s || !(*cpu_s > 0)) return std::nullopt;
  return std::max(0.0, *wait_s) / *cpu_s;
}

}  // namespace

const record::MetricRecord* CellAnalysis::Find(const std::string& name) const {
  for (const auto& m : metrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

CellAnalysis AnalyzeCell(const AnalysisInput& input) {
  CellAnalysis result;
  Metrics metrics(result.metrics);
  std::vector<StepRecord> all_steps = AnalysedSteps(input.steps);
  const auto warmup = static_cast<std::size_t>(
      std::clamp<std::int64_t>(input.window.first_step, 0, static_cast<std::int64_t>(all_steps.size())));
  const std::size_t end =
      warmup + static_cast<std::size_t>(std::clamp<std::int64_t>(
                   input.window.steps, 0, static_cast<std::int64_t>(all_steps.size() - warmup)));
  if (end <= warmup) {
    result.warnings.push_back("no measured steps: monitor metrics were not computed");
    return result;
  }
  const std::vector<StepRecord> steps(all_steps.begin() + static_cast<std::ptrdiff_t>(warmup),
                                      all_steps.begin() + static_cast<std::ptrdiff_t>(end));
  Window w{steps.front().start_ns, steps.back().end_ns};
  double samples = 0;
  for (const auto& s : steps) samples += s.samples > 0 ? s.samples : input.samples_per_step;
  const double n_steps = static_cast<double>(steps.size());
  result.info["window_start_ns"] = w.start_ns;
  result.info["window_end_ns"] = w.end_ns;
  if (w.end_ns <= w.start_ns) {
    result.warnings.push_back("the measured window is empty: monitor metrics were not computed");
    return result;
  }
  const SeriesMap map = GroupSeries(input.series);
  std::size_t in_window = 0;
  for (const auto& p : input.series) in_window += w.Contains(p.t_ns) ? 1 : 0;
  result.info["samples_in_window"] = in_window;

  // Utilisation and clocks: every GPU's samples pooled.
  auto pooled = [&](std::string_view reading) {
    std::vector<double> v;
    for (const auto& [index, series] : GpuSeries(map, reading)) {
      auto part = ValuesIn(*series, w);
      v.insert(v.end(), part.begin(), part.end());
    }
    return v;
  };
  const std::vector<double> util = pooled(series::kSmUtilPct);
  const double util_mean = Mean(util);
  metrics.Add(metric::kGpuUtilMeanPct, util_mean);
  if (!util.empty()) metrics.Add(metric::kGpuUtilP5Pct, stats::Quantile(util, 0.05));
  metrics.Add(metric::kGpuMemUtilMeanPct, Mean(pooled(series::kMemUtilPct)));
  metrics.Add(metric::kSmClockMeanMhz, Mean(pooled(series::kSmClockMhz)));
  metrics.Add(metric::kTempMaxC, MaxOf(pooled(series::kTempC)));
  metrics.Add(metric::kPcieTxMeanBytesPerS, Mean(pooled(series::kPcieTxBytesPerS)));
  metrics.Add(metric::kPcieRxMeanBytesPerS, Mean(pooled(series::kPcieRxBytesPerS)));

  // Power: the total over the cell's GPUs per round.
  const auto power = GpuSeries(map, series::kPowerW);
  std::vector<double> power_totals;
  for (const auto& p : SumPerRound(power, w)) power_totals.push_back(p.value);
  metrics.Add(metric::kPowerMeanW, Mean(power_totals));
  metrics.Add(metric::kPowerMaxW, MaxOf(power_totals));

  // Energy: the driver's counter where every GPU has one, else integrated power.
  const auto energy = GpuSeries(map, series::kEnergyJ);
  std::optional<double> joules;
  if (!energy.empty() && (power.empty() || energy.size() == power.size())) {
    double sum = 0;
    bool ok = true;
    for (const auto& [index, series] : energy) {
      auto delta = CounterDelta(*series, w);
      if (!delta) {
        ok = false;
        break;
      }
      sum += *delta;
    }
    if (ok) {
      joules = sum;
      result.info["energy_method"] = "counter";
    }
  }
  if (!joules && !power.empty()) {
    double sum = 0;
    bool ok = true;
    for (const auto& [index, series] : power) {
      auto part = Integrate(*series, w);
      if (!part) {
        ok = false;
        break;
      }
      sum += *part;
    }
    if (ok) {
      joules = sum;
      result.info["energy_method"] = "power_integral";
    }
  }
  if (joules) {
    metrics.Add(metric::kEnergyTotalJ, *joules);
    metrics.Add(metric::kEnergyPerStepJ, *joules / n_steps);
    if (samples > 0) metrics.Add(metric::kEnergyPerSampleJ, *joules / samples);
    if (!input.idle_series.empty()) {
      if (auto idle_w = IdlePowerW(GroupSeries(input.idle_series))) {
        double above = *joules - *idle_w * w.seconds();
        metrics.Add(metric::kIdlePowerW, *idle_w);
        metrics.Add(metric::kEnergyAboveIdlePerStepJ, above / n_steps);
        if (samples > 0) metrics.Add(metric::kEnergyAboveIdlePerSampleJ, above / samples);
      } else {
        result.warnings.push_back(
            "idle baseline has no usable power or energy readings; idle power not subtracted");
      }
    }
  }
  if (auto it = map.find(std::string(series::kHostRaplEnergyJ)); it != map.end()) {
    if (auto cpu_j = CounterDelta(it->second, w)) {
      metrics.Add(metric::kCpuPackageEnergyPerStepJ, *cpu_j / n_steps);
      if (samples > 0) metrics.Add(metric::kCpuPackageEnergyPerSampleJ, *cpu_j / samples);
    }
  }

  Throttling(map, w, input.power_cap_invalidates, metrics, result);

  // Host.
  if (auto it = map.find(std::string(series::kHostCpuUtilPct)); it != map.end()) {
    metrics.Add(metric::kHostCpuUtilPct, Mean(ValuesIn(it->second, w)));
  }
  if (auto it = map.find(std::string(series::kProcCpuS)); it != map.end()) {
    if (auto cpu_s = CounterDelta(it->second, w))
      metrics.Add(metric::kProcCpuUtilPct, 100 * *cpu_s / w.seconds());
  }
  if (auto it = map.find(std::string(series::kHostCpuStealPct)); it != map.end()) {
    metrics.Add(metric::kHostCpuStealPct, Mean(ValuesIn(it->second, w)));
  }
  const auto other = OtherCores(map, w);
  if (other) metrics.Add(metric::kHostCpuOtherCores, *other);
  if (const auto wait = RunqueueWaitRatio(map, w)) {
    metrics.Add(metric::kRunnerCpuWaitRatio, *wait);
    if (*wait >= kContendedWaitRatio) {
      std::string busy;
      if (other && *other >= kContendedCores)
        busy = fmt::format("; {:.2f} CPU cores were busy outside the runner", *other);
      if (!input.busiest_elsewhere.empty()) busy += "; busiest elsewhere: " + input.busiest_elsewhere;
      result.verdict_reasons.push_back(fmt::format(
          "contended: the runner waited for a CPU {:.0f}% as long as it ran (contended from {:.0f}%){}; "
          "quiet the machine or run the cell again",
          100 * *wait, 100 * kContendedWaitRatio, busy));
    }
  }
  double other_procs = -1;
  std::string other_gpus;
  for (const auto& [index, s] : GpuSeries(map, series::kOtherProcs)) {
    const double most = MaxOf(ValuesIn(*s, w));
    if (!std::isfinite(most)) continue;
    other_procs = std::max(other_procs, most);
    if (most >= 1) other_gpus += (other_gpus.empty() ? "gpu" : ", gpu") + std::to_string(index);
  }
  if (other_procs >= 0) metrics.Add(metric::kGpuOtherProcsMax, other_procs);
  if (!other_gpus.empty()) {
    result.verdict_reasons.push_back(fmt::format(
        "contended: up to {:.0f} other process(es) computed on {} during the measured window; several "
        "processes sharing a GPU slow each other",
        other_procs, other_gpus));
  }
  if (auto it = map.find(std::string(series::kHostMemUsedBytes)); it != map.end()) {
    metrics.Add(metric::kHostMemUsedPeakBytes, MaxOf(ValuesIn(it->second, w)));
  }
  // The leak tests' window: the measured window, or its second half when it holds the warm-up.
  Window growth_window = w;
  if (input.window_holds_warmup && steps.size() >= 2) {
    growth_window.start_ns = steps[steps.size() / 2].start_ns;
    result.info["leak_test_from_step"] =
        input.window.first_step + static_cast<std::int64_t>(steps.size() / 2);
  }
  if (auto it = map.find(std::string(series::kProcRssBytes)); it != map.end()) {
    metrics.Add(metric::kProcRssPeakBytes, MaxOf(ValuesIn(it->second, w)));
    auto leak = Growth(it->second, growth_window, steps,
                       {metric::kRssGrowthBytesPerStep, metric::kRssGrowthBytesPerStepCiLow,
                        metric::kRssGrowthBytesPerStepCiHigh},
                       "host RSS", metrics, result.info);
    if (!leak.empty()) result.verdict_reasons.push_back(leak);
  }

  // Device memory: whole-GPU use and the runner tree's own, summed over the cell's GPUs.
  std::vector<double> gpu_used;
  for (const auto& p : SumPerRound(GpuSeries(map, series::kMemUsedBytes), w)) gpu_used.push_back(p.value);
  metrics.Add(metric::kGpuMemUsedPeakBytes, MaxOf(gpu_used));
  const auto proc_mem_by_gpu = GpuSeries(map, series::kProcMemBytes);
  if (!proc_mem_by_gpu.empty()) {
    Window all{std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()};
    Series proc_mem = SumPerRound(proc_mem_by_gpu, all);
    std::vector<double> values = ValuesIn(proc_mem, w);
    metrics.Add(metric::kDeviceProcMemPeakBytes, MaxOf(values));
    auto leak = Growth(proc_mem, growth_window, steps,
                       {metric::kDeviceMemGrowthBytesPerStep, metric::kDeviceMemGrowthBytesPerStepCiLow,
                        metric::kDeviceMemGrowthBytesPerStepCiHigh},
                       "device memory", metrics, result.info);
    if (!leak.empty()) result.verdict_reasons.push_back(leak);
  }

  if (!util.empty() && util_mean < kTrainingMinGpuBusyPct) {
    std::optional<double> runner_cores;
    if (auto it = map.find(std::string(series::kProcCpuS)); it != map.end()) {
      if (auto cpu_s = CounterDelta(it->second, w)) runner_cores = *cpu_s / w.seconds();
    }
    // A cause the step records show (data wait, communication, gaps) comes first: an input
    // pipeline's workers in the runner's process also keep its CPU busy.
    std::string cause = LowBusyCause(steps, w);
    if (cause.empty()) cause = HostFinding(util_mean, runner_cores, result.info);
    if (input.scenario == Scenario::kTrain) {
      result.warnings.push_back(
          fmt::format("GPU busy {:.0f}% of the measured window (below {:.0f}% for training); {}", util_mean,
                      kTrainingMinGpuBusyPct, cause.empty() ? kCauseNotVisible : cause));
    } else if (!cause.empty()) {
      result.warnings.push_back(fmt::format("GPU busy {:.0f}% of the measured window; {}", util_mean, cause));
    }
  }
  return result;
}

std::vector<std::string> ExplainChange(const std::vector<record::SeriesPoint>& points,
                                       std::int64_t a_start_ns, std::int64_t a_end_ns,
                                       std::int64_t b_start_ns, std::int64_t b_end_ns) {
  const SeriesMap map = GroupSeries(points);
  const Window a{a_start_ns, a_end_ns}, b{b_start_ns, b_end_ns};
  struct Change {
    double rel;
    std::string text;
  };
  std::vector<Change> changes;
  auto compare = [&](std::string_view field, const char* what, const char* unit, int digits) {
    for (const auto& [index, s] : GpuSeries(map, field)) {
      const double before = Mean(ValuesIn(*s, a));
      const double after = Mean(ValuesIn(*s, b));
      if (!std::isfinite(before) || !std::isfinite(after) || before <= 0) continue;
      const double rel = (after - before) / before;
      if (std::abs(rel) < kCauseMinRelChange) continue;
      changes.push_back({std::abs(rel),
                         fmt::format("{} {} from {:.{}f} to {:.{}f} {} (gpu{})", what,
                                     rel < 0 ? "fell" : "rose", before, digits, after, digits, unit, index)});
    }
  };
  compare(series::kSmClockMhz, "the SM clock", "MHz", 0);
  compare(series::kPowerW, "board power", "W", 0);
  compare(series::kTempC, "the GPU temperature", "C", 0);
  const auto other_a = OtherCores(map, a);
  const auto other_b = OtherCores(map, b);
  if (other_a && other_b && std::abs(*other_b - *other_a) >= kCauseMinCores) {
    changes.push_back({std::abs(*other_b - *other_a),
                       fmt::format("host CPU used outside the runner {} from {:.1f} to {:.1f} cores",
                                   *other_b > *other_a ? "rose" : "fell", *other_a, *other_b)});
  }
  if (auto it = map.find(std::string(series::kHostCpuStealPct)); it != map.end()) {
    const double before = Mean(ValuesIn(it->second, a));
    const double after = Mean(ValuesIn(it->second, b));
    if (std::isfinite(before) && std::isfinite(after) && std::abs(after - before) >= kCauseMinStealPct) {
      // Ranked with the others by the share of a step it can explain: a CPU losing x% of its time.
      changes.push_back({std::abs(after - before) / 100,
                         fmt::format("host CPU steal (the hypervisor running other guests) {} from {:.1f}% "
                                     "to {:.1f}% of the CPUs' time",
                                     after > before ? "rose" : "fell", before, after)});
    }
  }
  std::stable_sort(changes.begin(), changes.end(),
                   [](const Change& x, const Change& y) { return x.rel > y.rel; });
  std::vector<std::string> out;
  out.reserve(changes.size());
  for (auto& c : changes) out.push_back(std::move(c.text));
  return out;
}

}  // namespace dlbench::monitor
