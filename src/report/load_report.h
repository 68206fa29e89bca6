// The HTML report's view of inference-under-load cells (docs/load.md): each load cell's latency
// distribution over its measured queries, from the stored `load.latency_ns` series, with its
// percentiles and, for a server, its latency bound drawn.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "record/records.h"

namespace dlbench::report {

// Appends one chart (section "latency") per ok load cell with query series: the empirical CDF of
// its measured queries' latencies in ms (at most `max_points` points), a vertical line at
// latency_bound_ms when the cell has one, and a note with LoadGen's percentiles. The chart's
// strings are escaped where the report renders them.
void LoadLatencyCharts(const std::vector<record::CellRecord>& cells, int max_points,
                       std::vector<nlohmann::json>& charts);

}  // namespace dlbench::report
