// The data-parallel parts of `dlbench show` (docs/distributed.md "What each figure means"): per
// model, a "Scaling" table of its ddp cells (world size, global samples/s, speedup and efficiency
// against the run's world_size 1 cell, the all-reduce's share, exposed communication and overlap,
// the slowest rank and its lag), with why a figure is missing; and the allreduce cells'
// bandwidths (nccl-tests' definitions).
#pragma once

#include <string>
#include <vector>

#include "record/records.h"

namespace dlbench::cli {

// Empty when the run has no ok ddp cell. Every string from the store goes through TerminalSafe.
std::string RenderScaling(const std::vector<record::CellRecord>& cells);

// The hosts of a group run's cells (extras.hosts, monitor/host_summary.h): per cell and rank, its
// task's host and that host's figures over the rank's runner's life (busy CPU cores, peak host
// memory, the runner's CPU and RSS, each GPU's utilisation and board power), or why it has none.
// Empty when no cell has hosts.
std::string RenderHosts(const std::vector<record::CellRecord>& cells);

}  // namespace dlbench::cli
