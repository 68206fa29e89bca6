#include "monitor/analysis.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "monitor/nvml_sampler.h"
#include "stats/descriptive.h"
#include "stats/trend.h"

namespace dlbench::monitor {
namespace {

using protocol::StepRecord;
using store::MetricRecord;
using store::SeriesPoint;

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

// "gpu3.power_w" -> 3 when the reading matches; -1 otherwise.
int GpuIndexOf(const std::string& name, const std::string& reading) {
  if (name.compare(0, 3, "gpu") != 0) return -1;
  std::size_t dot = name.find('.');
  if (dot == std::string::npos || dot == 3 || name.compare(dot + 1, std::string::npos, reading) != 0)
    return -1;
  int index = 0;
  for (std::size_t i = 3; i < dot; ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    index = index * 10 + (name[i] - '0');
  }
  return index;
}

// Every gpu<i>.<reading> series, by GPU index.
std::map<int, const Series*> GpuSeries(const SeriesMap& map, const std::string& reading) {
  std::map<int, const Series*> out;
  for (const auto& [name, series] : map) {
    int index = GpuIndexOf(name, reading);
    if (index >= 0) out[index] = &series;
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
  auto energy = GpuSeries(idle, "energy_j");
  auto power = GpuSeries(idle, "power_w");
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
  void Add(const std::string& name, double value, const std::string& unit) {
    if (std::isfinite(value)) out_.push_back({name, value, unit});
  }

 private:
  std::vector<MetricRecord>& out_;
};

// The analysed rank's records: rank 0, or the lowest rank present.
std::vector<StepRecord> AnalysedSteps(const std::vector<store::StepRow>& rows) {
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

// Theil-Sen slope per step with a Mann-Kendall test; a leak when the trend is significant and
// even the CI's lower end exceeds the floor. Returns the verdict reason, or "" for none.
std::string Growth(const Series& s, const Window& w, const std::vector<StepRecord>& steps,
                   const std::string& metric, const std::string& label, Metrics& metrics,
                   nlohmann::json& info) {
  std::vector<double> x, y;
  for (const auto& p : s) {
    if (!w.Contains(p.t_ns)) continue;
    x.push_back(StepPosition(steps, p.t_ns));
    y.push_back(p.value);
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
  metrics.Add(metric, ts.slope, "bytes/step");
  metrics.Add(metric + "_ci_low", ts.slope_ci.low, "bytes/step");
  metrics.Add(metric + "_ci_high", ts.slope_ci.high, "bytes/step");
  const double floor = std::max(kLeakFloorBytesPerStep, kLeakFloorFractionPerStep * stats::Median(y));
  detail["slope_bytes_per_step"] = ts.slope;
  detail["ci_low"] = ts.slope_ci.low;
  detail["ci_high"] = ts.slope_ci.high;
  detail["mann_kendall_p"] = mk.p_value;
  detail["floor_bytes_per_step"] = floor;
  const bool leak = mk.p_value < kLeakMaxPValue && ts.slope_ci.low > floor;
  detail["leak"] = leak;
  info[metric] = detail;
  if (!leak) return "";
  return fmt::format("memory leak: {} grows {:.0f} B/step [CI {:.3g}, {:.3g}]", label, ts.slope,
                     ts.slope_ci.low, ts.slope_ci.high);
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
  auto events = GpuSeries(map, "clocks_event_reasons");
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
  metrics.Add("clocks_throttled_fraction", static_cast<double>(any_throttle) / static_cast<double>(total),
              "ratio");
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
std::string LowBusyCause(const std::vector<StepRecord>& steps, const Window& w) {
  double in_steps = 0, wait = 0, wait_base = 0, comm = 0, comm_base = 0, other = 0, other_base = 0;
  for (const auto& s : steps) {
    double d = static_cast<double>(s.end_ns - s.start_ns);
    in_steps += d;
    if (s.present & protocol::kHasDataWait) {
      wait += static_cast<double>(s.data_wait_ns);
      wait_base += d;
    }
    if (s.present & protocol::kHasComm) {
      comm += static_cast<double>(s.comm_ns);
      comm_base += d;
    }
    if (s.present & protocol::kHasCompute) {
      double known = static_cast<double>(s.compute_ns);
      if (s.present & protocol::kHasDataWait) known += static_cast<double>(s.data_wait_ns);
      if (s.present & protocol::kHasComm) known += static_cast<double>(s.comm_ns);
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
  return "cause not visible in the step records (no phase times, no gaps): small kernels or launch overhead "
         "are "
         "likely; profile a window of steps";
}

}  // namespace

const store::MetricRecord* CellAnalysis::Find(const std::string& name) const {
  for (const auto& m : metrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

CellAnalysis AnalyzeCell(const AnalysisInput& input) {
  CellAnalysis result;
  Metrics metrics(result.metrics);
  std::vector<StepRecord> all_steps = AnalysedSteps(input.steps);
  const auto warmup = static_cast<std::size_t>(std::max<std::int64_t>(0, input.warmup_steps));
  if (warmup >= all_steps.size()) {
    result.warnings.push_back("no measured steps: monitor metrics were not computed");
    return result;
  }
  std::size_t end = all_steps.size();
  if (input.measured_steps >= 0) end = std::min(end, warmup + static_cast<std::size_t>(input.measured_steps));
  if (end <= warmup) end = all_steps.size();
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
  auto pooled = [&](const std::string& reading) {
    std::vector<double> v;
    for (const auto& [index, series] : GpuSeries(map, reading)) {
      auto part = ValuesIn(*series, w);
      v.insert(v.end(), part.begin(), part.end());
    }
    return v;
  };
  const std::vector<double> util = pooled("sm_util_pct");
  const double util_mean = Mean(util);
  metrics.Add("gpu_util_mean_pct", util_mean, "%");
  if (!util.empty()) metrics.Add("gpu_util_p5_pct", stats::Quantile(util, 0.05), "%");
  metrics.Add("gpu_mem_util_mean_pct", Mean(pooled("mem_util_pct")), "%");
  metrics.Add("sm_clock_mean_mhz", Mean(pooled("sm_clock_mhz")), "MHz");
  metrics.Add("temp_max_c", MaxOf(pooled("temp_c")), "C");
  metrics.Add("pcie_tx_mean_bytes_per_s", Mean(pooled("pcie_tx_bytes_per_s")), "bytes/s");
  metrics.Add("pcie_rx_mean_bytes_per_s", Mean(pooled("pcie_rx_bytes_per_s")), "bytes/s");

  // Power: the total over the cell's GPUs per round.
  const auto power = GpuSeries(map, "power_w");
  std::vector<double> power_totals;
  for (const auto& p : SumPerRound(power, w)) power_totals.push_back(p.value);
  metrics.Add("power_mean_w", Mean(power_totals), "W");
  metrics.Add("power_max_w", MaxOf(power_totals), "W");

  // Energy: the driver's counter where every GPU has one, else integrated power.
  const auto energy = GpuSeries(map, "energy_j");
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
    metrics.Add("energy_total_j", *joules, "J");
    metrics.Add("energy_per_step_j", *joules / n_steps, "J");
    if (samples > 0) metrics.Add("energy_per_sample_j", *joules / samples, "J");
    if (!input.idle_series.empty()) {
      if (auto idle_w = IdlePowerW(GroupSeries(input.idle_series))) {
        double above = *joules - *idle_w * w.seconds();
        metrics.Add("idle_power_w", *idle_w, "W");
        metrics.Add("energy_above_idle_per_step_j", above / n_steps, "J");
        if (samples > 0) metrics.Add("energy_above_idle_per_sample_j", above / samples, "J");
      } else {
        result.warnings.push_back(
            "idle baseline has no usable power or energy readings; idle power not subtracted");
      }
    }
  }
  if (auto it = map.find("host.rapl_energy_j"); it != map.end()) {
    if (auto cpu_j = CounterDelta(it->second, w)) {
      metrics.Add("cpu_package_energy_per_step_j", *cpu_j / n_steps, "J");
      if (samples > 0) metrics.Add("cpu_package_energy_per_sample_j", *cpu_j / samples, "J");
    }
  }

  Throttling(map, w, input.power_cap_invalidates, metrics, result);

  // Host.
  if (auto it = map.find("host.cpu_util_pct"); it != map.end()) {
    metrics.Add("host_cpu_util_pct", Mean(ValuesIn(it->second, w)), "%");
  }
  if (auto it = map.find("proc.cpu_s"); it != map.end()) {
    if (auto cpu_s = CounterDelta(it->second, w))
      metrics.Add("proc_cpu_util_pct", 100 * *cpu_s / w.seconds(), "% of one core");
  }
  if (auto it = map.find("host.mem_used_bytes"); it != map.end()) {
    metrics.Add("host_mem_used_peak_bytes", MaxOf(ValuesIn(it->second, w)), "bytes");
  }
  std::vector<std::string> leaks;
  if (auto it = map.find("proc.rss_bytes"); it != map.end()) {
    metrics.Add("proc_rss_peak_bytes", MaxOf(ValuesIn(it->second, w)), "bytes");
    auto leak = Growth(it->second, w, steps, "rss_growth_bytes_per_step", "host RSS", metrics, result.info);
    if (!leak.empty()) result.verdict_reasons.push_back(leak);
  }

  // Device memory: whole-GPU use and the runner tree's own, summed over the cell's GPUs.
  std::vector<double> gpu_used;
  for (const auto& p : SumPerRound(GpuSeries(map, "mem_used_bytes"), w)) gpu_used.push_back(p.value);
  metrics.Add("gpu_mem_used_peak_bytes", MaxOf(gpu_used), "bytes");
  const auto proc_mem_by_gpu = GpuSeries(map, "proc_mem_bytes");
  if (!proc_mem_by_gpu.empty()) {
    Window all{std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()};
    Series proc_mem = SumPerRound(proc_mem_by_gpu, all);
    std::vector<double> values = ValuesIn(proc_mem, w);
    metrics.Add("device_proc_mem_peak_bytes", MaxOf(values), "bytes");
    auto leak =
        Growth(proc_mem, w, steps, "device_mem_growth_bytes_per_step", "device memory", metrics, result.info);
    if (!leak.empty()) result.verdict_reasons.push_back(leak);
  }

  if (input.scenario == Scenario::kTrain && !util.empty() && util_mean < kTrainingMinGpuBusyPct) {
    result.warnings.push_back(
        fmt::format("GPU busy {:.0f}% of the measured window (below {:.0f}% for training); {}", util_mean,
                    kTrainingMinGpuBusyPct, LowBusyCause(steps, w)));
  }
  return result;
}

}  // namespace dlbench::monitor
