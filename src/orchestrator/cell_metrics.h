// Turning what a cell produced (step records, runner extras, memory snapshots, monitor series)
// into stored metrics and a verdict. Pure functions over a CellRecord; no I/O.
#pragma once

#include <nlohmann/json.hpp>

#include "config/matrix.h"
#include "measure/policy.h"
#include "store/result_store.h"

namespace dlbench::orchestrator {

// Merges a runner's EXTRAS message: "metrics" [{name, value, unit}] become metrics, "info" is kept
// in extras.info.
void AbsorbExtras(const nlohmann::json& extras, store::CellRecord& rec);

// Step-time summary metrics (step_time_*_ns, samples_per_s, ...) plus metrics derived from the
// runner's extras (achieved FLOP/s, MFU) and its memory snapshots.
void AddStepMetrics(const measure::Outcome& measured, store::CellRecord& rec);

// Sets verdict and verdict_reasons for a cell that ran to completion: noisy (CI target not met),
// plus whatever the monitor analysis of its series finds (throttling, leaks) and its warnings.
void ApplyVerdict(const measure::Outcome& measured, const config::MeasureSettings& settings,
                  store::CellRecord& rec);

// Adds or replaces a metric by name.
void SetMetric(store::CellRecord& rec, const std::string& name, double value, const std::string& unit);
const store::MetricRecord* FindMetric(const store::CellRecord& rec, const std::string& name);

}  // namespace dlbench::orchestrator
