// The cross-key rules of inference under load (docs/load.md "Validity") and of convergence: which load keys
// apply to which scenario, and what a scenario needs. Each key's own type and range are the registry's; these
// rules need a whole cell, so they are checked per cell of the expanded matrix (plan::Expand) and reported as
// config errors at the key that breaks them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "config/matrix.h"

namespace dlbench::config {

struct LoadRuleViolation {
  std::string key;      // the key to point at ("target_qps"; "load" for what the scenario lacks)
  std::string message;  // "applies only with load: server (this cell's load is single_stream)"
};

// Every rule one cell's parameters (as written: before defaults) break; empty when none:
//  - a load key (target_qps, ..., input_residency) without `load`;
//  - `load` without `scenario: infer`;
//  - a key that applies to other scenarios only (target_qps, latency_bound_ms, max_batch,
//    batch_timeout_us, streams: server; samples_per_query, query_interval_ms: multi_stream;
//    offline_samples: offline; latency_percentile: not offline);
//  - `load: server` without target_qps; `target_qps: max` without latency_bound_ms.
std::vector<LoadRuleViolation> CheckLoadCell(const Combination& cell);

// The rules of scenario: converge (docs/convergence.md), in the same form: its keys
// (target_accuracy, target_loss, eval_every, max_epochs, max_train_time_s, dataset_dir,
// train_samples, eval_samples, eval_precisions) only with scenario: converge; converge with exactly one of
// target_accuracy and target_loss, and without `data` (it reads its own dataset).
std::vector<LoadRuleViolation> CheckConvergeCell(const Combination& cell);

// min_agreement, max_abs_diff and max_mean_abs_diff (docs/precisions.md) only with scenario: infer,
// and not with reference_samples: 0.
std::vector<LoadRuleViolation> CheckAgreementCell(const Combination& cell);

// CheckLoadCell, CheckConvergeCell and CheckAgreementCell over a matrix's cells (plan::ExpandCombinations'
// output). kInvalidInput with one line per distinct violation, sorted by position, "FILE:LINE:COL: error:
// KEY: message (cell 'KEY')", the position being where the key is written (its include entry or its axis;
// `load`'s for a missing key), found in the matrix's own text.
Status CheckLoadRules(const Matrix& matrix, const std::vector<Combination>& cells);

// The reporting half of CheckLoadRules for any per-cell rule (config/model_rules.h uses it too):
// `check` over every cell, one "FILE:LINE:COL: error: KEY: message (cell '...')" line per
// distinct violation, sorted by position; Ok when there is none.
Status ReportCellRules(const Matrix& matrix, const std::vector<Combination>& cells,
                       const std::function<std::vector<LoadRuleViolation>(const Combination&)>& check);

// "FILE:LINE:COL" of where `key` of this cell is written (as the errors above place it).
std::string WhereInMatrix(const Matrix& matrix, const Combination& cell, const std::string& key);
// "path:line:col" of `measure: KEY` in the matrix file, or the path alone when the file does not
// write it (a default, or a `--set`).
std::string WhereInMeasure(const Matrix& matrix, const std::string& key);

}  // namespace dlbench::config
