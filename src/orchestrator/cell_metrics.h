// Turning what a cell produced (step records, runner extras, memory snapshots, monitor series)
// into stored metrics and a verdict. Pure functions over a CellRecord; no I/O.
#pragma once

#include <nlohmann/json.hpp>

#include "config/matrix.h"
#include "measure/policy.h"
#include "store/result_store.h"

namespace dlbench::orchestrator {

// Merges a runner's EXTRAS message: "metrics" [{name, value, unit}] whose name is a declared
// runner metric (record/metrics.h) with its declared unit (or none) become metrics; any other is
// kept in extras.undeclared_metrics with a warning naming it, so a misspelt producer shows up
// instead of silently feeding nothing. "info" is kept in extras.info. Entries of the wrong shape
// are ignored.
void AbsorbExtras(const nlohmann::json& extras, record::CellRecord& rec);

// Stores the measured window (rec.window) and its step-time summary metrics (step_time_*_ns,
// samples_per_s, ...), then the metrics derived from the runner's extras (AddFlopsMetrics) and its
// memory snapshots (declared MEMORY fields; others warned about once).
void AddStepMetrics(const measure::Outcome& measured, record::CellRecord& rec);

// achieved_flops_per_s = flops_per_sample x samples_per_s, and mfu_ratio = achieved /
// peak_flops_per_s when the runner sent the device's peak. Nothing without flops_per_sample.
void AddFlopsMetrics(record::CellRecord& rec);

// Sets verdict and verdict_reasons for a cell that ran to completion (docs/verdicts.md): too_short
// (no interval: fewer than kMinStepsForInterval measured steps) or noisy (the interval missed its
// target), each with the max_time_s that would have reached it; drifting or shifted (the measured
// window's stability test, with the monitor's likely cause; figures in extras.stability, or why it
// was skipped); plus whatever the monitor analysis found (throttled, leaking, contended), already
// in rec.verdict_reasons. Every reason starts with its verdict's name; the cell's verdict is
// record::HeadlineVerdict of them. Reads rec.steps and rec.series (still loaded in the orchestrator).
using config::kMinStepsForInterval;
// The smallest drift or shift the verdict reports: 1% of the mean, or the interval's full width
// (2 x target_rel_ci) when that is wider, so a movement the interval would absorb is not called one.
inline constexpr double kMinStabilityChange = 0.01;
void ApplyVerdict(const measure::Outcome& measured, const config::MeasureSettings& settings,
                  record::CellRecord& rec);

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
void AddTimelineMetrics(const CellTimeline& t, std::int64_t warmup_steps, record::CellRecord& rec);

}  // namespace dlbench::orchestrator
