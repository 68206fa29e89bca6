// The report's scaling charts (docs/distributed.md "The cell's scaling figures"): for ddp cells of
// one configuration at two or more world sizes, global samples/s against the number of ranks, with
// the ideal line (world_size x the run's world_size 1 cell's rate) and, in the note, each point's
// efficiency and all-reduce share.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "record/records.h"

namespace dlbench::report {

// Appends one chart ({"section": "scaling", "title", "note", "x", "y", "datasets"}) per
// configuration: the cells' parameters but world_size (ddp_mode included, so overlap and serial
// are charted apart). Without a world_size 1 cell there is no ideal line, and the note says so.
void ScalingCharts(const std::vector<record::CellRecord>& cells, std::vector<nlohmann::json>& charts);

}  // namespace dlbench::report
