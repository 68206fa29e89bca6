// The report's input-pipeline charts (R7; docs/input-pipeline.md): for cells that read JPEG
// folders or TFRecords at two or more worker counts, samples/s against data_workers with the
// compute-only ceiling (their control's samples/s, data: device) as a dashed line, and the
// input-bound verdict at each point in the note.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "record/records.h"

namespace dlbench::report {

// Appends one chart ({"section": "input", "title", "note", "x", "y", "datasets"}) per
// configuration: the cells' parameters but data_workers. The worker count is the effective one
// (`auto` resolved by the runner), else the requested one.
void InputCharts(const std::vector<record::CellRecord>& cells, std::vector<nlohmann::json>& charts);

}  // namespace dlbench::report
