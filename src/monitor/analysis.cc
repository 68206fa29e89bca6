// A cell's analysis (analysis.h, AnalyzeCell): the measured window, then utilisation, clocks,
// power, energy, host and memory metrics, with the growth test and the checks of analysis_parts.h.
#include "monitor/analysis.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "monitor/analysis_parts.h"
#include "record/metrics.h"
#include "record/series.h"
#include "stats/descriptive.h"

namespace dlbench::monitor {
namespace {

using record::StepRecord;
namespace metric = record::metric;
namespace series = record::series;
using analysis_parts::Contention;
using analysis_parts::CounterDelta;
using analysis_parts::CounterEnergy;
using analysis_parts::GpuSeries;
using analysis_parts::GroupSeries;
using analysis_parts::Growth;
using analysis_parts::Integrate;
using analysis_parts::LowGpuBusy;
using analysis_parts::MaxOf;
using analysis_parts::Mean;
using analysis_parts::Metrics;
using analysis_parts::Series;
using analysis_parts::SeriesMap;
using analysis_parts::SumPerRound;
using analysis_parts::Throttling;
using analysis_parts::ValuesIn;
using analysis_parts::Window;

// Mean power over a span of samples (the idle baseline): from the counters when every GPU has
// one, else the mean of the summed power readings.
std::optional<double> IdlePowerW(const SeriesMap& idle) {
  auto energy = GpuSeries(idle, series::kEnergyJ);
  auto power = GpuSeries(idle, series::kPowerW);
  double watts = 0;
  bool any = false;
  // The counter is read on some rounds only (SamplerOptions::energy_every_n_samples): a span with
  // fewer than two readings of a GPU's counter takes the power readings' mean instead.
  bool counters = !energy.empty();
  for (const auto& [index, series] : energy) {
    if (series->size() < 2 || series->back().t_ns <= series->front().t_ns) {
      counters = false;
      break;
    }
    Window span{series->front().t_ns, series->back().t_ns};
    auto delta = CounterDelta(*series, span);
    if (!delta) return std::nullopt;
    watts += *delta / span.seconds();
    any = true;
  }
  if (counters) return any ? std::optional<double>(watts) : std::nullopt;
  watts = 0;
  any = false;
  for (const auto& [index, series] : power) {
    std::vector<double> v;
    for (const auto& p : *series) v.push_back(p.value);
    if (v.empty()) continue;
    watts += Mean(v);
    any = true;
  }
  return any ? std::optional<double>(watts) : std::nullopt;
}

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
      // Read on some rounds only: the counter between its readings in the window, power at the edges.
      const auto gpu_power = power.find(index);
      auto delta =
          gpu_power == power.end() ? CounterDelta(*series, w) : CounterEnergy(*series, *gpu_power->second, w);
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
  Contention(map, w, input.busiest_elsewhere, metrics, result);
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

  LowGpuBusy(map, w, steps, util, util_mean, input.scenario, result);
  return result;
}

}  // namespace dlbench::monitor
