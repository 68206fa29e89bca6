// --only FILTER for `run` and `plan`: which cells of a plan to keep.
#pragma once

#include <string>
#include <vector>

#include "common/error.h"
#include "plan/plan.h"

namespace dlbench::cli {

// FILTER is a comma-separated list of terms that must all match a cell: `name=value` compares a
// parameter's value as text (`batch_size=32`, `model=resnet50`), `name!=value` excludes, and a
// bare word matches a substring of the cell's label. Repeating --only keeps cells matching any.
Result<std::vector<plan::Cell>> FilterCells(const std::vector<plan::Cell>& cells,
                                            const std::vector<std::string>& filters);

}  // namespace dlbench::cli
