// The verdict of a scenario: converge cell (docs/convergence.md). Its measured window is the
// whole training, so the step-time verdicts (confidence interval, stability) do not judge it; what
// does is whether the target was reached. The monitor's reasons (throttled, contended, leaking)
// still apply.
#pragma once

#include "record/records.h"

namespace dlbench::orchestrator {

// Sets rec.verdict and rec.verdict_reasons from the runner's converge metrics and
// extras.info.converge: a "not_reached: ..." reason naming the target, why training ended and the
// best quality when the target_reached metric is not 1 (or is missing), then the monitor
// analysis's reasons already in rec.verdict_reasons.
void ApplyConvergeVerdict(record::CellRecord& rec);

// Moves the curves the runner sent in extras.info.converge.curves ({"train.loss": {"t_ns": [...],
// "value": [...], "per_point": n}, ...}; the names of record::series::kConvergeCurves) into
// rec.series, leaving extras.info.converge.curve_points (points and raw values per point of each
// curve). A curve whose arrays are not integers and numbers of one length is dropped with a
// warning in extras.warnings; unknown names are dropped with a warning too.
void AbsorbConvergeCurves(record::CellRecord& rec);

}  // namespace dlbench::orchestrator
