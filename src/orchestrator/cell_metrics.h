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

// Moments of a cell's life on the orchestrator's clock (CLOCK_MONOTONIC, the step records'
// clock); 0 = did not happen.
struct CellTimeline {
  std::int64_t spawn_ns = 0;  // the runner process was started
  std::int64_t hello_ns = 0;  // its HELLO arrived (process start, library loading)
  std::int64_t ready_ns = 0;  // its READY arrived (device initialisation, model build)
  std::int64_t exit_ns = 0;   // the process had exited
};

// Where a cell's wall time went, as metrics (seconds): time_to_hello_s, setup_s (HELLO to the first
// step's start, or to READY without steps: device initialisation, model build), warmup_s (first step start to
// first measured step start: warm-up steps, cuDNN autotuning), time_to_measure_s (spawn to first measured
// step) and cell_wall_s (spawn to exit). Rank 0's steps; a moment that did not happen leaves its metrics out.
void AddTimelineMetrics(const CellTimeline& t, std::int64_t warmup_steps, store::CellRecord& rec);

// Adds or replaces a metric by name.
void SetMetric(store::CellRecord& rec, const std::string& name, double value, const std::string& unit);
const store::MetricRecord* FindMetric(const store::CellRecord& rec, const std::string& name);

}  // namespace dlbench::orchestrator
