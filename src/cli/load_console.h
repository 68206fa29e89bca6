// The load figures of inference-under-load cells for the terminal (docs/load.md): `show` prints
// them under the results table.
#pragma once

#include <string>
#include <vector>

#include "record/records.h"

namespace dlbench::cli {

// A table of the load cells among `cells` (queries, latency percentiles, the scenario's headline
// figure as LoadGen names it, early stopping), or "" when there is none. Strings from the store
// go through TerminalSafe.
std::string RenderLoadCells(const std::vector<record::CellRecord>& cells);

// Each peak-search cell's result (peak, bracket, how the search ended) and its probes (target and
// achieved rate, the latency percentile and p99, queries, verdict or its first reason), from
// extras.load.peak_search, or "" when no cell has one.
std::string RenderPeakSearches(const std::vector<record::CellRecord>& cells);

// Each load cell's latency decomposition, one row per part it has (queue, host pre-processing,
// H2D, compute, D2H, host post-processing): mean, p99 and share of the mean latency; "" when none.
std::string RenderLatencyDecomposition(const std::vector<record::CellRecord>& cells);

}  // namespace dlbench::cli
