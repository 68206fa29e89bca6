#include "orchestrator/cell_metrics.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cmath>

#include "common/human_text.h"
#include "monitor/analysis.h"
#include "record/metrics.h"
#include "stats/stability.h"

namespace dlbench::orchestrator {

namespace {

using record::FindMetricDef;
using record::MetricDef;
using record::Producer;
using record::SetMetric;
namespace metric = record::metric;

// Once per name: a runner that sends the same wrong metric in every cell of a run gets one line.
void WarnOnce(record::CellRecord& rec, const std::string& text) {
  nlohmann::json& warnings = rec.extras["warnings"];
  if (!warnings.is_array()) warnings = nlohmann::json::array();
  for (const auto& w : warnings) {
    if (w.is_string() && w.get<std::string>() == text) return;
  }
  warnings.push_back(text);
}

// Kept for the record but out of the metrics table, so no consumer can come to depend on a name
// that is not declared (record/metrics.h).
void KeepUndeclared(record::CellRecord& rec, const std::string& name, double value, const std::string& unit,
                    const std::string& why) {
  rec.extras["undeclared_metrics"].push_back({{"name", name}, {"value", value}, {"unit", unit}});
  WarnOnce(rec, fmt::format("the runner's metric '{}' was not stored as a metric: {} (see `dlbench metrics`)",
                            name, why));
}

}  // namespace

void AbsorbExtras(const nlohmann::json& extras, record::CellRecord& rec) {
  if (!extras.is_object()) return;
  if (auto it = extras.find("metrics"); it != extras.end() && it->is_array()) {
    for (const auto& m : *it) {
      if (!m.is_object()) continue;
      auto name = m.find("name");
      auto value = m.find("value");
      auto unit_it = m.find("unit");
      if (name == m.end() || !name->is_string() || value == m.end() || !value->is_number()) continue;
      const std::string n = name->get<std::string>();
      const std::string unit = unit_it != m.end() && unit_it->is_string() ? unit_it->get<std::string>() : "";
      const MetricDef* def = FindMetricDef(n);
      if (def == nullptr) {
        KeepUndeclared(rec, n, value->get<double>(), unit, "no such metric is declared");
      } else if (def->producer != Producer::kRunner) {
        KeepUndeclared(rec, n, value->get<double>(), unit,
                       fmt::format("dlbench's {} computes it", record::Name(def->producer)));
      } else if (!unit.empty() && unit != def->unit) {
        KeepUndeclared(rec, n, value->get<double>(), unit,
                       fmt::format("its unit '{}' is not the declared '{}'", unit, def->unit));
      } else {
        SetMetric(rec, n, value->get<double>());
      }
    }
  }
  if (auto it = extras.find("info"); it != extras.end() && it->is_object()) {
    for (const auto& [k, v] : it->items()) rec.extras["info"][k] = v;
  }
}

namespace {

void AddMemoryMetrics(record::CellRecord& rec) {
  auto snapshots = rec.extras.find("memory");
  if (snapshots == rec.extras.end() || !snapshots->is_array()) return;
  for (const auto& snap : *snapshots) {
    if (!snap.is_object()) continue;
    auto label_it = snap.find(record::memory::kLabel);
    const std::string label = label_it != snap.end() && label_it->is_string()
                                  ? label_it->get<std::string>()
                                  : std::string(record::memory::kEndLabel);
    for (const auto& [k, v] : snap.items()) {
      if (!v.is_number() || k.size() < 6 || k.compare(k.size() - 6, 6, "_bytes") != 0) continue;
      const MetricDef* def = FindMetricDef(k);
      if (def == nullptr || def->producer != Producer::kRunnerMemory) {
        WarnOnce(rec,
                 fmt::format("the runner's MEMORY field '{}' is not a declared memory field; it is kept in "
                             "extras.memory only (see `dlbench metrics`)",
                             k));
        continue;
      }
      SetMetric(rec, record::MemoryMetricName(label, k), v.get<double>());
    }
  }
}

}  // namespace

void AddTimelineMetrics(const CellTimeline& t, std::int64_t warmup_steps, record::CellRecord& rec) {
  auto seconds = [](std::int64_t from, std::int64_t to) { return static_cast<double>(to - from) * 1e-9; };
  if (t.spawn_ns <= 0) return;
  if (t.hello_ns > 0) SetMetric(rec, metric::kTimeToHelloS, seconds(t.spawn_ns, t.hello_ns));
  if (t.exit_ns > 0) SetMetric(rec, metric::kCellWallS, seconds(t.spawn_ns, t.exit_ns));
  std::int64_t first_start = 0;
  std::int64_t measured_start = 0;
  std::int64_t seen = 0;
  for (const auto& row : rec.steps) {
    if (row.rank != 0) continue;
    if (seen == 0) first_start = row.record.start_ns;
    if (seen == std::max<std::int64_t>(warmup_steps, 0)) {
      measured_start = row.record.start_ns;
      break;
    }
    ++seen;
  }
  // Setup ends where stepping begins (the READY frame is read concurrently with the first steps).
  const std::int64_t setup_end = first_start > 0 ? first_start : t.ready_ns;
  if (t.hello_ns > 0 && setup_end > 0) SetMetric(rec, metric::kSetupS, seconds(t.hello_ns, setup_end));
  if (measured_start == 0) return;  // no measured step
  SetMetric(rec, metric::kWarmupS, seconds(first_start, measured_start));
  SetMetric(rec, metric::kTimeToMeasureS, seconds(t.spawn_ns, measured_start));
}

void AddStepMetrics(const measure::Outcome& measured, record::CellRecord& rec) {
  const measure::StepSummary& s = measured.summary;
  rec.window = measured.Window();
  SetMetric(rec, metric::kWarmupSteps, static_cast<double>(measured.warmup_steps));
  SetMetric(rec, metric::kMeasuredSteps, static_cast<double>(s.steps));
  if (s.steps > 0) {
    SetMetric(rec, metric::kMeasuredWindowS, s.window_s);
    SetMetric(rec, metric::kSamplesPerS, s.samples_per_s);
    SetMetric(rec, metric::kStepsPerS, s.steps_per_s);
    SetMetric(rec, metric::kStepTimeMeanNs, s.mean_ns);
    SetMetric(rec, metric::kStepTimeMedianNs, s.median_ns);
    SetMetric(rec, metric::kStepTimeMinNs, s.min_ns);
    SetMetric(rec, metric::kStepTimeMaxNs, s.max_ns);
    SetMetric(rec, metric::kStepTimeP50Ns, s.p50_ns);
    SetMetric(rec, metric::kStepTimeP90Ns, s.p90_ns);
    SetMetric(rec, metric::kStepTimeP95Ns, s.p95_ns);
    SetMetric(rec, metric::kStepTimeP99Ns, s.p99_ns);
    if (std::isfinite(s.stddev_ns)) {
      SetMetric(rec, metric::kStepTimeStddevNs, s.stddev_ns);
      SetMetric(rec, metric::kStepTimeCv, s.cv);
    }
    if (std::isfinite(s.ci_low_ns) && std::isfinite(s.ci_high_ns)) {
      SetMetric(rec, metric::kStepTimeCiLowNs, s.ci_low_ns);
      SetMetric(rec, metric::kStepTimeCiHighNs, s.ci_high_ns);
      SetMetric(rec, metric::kStepTimeCiRelHalfwidth, s.ci_rel_halfwidth);
    }
    AddFlopsMetrics(rec);
  }
  AddMemoryMetrics(rec);
}

void AddFlopsMetrics(record::CellRecord& rec) {
  const auto flops = record::MetricValue(rec, metric::kFlopsPerSample);
  const auto samples_per_s = record::MetricValue(rec, metric::kSamplesPerS);
  if (!flops || *flops <= 0 || !samples_per_s) return;
  const double achieved = *flops * *samples_per_s;
  SetMetric(rec, metric::kAchievedFlopsPerS, achieved);
  if (const auto peak = record::MetricValue(rec, metric::kPeakFlopsPerS); peak && *peak > 0) {
    SetMetric(rec, metric::kMfuRatio, achieved / *peak);
  }
}

namespace {

// The stability verdict of the measured window (stats/stability.h), with the monitor's view of
// what changed between the spans it compares. Stores the figures in extras.stability; returns a
// reason, or "" when the window is stable or too short to judge (noted in extras).
std::string StabilityReason(const config::MeasureSettings& settings, record::CellRecord& rec) {
  const std::vector<record::StepRecord> steps = record::MeasuredSteps(rec);
  std::vector<double> values, times;
  values.reserve(steps.size());
  times.reserve(steps.size());
  for (const auto& r : steps) {
    values.push_back(static_cast<double>(r.end_ns - r.start_ns));
    times.push_back(static_cast<double>(r.start_ns) * 1e-9);
  }
  stats::StabilitySettings ss;
  ss.min_rel_change = std::max(kMinStabilityChange, 2 * settings.target_rel_ci);
  const stats::StabilityResult st = stats::AssessStability(values, times, ss);
  nlohmann::json& info = rec.extras["stability"];
  info = {{"batches", st.batches},
          {"trend_p", st.trend_p},
          {"shift_p", st.shift_p},
          {"min_rel_change", ss.min_rel_change}};
  if (st.kind == stats::Stability::kTooShort) {
    info["skipped"] = fmt::format("fewer than {} batches of 5 measured steps ({})", ss.min_batches,
                                  CountNoun(static_cast<std::int64_t>(steps.size()), "step"));
    return "";
  }
  if (st.kind == stats::Stability::kStable) return "";
  const std::int64_t start = steps.front().start_ns, end = steps.back().end_ns;
  std::vector<std::string> causes;
  std::string what;
  if (st.kind == stats::Stability::kDrifting) {
    const std::int64_t tenth = std::max<std::int64_t>(1, (end - start) / 10);
    causes = monitor::ExplainChange(rec.series, start, start + tenth, end - tenth, end);
    info["slope_rel_per_s"] = st.slope_rel_per_s;
    info["first_tenth_mean_ns"] = st.first_tenth_mean;
    info["last_tenth_mean_ns"] = st.last_tenth_mean;
    what = fmt::format(
        "drifting: step time moved {:+.2f} %/s over the {:.1f} s window (first tenth {}, last tenth {})",
        100 * st.slope_rel_per_s, (end - start) * 1e-9, HumanDurationNs(st.first_tenth_mean),
        HumanDurationNs(st.last_tenth_mean));
  } else {
    const std::int64_t at = steps[st.shift_step].start_ns;
    causes = monitor::ExplainChange(rec.series, start, at, at, end);
    info["shift_step"] = st.shift_step;
    info["level_before_ns"] = st.level_before;
    info["level_after_ns"] = st.level_after;
    what = fmt::format("shifted: step time changed at measured step {} ({:.1f} s in) from {} to {}",
                       st.shift_step, (at - start) * 1e-9, HumanDurationNs(st.level_before),
                       HumanDurationNs(st.level_after));
  }
  what += causes.empty() ? "; no clock, power or host-load change explains it (a framework effect: "
                           "allocator, autotuning, host-bound launches?)"
                         : "; likely cause: " + fmt::format("{}", fmt::join(causes, ", "));
  return what;
}

// How long max_time_s would have to be for `needed` measured steps, from the pace so far.
double SecondsFor(double needed_steps, const measure::StepSummary& s) {
  return s.steps > 0 && s.window_s > 0 ? s.window_s / static_cast<double>(s.steps) * needed_steps : NAN;
}

}  // namespace

void ApplyVerdict(const measure::Outcome& measured, const config::MeasureSettings& settings,
                  record::CellRecord& rec) {
  std::vector<std::string> reasons;
  const measure::StepSummary& s = measured.summary;
  const double rel = s.ci_rel_halfwidth;
  if (!std::isfinite(rel)) {
    const double needed = std::max<double>(kMinStepsForInterval, static_cast<double>(settings.min_steps));
    const double seconds = SecondsFor(needed * config::kWarmupCutMargin, s);
    reasons.push_back(fmt::format(
        "too_short: {}; a confidence interval needs {} (batch means){}",
        CountNoun(static_cast<std::int64_t>(s.steps), "measured step"), kMinStepsForInterval,
        std::isfinite(seconds) ? fmt::format("; raise max_time_s to about {:.0f} s", std::ceil(seconds + 1))
                               : ""));
  } else if (rel > settings.target_rel_ci) {
    // The half-width shrinks with the square root of the measured time.
    const double seconds = s.window_s * (rel / settings.target_rel_ci) * (rel / settings.target_rel_ci);
    reasons.push_back(fmt::format(
        "noisy: CI half-width {:.2f}% of the mean > target {:.2f}% (stopped: {}); at this noise about {:.0f} "
        "s "
        "of measurement would reach it: raise max_time_s, add repetitions, loosen target_rel_ci, or quiet "
        "the machine",
        100 * rel, 100 * settings.target_rel_ci, measured.stop_reason, std::ceil(seconds)));
  }
  if (std::string stability = StabilityReason(settings, rec); !stability.empty())
    reasons.push_back(stability);
  for (const auto& r : rec.verdict_reasons) {  // from the monitor analysis
    if (r.is_string()) reasons.push_back(r.get<std::string>());
  }
  rec.verdict_reasons = reasons;
  rec.verdict = record::HeadlineVerdict(reasons);
}

}  // namespace dlbench::orchestrator
