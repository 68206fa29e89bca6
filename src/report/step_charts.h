// The report's step-time charts: each cell's rank-0 step times in order, the warm-up greyed and
// its cut marked, the steps after the stop decision lighter. The y axis is scaled to the measured
// window (0 to 10% above its longest step), so a long autotuning or allocation step in the
// warm-up cannot flatten the steps that count; longer steps outside the window are clipped and
// marked on the axis's top edge, each keeping its own time for the tooltip (docs/reports.md).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "record/records.h"

namespace dlbench::report {

// Appends one chart ({"section": "steps", "title", "note", "x", "y", "datasets"}) per cell that
// has rank-0 steps; each line holds at most about `max_points` points (ThinIndices).
void StepCharts(const std::vector<record::CellRecord>& cells, int max_points,
                std::vector<nlohmann::json>& charts);

}  // namespace dlbench::report
