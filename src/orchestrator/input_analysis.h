// The input-bound verdict of a finished cell (R7; docs/input-pipeline.md "The verdict"): the
// orchestrator's side of monitor/input_verdict.h. A cell whose data is not `device` is compared
// with its control (plan::Cell::input_control_id, the same cell with data: device, which the plan
// runs earlier in the same run): the figures become metrics (record::metric::kInput*) and the
// conclusion, its reasons and advice go to extras[record::kInputVerdictExtrasKey]. When no conclusion can be
// drawn (the control did not run here, failed, or measured nothing), extras["input_verdict"] says
// why and no metric is set: a missing verdict is stated, never a silent compute-bound.
#pragma once

#include <string>

#include "record/records.h"

namespace dlbench::orchestrator {

// `control` is the control's record (steps and series need not be loaded), or nullptr when it is
// not at hand; `control_id` names it in messages. `cell` needs its steps and series (a record
// straight from RunCell has them). A cell that did not end ok is left as it is.
// `pipeline_id` names the cell's pipeline_only twin (plan::Cell::input_pipeline_id; empty when the
// matrix has none) and `pipeline` is its record, or nullptr: an ok twin's samples_per_s is the
// pipeline's own rate, which the rule sets against the control's (extras: `pipeline_cell`,
// `pipeline_samples_per_s`); a twin that is named but unusable is a stated reason, and the verdict
// is drawn without it.
void AddInputVerdict(record::CellRecord& cell, const record::CellRecord* control,
                     const std::string& control_id, const record::CellRecord* pipeline = nullptr,
                     const std::string& pipeline_id = {});

}  // namespace dlbench::orchestrator
