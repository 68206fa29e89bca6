// --only FILTER for `run` and `plan`: which cells of a plan to keep.
#pragma once

#include <string>
#include <vector>

#include "common/error.h"
#include "config/matrix.h"
#include "plan/plan.h"

namespace dlbench::cli {

// FILTER is a comma-separated list of terms that must all match a cell: `name=value` compares a
// parameter's value as text (`batch_size=32`, `model=resnet50`), `name!=value` excludes, and a
// bare word matches a substring of the cell's label. Repeating --only keeps cells matching any.
Result<std::vector<plan::Cell>> FilterCells(const std::vector<plan::Cell>& cells,
                                            const std::vector<std::string>& filters);

// A matrix read, validated and expanded, with the cells --only keeps.
struct SelectedPlan {
  config::Matrix matrix;
  std::size_t planned = 0;          // cells before --only
  std::vector<plan::Cell> cells;    // cells after --only, in run order
};

// Loads the matrix, expands it and applies the filters. On failure prints the error (a matrix's
// file:line:col list as is) and returns the exit code to use.
Result<SelectedPlan> SelectPlan(const std::string& matrix_path, const std::vector<std::string>& filters,
                                int* exit_code);

}  // namespace dlbench::cli
