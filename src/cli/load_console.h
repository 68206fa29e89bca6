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

}  // namespace dlbench::cli
