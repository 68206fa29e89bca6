#include "orchestrator/cell_metrics.h"

#include <fmt/core.h>

#include <cmath>

#include "record/metrics.h"

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

void ApplyVerdict(const measure::Outcome& measured, const config::MeasureSettings& settings,
                  record::CellRecord& rec) {
  nlohmann::json reasons = nlohmann::json::array();
  const double rel = measured.summary.ci_rel_halfwidth;
  if (!std::isfinite(rel)) {
    reasons.push_back("noisy: too few steps for a confidence interval of the mean");
  } else if (rel > settings.target_rel_ci) {
    reasons.push_back(fmt::format("noisy: CI half-width {:.2f}% of the mean > target {:.2f}% (stopped: {})",
                                  100 * rel, 100 * settings.target_rel_ci, measured.stop_reason));
  }
  for (const auto& r : rec.verdict_reasons) reasons.push_back(r);  // e.g. from the monitor analysis
  rec.verdict_reasons = reasons;
  rec.verdict = reasons.empty() ? record::Verdict::kValid : record::Verdict::kInvalid;
}

}  // namespace dlbench::orchestrator
