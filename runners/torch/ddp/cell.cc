#include "ddp/cell.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <thread>

namespace dlbench::torchrunner::ddp {
namespace {

int UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// How long joining the group and any one collective may take: a peer that never arrives ends
// the rank with an error before the cell's own timeout kills it.
constexpr std::chrono::milliseconds kGroupTimeout{300'000};

}  // namespace

std::uint64_t BatchSeed(std::uint64_t seed, int rank) {
  return seed + 0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(rank);
}

Status PlaceRank(const protocol::CellConfig& config, TorchCell& cell, const Capabilities& caps) {
  const DdpOptions& d = *cell.ddp;
  if (config.world_size != d.world_size || config.rank < 0 || config.rank >= d.world_size) {
    return MakeError(ErrorKind::kInvalidInput,
                     fmt::format("CONFIGURE says rank {} of world_size {}, the cell's world_size is {}",
                                 config.rank, config.world_size, d.world_size));
  }
  if (d.world_size > 1 && !config.rendezvous) {
    return MakeError(
        ErrorKind::kInvalidInput,
        fmt::format("strategy ddp with world_size {} needs CONFIGURE's rendezvous: `dlbench run` "
                    "starts the ranks and passes it (docs/distributed.md)",
                    d.world_size));
  }
  const int local_rank = config.rendezvous ? config.rendezvous->local_rank : 0;
  const int local_world = config.rendezvous ? config.rendezvous->local_world_size : 1;
  if (cell.device.kind == DeviceKind::kCuda) {
    if (caps.cuda_built && local_world > caps.cuda_device_count) {
      return MakeError(ErrorKind::kUnsupported,
                       fmt::format("unsupported: {} ranks on this host but {} CUDA device(s) visible: ranks "
                                   "would share a GPU",
                                   local_world, caps.cuda_device_count));
    }
    cell.device.index = local_rank;
  } else if (!cell.threads) {
    cell.threads = std::max(1, UsableCpus() / std::max(1, local_world));
  }
  return Status::Ok();
}

RankSetup MakeRankSetup(const protocol::CellConfig& config, const TorchCell& cell, torch::Device device) {
  const DdpOptions& d = *cell.ddp;
  RankSetup setup;
  setup.rank = config.rank;
  setup.world_size = d.world_size;
  if (config.rendezvous) setup.rendezvous = *config.rendezvous;
  setup.mode = d.mode;
  setup.nccl = d.backend == DdpBackend::kNccl || (d.backend == DdpBackend::kAuto && device.is_cuda());
  setup.bucket_cap_bytes = d.bucket_cap_bytes;
  setup.timeout = kGroupTimeout;
  setup.device = device;
  return setup;
}

std::unique_ptr<Rank> JoinGroup(const protocol::CellConfig& config, const TorchCell& cell,
                                torch::Device device, const Workload& workload) {
  return Rank::Join(MakeRankSetup(config, cell, device), workload.Parameters(), workload.Buffers());
}

void AddEffective(const Rank& rank, nlohmann::json& effective) {
  nlohmann::json ddp = rank.Effective();
  ddp["threads_per_rank"] = effective.value("threads", 0);
  effective["ddp"] = ddp;
  const std::string mode = ddp.value("ddp_mode", "");
  const bool serial = mode == DdpModeName(DdpMode::kSerial);
  const bool compute_only = mode == DdpModeName(DdpMode::kComputeOnly);
  nlohmann::json& phases = effective["step_phases"];
  phases["compute_ns"] =
      serial ? "forward, backward and optimizer, to the closing synchronisation, less the all-reduce"
      : compute_only
          ? "forward, backward and optimizer, to the closing synchronisation, less the barrier"
          : "forward, backward with the Reducer's all-reduces overlapping it, and optimizer, to the "
            "closing synchronisation";
  phases["comm_ns"] =
      serial         ? "the gradient buckets' all-reduce after backward, the device synchronised"
      : compute_only ? "the per-step barrier after backward (a one-element all-reduce): the wait for the "
                       "slowest rank; no gradient is all-reduced"
                     : "absent: the Reducer's all-reduces overlap backward and are not separable";
  phases["between_steps"] = "the ranks' stop agreement (an all-reduce), outside the timed region";
}

void SplitCommunication(std::int64_t comm_ns, protocol::StepRecord& record) {
  record.comm_ns = comm_ns;
  record.present |= record::kHasComm;
  if ((record.present & record::kHasCompute) != 0)
    record.compute_ns = std::max<std::int64_t>(0, record.compute_ns - comm_ns);
}

std::optional<Failure> CheckRanksAgree(Rank& rank, std::int64_t steps, nlohmann::json& info) {
  if (!rank.Synchronises()) {
    info = {{"checked", false},
            {"why", "ddp_mode compute_only all-reduces no gradient: the ranks' parameters differ by design"}};
    return std::nullopt;
  }
  const ParameterCheck check = rank.CheckParameters();
  info = {{"identical", check.identical},
          {"local_hash", check.local_hash},
          {"min_hash", check.min_hash},
          {"max_hash", check.max_hash},
          {"hash", "FNV-1a over every parameter's bytes, folded to 62 bits; min and max over the ranks"}};
  if (check.identical) return std::nullopt;
  return Failure{
      record::RunnerErrorKind::kInternal,
      fmt::format("ddp: the ranks' parameters differ after {} steps (hash {} on this rank; min {}, "
                  "max {} over the ranks): the gradients were not all-reduced",
                  steps, check.local_hash, check.min_hash, check.max_hash),
      info};
}

}  // namespace dlbench::torchrunner::ddp
