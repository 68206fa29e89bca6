// What a ddp cell adds to the torch runner's cell (torch_runner.cc and cell_*.cc call these; the
// Rank does the communication): where the rank runs, joining its group, the step record's phases,
// and the end-of-cell check (docs/distributed.md).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cell_options.h"
#include "common/error.h"
#include "ddp/rank.h"
#include "failure.h"
#include "protocol/runner_session.h"
#include "workload.h"

namespace dlbench::torchrunner::ddp {

// The seed of a rank's batch: `seed` itself on rank 0 (a ddp cell of world_size 1 trains on the
// batch a single-process cell does), a different stream per other rank.
std::uint64_t BatchSeed(std::uint64_t seed, int rank);

// Checks CONFIGURE against the cell (its rank and world_size; the rendezvous a group of more than
// one needs) and places the rank: on CUDA its device is local_rank (refused when the ranks on a
// host outnumber its GPUs: two ranks on one GPU measure neither); on the CPU, without `threads`,
// each rank gets an equal share of the CPUs this process may use (at least one), so the ranks of
// a host do not oversubscribe it.
Status PlaceRank(const protocol::CellConfig& config, TorchCell& cell, const Capabilities& caps);

// The rank's setup from CONFIGURE and the cell: rank, rendezvous, mode, backend (auto: nccl on
// CUDA, gloo otherwise), bucket cap, device and the collectives' timeout.
RankSetup MakeRankSetup(const protocol::CellConfig& config, const TorchCell& cell, torch::Device device);

// Joins the cell's group from CONFIGURE (collective). Throws what Rank::Join throws.
std::unique_ptr<Rank> JoinGroup(const protocol::CellConfig& config, const TorchCell& cell,
                                torch::Device device, const Workload& workload);

// Adds the effective cell's "ddp" object and says what each step phase means under ddp.
void AddEffective(const Rank& rank, nlohmann::json& effective);

// ddp serial: the step's all-reduce is comm_ns, and compute_ns the rest of what the feeder timed.
void SplitCommunication(std::int64_t comm_ns, protocol::StepRecord& record);

// The end-of-cell parameter check (collective); `info` receives what it found. A Failure when the
// ranks' parameters differ. Not run in ddp_mode compute_only (no gradient is reduced; `info` says so).
std::optional<Failure> CheckRanksAgree(Rank& rank, std::int64_t steps, nlohmann::json& info);

}  // namespace dlbench::torchrunner::ddp
