// The memory parts of `dlbench show` (docs/memory.md): a boundary search's probes (batch_size,
// seq_len or image_size: max), each with its outcome and peak memory, and the cap a cell ran
// under; where each cell's memory went.
#pragma once

#include <string>
#include <vector>

#include "record/records.h"

namespace dlbench::cli {

// "Boundary search" and a table per searched cell (extras.boundary_search), or empty when no cell
// searched. Every string from the store goes through TerminalSafe.
std::string RenderBoundarySearches(const std::vector<record::CellRecord>& cells);

// "Memory" and a row per cell that sent the breakdown (expected_resident_bytes or
// memory_peak_bytes): weights, gradients, optimizer state, batch, a converge cell's dataset (the
// column is there when some cell has dataset_bytes), their sum, the measured peak, the rest
// (activations and workspaces) and, on CUDA, the reserved peak and fragmentation. Empty when no
// cell has it.
std::string RenderMemoryBreakdowns(const std::vector<record::CellRecord>& cells);

}  // namespace dlbench::cli
