// A `model: allreduce` cell (docs/distributed.md "The collective alone"): every rank joins the
// cell's group as a ddp rank does, and each step is one all-reduce (sum) of allreduce_bytes of
// float32 on the cell's device, the device synchronised, and nothing else: the collective alone, so
// that a user can tell a slow network from a slow model. The orchestrator turns rank 0's mean step
// time into nccl-tests' algorithm and bus bandwidths (orchestrator/ddp_analysis.h).
#pragma once

#include <cstdint>

#include "cell_options.h"
#include "protocol/runner_session.h"

namespace dlbench::torchrunner::ddp {

// The model name, and the bytes of one all-reduce when allreduce_bytes is not given: DDP's bucket.
inline constexpr char kAllReduceModel[] = "allreduce";
inline constexpr std::int64_t kDefaultAllReduceBytes = kDefaultBucketCapBytes;

// Runs the cell to its DONE (or ERROR) after CONFIGURE and PlaceRank; returns the process's exit
// status as RunTorchCell does. `bytes` is rounded down to whole float32 elements (at least one).
int RunAllReduceCell(protocol::RunnerSession& session, const protocol::CellConfig& config,
                     const TorchCell& cell, std::int64_t bytes);

}  // namespace dlbench::torchrunner::ddp
