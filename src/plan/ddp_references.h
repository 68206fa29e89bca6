// The cells a ddp cell's scaling figures compare it with (docs/distributed.md "What each figure
// means"), each measured in the same run: its world_size 1 cell (scaling efficiency), its
// compute-only twin (exposed communication) and its serial twin (overlap). They are found among
// the matrix's cells, never added: a world_size 1 cell is a whole training cell, and a twin is a
// whole cell of world_size ranks, so the plan does not grow a run by them behind the user's back;
// a cell without one says so in its figures and `plan` lists such cells. The plan runs each
// reference before the cells compared with it.
#pragma once

#include <string>
#include <vector>

#include "config/matrix.h"

namespace dlbench::plan {

// Whether the cell is data-parallel: strategy ddp.
bool IsDdpCell(const config::Combination& params);

// The cell's ddp_mode as the torch runner reads it: the key's value, or "overlap" when absent.
std::string DdpMode(const config::Combination& params);

// The cells that share every parameter with `params` but the ones named: world_size 1 (the
// scaling control), ddp_mode compute_only or serial (the twins).
config::Combination ScalingControlParams(const config::Combination& params);
config::Combination DdpTwinParams(const config::Combination& params, const std::string& mode);

struct DdpReferences {
  // For each combination, the index of its reference in the list, or -1 (parallel to the list).
  std::vector<long> scaling_control_of;  // ddp cells of world_size > 1
  std::vector<long> compute_only_of;     // ddp cells of ddp_mode overlap or serial
  std::vector<long> serial_of;           // ddp cells of ddp_mode overlap
};

// Finds each ddp cell's references among `combinations` by their CellKey (`keys`, parallel).
// A model: allreduce cell (the collective alone) has none.
DdpReferences FindDdpReferences(const std::vector<config::Combination>& combinations,
                                const std::vector<std::string>& keys);

}  // namespace dlbench::plan
