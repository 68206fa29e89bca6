#include "orchestrator/cell_metrics.h"

#include <fmt/core.h>

#include <cmath>

namespace dlbench::orchestrator {

void SetMetric(store::CellRecord& rec, const std::string& name, double value, const std::string& unit) {
  for (auto& m : rec.metrics) {
    if (m.name == name) {
      m.value = value;
      m.unit = unit;
      return;
    }
  }
  rec.metrics.push_back({name, value, unit});
}

const store::MetricRecord* FindMetric(const store::CellRecord& rec, const std::string& name) {
  for (const auto& m : rec.metrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

void AbsorbExtras(const nlohmann::json& extras, store::CellRecord& rec) {
  if (extras.contains("metrics") && extras["metrics"].is_array()) {
    for (const auto& m : extras["metrics"]) {
      if (!m.is_object() || !m.contains("name") || !m.contains("value") || !m["value"].is_number()) continue;
      SetMetric(rec, m["name"].get<std::string>(), m["value"].get<double>(), m.value("unit", std::string()));
    }
  }
  if (extras.contains("info") && extras["info"].is_object()) {
    for (const auto& [k, v] : extras["info"].items()) rec.extras["info"][k] = v;
  }
}

namespace {

void AddMemoryMetrics(store::CellRecord& rec) {
  if (!rec.extras.contains("memory")) return;
  for (const auto& snap : rec.extras["memory"]) {
    const std::string label = snap.value("label", std::string("end"));
    for (const auto& [k, v] : snap.items()) {
      if (!v.is_number() || k.size() < 6 || k.compare(k.size() - 6, 6, "_bytes") != 0) continue;
      // The final snapshot's figures carry plain names; earlier ones are prefixed by their label.
      SetMetric(rec, label == "end" ? k : label + "_" + k, v.get<double>(), "bytes");
    }
  }
}

}  // namespace

void AddTimelineMetrics(const CellTimeline& t, std::int64_t warmup_steps, store::CellRecord& rec) {
  auto seconds = [](std::int64_t from, std::int64_t to) { return static_cast<double>(to - from) * 1e-9; };
  if (t.spawn_ns <= 0) return;
  if (t.hello_ns > 0) SetMetric(rec, "time_to_hello_s", seconds(t.spawn_ns, t.hello_ns), "s");
  if (t.exit_ns > 0) SetMetric(rec, "cell_wall_s", seconds(t.spawn_ns, t.exit_ns), "s");
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
  if (t.hello_ns > 0 && setup_end > 0) SetMetric(rec, "setup_s", seconds(t.hello_ns, setup_end), "s");
  if (measured_start == 0) return;  // no measured step
  SetMetric(rec, "warmup_s", seconds(first_start, measured_start), "s");
  SetMetric(rec, "time_to_measure_s", seconds(t.spawn_ns, measured_start), "s");
}

void AddStepMetrics(const measure::Outcome& measured, store::CellRecord& rec) {
  const measure::StepSummary& s = measured.summary;
  SetMetric(rec, "warmup_steps", static_cast<double>(measured.warmup_steps), "steps");
  SetMetric(rec, "measured_steps", static_cast<double>(s.steps), "steps");
  if (s.steps > 0) {
    SetMetric(rec, "measured_window_s", s.window_s, "s");
    SetMetric(rec, "samples_per_s", s.samples_per_s, "1/s");
    SetMetric(rec, "steps_per_s", s.steps_per_s, "1/s");
    SetMetric(rec, "step_time_mean_ns", s.mean_ns, "ns");
    SetMetric(rec, "step_time_median_ns", s.median_ns, "ns");
    SetMetric(rec, "step_time_min_ns", s.min_ns, "ns");
    SetMetric(rec, "step_time_max_ns", s.max_ns, "ns");
    SetMetric(rec, "step_time_p50_ns", s.p50_ns, "ns");
    SetMetric(rec, "step_time_p90_ns", s.p90_ns, "ns");
    SetMetric(rec, "step_time_p95_ns", s.p95_ns, "ns");
    SetMetric(rec, "step_time_p99_ns", s.p99_ns, "ns");
    if (std::isfinite(s.stddev_ns)) {
      SetMetric(rec, "step_time_stddev_ns", s.stddev_ns, "ns");
      SetMetric(rec, "step_time_cv", s.cv, "ratio");
    }
    if (std::isfinite(s.ci_low_ns) && std::isfinite(s.ci_high_ns)) {
      SetMetric(rec, "step_time_ci_low_ns", s.ci_low_ns, "ns");
      SetMetric(rec, "step_time_ci_high_ns", s.ci_high_ns, "ns");
      SetMetric(rec, "step_time_ci_rel_halfwidth", s.ci_rel_halfwidth, "ratio");
    }
    if (const auto* flops = FindMetric(rec, "flops_per_sample"); flops != nullptr && flops->value > 0) {
      const double achieved = flops->value * s.samples_per_s;
      SetMetric(rec, "achieved_flops_per_s", achieved, "FLOP/s");
      if (const auto* peak = FindMetric(rec, "peak_flops_per_s"); peak != nullptr && peak->value > 0) {
        SetMetric(rec, "mfu_ratio", achieved / peak->value, "ratio");
      }
    }
  }
  AddMemoryMetrics(rec);
}

void ApplyVerdict(const measure::Outcome& measured, const config::MeasureSettings& settings,
                  store::CellRecord& rec) {
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
  rec.verdict = reasons.empty() ? "valid" : "invalid";
}

}  // namespace dlbench::orchestrator
