// Measuring again (measure.retry_disturbed; docs/measurement.md "Measuring again"): a cell that
// ended ok with a verdict saying the machine disturbed it runs again, up to N more times, and the
// record stored is the first attempt that was not disturbed, else the last. Every attempt's
// outcome, verdict, reasons and headline figures are kept in the stored record's extras.attempts,
// so a retried cell says what happened to it: record::kAttemptsExtrasKey, {"stored": k, "allowed":
// N + 1, "every_attempt_disturbed": bool, "list": [AttemptSummary of each attempt, in order]}, written only
// when more than one ran.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>

#include "orchestrator/boundary_cell.h"
#include "orchestrator/cell_runner.h"
#include "plan/plan.h"
#include "record/outcome.h"
#include "record/records.h"

namespace dlbench::orchestrator {

// Whether this verdict says the machine disturbed the measurement, so that measuring again may
// give a usable one: `contended` (other work took the runner's CPUs or GPU), `shifted` and
// `drifting` (the step time moved within the window). Not the verdicts about too little data
// (`noisy`, `too_short`: a longer window is their remedy), nor the cell's own behaviour
// (`leaking`), nor `throttled` (the GPU's clocks fall under the cell's own heat and power, which an
// immediate re-run meets again), nor a load or converge cell's verdicts.
bool IsDisturbed(record::Verdict verdict);

// What RunWithRetries says before it measures a cell again: attempt `attempt` of `allowed` starts
// because `before` (the attempt before it, as its record ended) was disturbed.
struct RetryStart {
  int attempt = 0;
  int allowed = 0;
  const record::CellRecord& before;
};
using OnRetryFn = std::function<void(const RetryStart&)>;

// Runs the cell with `run_cell` (RunCell or RunBoundarySearch), and again while its record ended
// ok with a disturbed verdict, up to `retries` more times: attempt k > 1 has options.attempt = k
// and its logs under the suffix ".attempt-k", and `on_retry` (when set) is called just before it.
// A cell plan::RetryRefusal names runs once. An attempt that ends interrupted (Ctrl-C) is returned
// at once, without the earlier ones (the cell is not stored, and --resume measures it from its
// first attempt).
record::CellRecord RunWithRetries(const plan::Cell& cell, const CellRunOptions& options, int retries,
                                  const RunCellFn& run_cell, const OnRetryFn& on_retry = nullptr);

// One attempt's summary, as extras.attempts.list holds it.
nlohmann::json AttemptSummary(const record::CellRecord& rec, int attempt);

}  // namespace dlbench::orchestrator
