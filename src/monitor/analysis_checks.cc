// The throttle, contention and low-GPU-busy checks of a cell's analysis (analysis_parts.h), and
// ExplainChange (analysis.h): what the clocks event reasons, the host's and the runner's CPU time,
// the other processes on the cell's GPUs and the step records' phases say about a cell.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "monitor/analysis_parts.h"
#include "monitor/nvml_sampler.h"
#include "record/metrics.h"
#include "record/series.h"

namespace dlbench::monitor {
namespace analysis_parts {
namespace {

using record::StepRecord;
namespace metric = record::metric;
namespace series = record::series;

// A cause of low GPU busy time is named when it takes at least this share of the time.
constexpr double kMinCauseFraction = 0.10;

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

}  // namespace

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

namespace {

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

void Contention(const SeriesMap& map, const Window& w, const std::string& busiest_elsewhere, Metrics& metrics,
                CellAnalysis& result) {
  const auto other = OtherCores(map, w);
  if (other) metrics.Add(metric::kHostCpuOtherCores, *other);
  if (const auto wait = RunqueueWaitRatio(map, w)) {
    metrics.Add(metric::kRunnerCpuWaitRatio, *wait);
    if (*wait >= kContendedWaitRatio) {
      std::string busy;
      if (other && *other >= kContendedCores)
        busy = fmt::format("; {:.2f} CPU cores were busy outside the runner", *other);
      if (!busiest_elsewhere.empty()) busy += "; busiest elsewhere: " + busiest_elsewhere;
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
}

void LowGpuBusy(const SeriesMap& map, const Window& w, const std::vector<StepRecord>& steps,
                const std::vector<double>& util, double util_mean, Scenario scenario, CellAnalysis& result) {
  if (util.empty() || !(util_mean < kTrainingMinGpuBusyPct)) return;
  std::optional<double> runner_cores;
  if (auto it = map.find(std::string(series::kProcCpuS)); it != map.end()) {
    if (auto cpu_s = CounterDelta(it->second, w)) runner_cores = *cpu_s / w.seconds();
  }
  // A cause the step records show (data wait, communication, gaps) comes first: an input
  // pipeline's workers in the runner's process also keep its CPU busy.
  std::string cause = LowBusyCause(steps, w);
  if (cause.empty()) cause = HostFinding(util_mean, runner_cores, result.info);
  if (scenario == Scenario::kTrain) {
    result.warnings.push_back(
        fmt::format("GPU busy {:.0f}% of the measured window (below {:.0f}% for training); {}", util_mean,
                    kTrainingMinGpuBusyPct, cause.empty() ? kCauseNotVisible : cause));
  } else if (!cause.empty()) {
    result.warnings.push_back(fmt::format("GPU busy {:.0f}% of the measured window; {}", util_mean, cause));
  }
}

}  // namespace analysis_parts

namespace series = record::series;
using analysis_parts::GpuSeries;
using analysis_parts::GroupSeries;
using analysis_parts::Mean;
using analysis_parts::OtherCores;
using analysis_parts::SeriesMap;
using analysis_parts::ValuesIn;
using analysis_parts::Window;

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
