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

// Appends one chart (section "latency") per ok peak-search cell (target_qps: max; docs/load.md
// "Peak search"): each probe's latency at the bound's percentile against its target rate, the
// probes that met the bound and those that did not as two marker sets, the bound as a dashed
// horizontal line and the peak found as a dashed vertical one. From extras.load.peak_search as
// the orchestrator judged it; a probe without a latency (it measured nothing) is left out and
// counted in the note.
void PeakSearchCharts(const std::vector<record::CellRecord>& cells, std::vector<nlohmann::json>& charts);

// Appends one chart (section "latency", `type` "bar") when any ok load cell has a latency
// decomposition (docs/load.md, "The per-cell summary"): a horizontal bar per such cell, stacked
// from its parts' means in ms in a query's order (queue, host pre-processing, H2D, compute, D2H,
// host post-processing), so each bar's length is the cell's mean latency. A part a cell's records
// do not carry is null in its bar (drawn as nothing), never 0.
void LatencyDecompositionChart(const std::vector<record::CellRecord>& cells,
                               std::vector<nlohmann::json>& charts);

}  // namespace dlbench::report
