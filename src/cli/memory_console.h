// The memory parts of `dlbench show` (docs/memory.md): a boundary search's probes (batch_size:
// max), each with its outcome and peak memory, and the cap a cell ran under.
#pragma once

#include <string>
#include <vector>

#include "record/records.h"

namespace dlbench::cli {

// "Boundary search" and a table per searched cell (extras.boundary_search), or empty when no cell
// searched. Every string from the store goes through TerminalSafe.
std::string RenderBoundarySearches(const std::vector<record::CellRecord>& cells);

}  // namespace dlbench::cli
