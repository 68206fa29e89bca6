#include "ddp/allreduce_cell.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <exception>

#include "common/clock.h"
#include "common/log.h"
#include "ddp/cell.h"
#include "ddp/rank.h"
#include "device_info.h"
#include "failure.h"
#include "record/metrics.h"

namespace dlbench::torchrunner::ddp {
namespace {

int Report(protocol::RunnerSession& session, const Failure& failure) {
  LogError("dlbench-torch: {}: {}", record::Name(failure.kind), failure.message);
  (void)session.SendError(failure.kind, failure.message, failure.details);
  return 0;
}

torch::Device DeviceOf(const TorchCell& cell) {
  return cell.device.kind == DeviceKind::kCuda
             ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(cell.device.index))
             : torch::Device(torch::kCPU);
}

void Synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace

int RunAllReduceCell(protocol::RunnerSession& session, const protocol::CellConfig& config,
                     const TorchCell& cell, std::int64_t bytes) {
  const torch::Device device = DeviceOf(cell);
  if (cell.threads) at::set_num_threads(*cell.threads);
  const std::int64_t elements = std::max<std::int64_t>(1, bytes / 4);
  std::unique_ptr<Rank> rank;
  torch::Tensor buffer;
  nlohmann::json check;
  try {
    RankSetup setup = MakeRankSetup(config, cell, device);
    setup.collective_only = true;
    rank = Rank::Join(setup, {}, {});
    // The sum of ones over the ranks is world_size everywhere: checked once, outside the steps.
    buffer = torch::ones({elements}, torch::TensorOptions().dtype(torch::kFloat).device(device));
    rank->AllReduce(buffer);
    Synchronize(device);
    const double world = static_cast<double>(cell.ddp->world_size);
    const double low = buffer.min().item<double>();
    const double high = buffer.max().item<double>();
    check = {{"expected", world}, {"min", low}, {"max", high}, {"correct", low == world && high == world}};
    if (low != world || high != world) {
      return Report(session,
                    {record::RunnerErrorKind::kInternal,
                     fmt::format("allreduce: the sum of ones over {} ranks gave values from {} to {}",
                                 cell.ddp->world_size, low, high),
                     check});
    }
    // The steps' buffer holds zeros, whose sum stays zero, so that repeated sums never overflow.
    buffer.zero_();
    Synchronize(device);
  } catch (...) {
    return Report(session, ClassifyException(std::current_exception()));
  }

  nlohmann::json effective = {
      {"model", kAllReduceModel},
      {"device", cell.device.ToString()},
      {"threads", at::get_num_threads()},
      {"strategy", "ddp"},
      {"world_size", cell.ddp->world_size},
      {"allreduce",
       {{"bytes", elements * 4},
        {"elements", elements},
        {"dtype", "float32"},
        {"op", "sum, in place"},
        {"step", "one all-reduce, the device synchronised; nothing else"}}},
      {"timing", "host clock around each step; the step ends with a device synchronize"},
      {"torch_version", TorchVersion()},
      {"device_uuids", nlohmann::json::array()},
  };
  if (auto info = FindCudaDevice(cell.device)) {
    effective["device_name"] = info->name;
    effective["device_uuids"].push_back(info->uuid);
  }
  nlohmann::json ddp = rank->Effective();
  ddp.erase("ddp_mode");
  ddp.erase("buckets");
  ddp.erase("bucket_cap_bytes");
  ddp.erase("first_bucket_cap_bytes");
  ddp.erase("gradient_bytes");
  ddp.erase("parameters");
  ddp.erase("initial_state");
  ddp.erase("buffers");
  effective["ddp"] = ddp;
  if (!session.SendReady(effective).ok()) return 1;

  std::exception_ptr step_error;
  auto step = [&](protocol::StepRecord& record) {
    try {
      rank->AllReduce(buffer);
      Synchronize(device);
    } catch (...) {
      step_error = std::current_exception();
      return false;
    }
    record.samples = 1;
    return true;
  };
  const protocol::LoopResult loop = RunRankStepLoop(session, config.limits, *rank, step);
  if (step_error) return Report(session, ClassifyException(step_error));
  try {
    (void)session.SendMemory(MemorySnapshot(std::string(record::memory::kEndLabel), cell.device));
    (void)session.SendExtras({{"metrics", nlohmann::json::array()}, {"info", {{"allreduce_check", check}}}});
  } catch (...) {
    return Report(session, ClassifyException(std::current_exception()));
  }
  return session.SendDone(protocol::LoopEndName(loop.end), loop.steps).ok() ? 0 : 1;
}

}  // namespace dlbench::torchrunner::ddp
