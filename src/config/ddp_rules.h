// The cross-key rules of data-parallel cells (docs/distributed.md), checked per cell of the
// expanded matrix for the torch runner (plan::Expand) and reported as config errors at the key that
// breaks them, as the load rules are (config/load_rules.h). The runner checks the same at cell time
// (runners/torch/cell_options.cc): a matrix that breaks them stops at plan time instead of running
// cells that end invalid.
#pragma once

#include <vector>

#include "common/error.h"
#include "config/load_rules.h"
#include "config/matrix.h"

namespace dlbench::config {

// Every rule one torch cell's parameters (as written: before defaults) break; empty when none:
//  - ddp_mode, backend or bucket_cap_bytes, or a world_size other than 1, without strategy: ddp;
//  - strategy: ddp with a scenario other than train (infer has no gradients to all-reduce,
//    converge trains in one process), model allreduce aside;
//  - backend: nccl on a device that is not CUDA (the default device is cpu);
//  - model: allreduce without strategy: ddp; allreduce_bytes with another model.
std::vector<LoadRuleViolation> CheckDdpCell(const Combination& cell);

// CheckDdpCell over a matrix's cells, reported as CheckLoadRules reports.
Status CheckDdpRules(const Matrix& matrix, const std::vector<Combination>& cells);

}  // namespace dlbench::config
