// CellState, everything one torch-runner cell's steps use, and Build, which makes it before READY.
// torch_runner.cc runs the cell over it; cell_capture.cc captures its CUDA graph; cell_report.cc
// reads it for READY's effective cell and EXTRAS.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "blas_threads.h"
#include "cell_options.h"
#include "cuda_graph.h"
#include "cuda_support.h"
#include "data/feeder.h"
#include "ddp/rank.h"
#include "memory_accounting.h"
#include "precision.h"
#include "workload.h"

namespace dlbench::torchrunner {

// Everything a cell's steps use, built before READY.
struct CellState {
  TorchCell cell;
  torch::Device device{torch::kCPU};
  torch::MemoryFormat memory_format = torch::MemoryFormat::Contiguous;
  std::optional<torch::ScalarType> autocast_dtype;
  std::unique_ptr<Workload> workload;
  std::unique_ptr<torch::optim::Optimizer> optimizer;  // train only
  std::string optimizer_impl;                          // train only: "foreach" or "per_param"
  std::unique_ptr<LossScaler> scaler;                  // fp16 train only
  torch::Tensor last_loss;                             // train only, read after the loop
  MathSwitches switches;
  BlasThreading blas;
  std::optional<CudaDeviceInfo> cuda_device;
  std::unique_ptr<data::Feeder> feeder;  // each step's batch from cell.data (device: the fixed one)
  std::unique_ptr<CapturedForward>
      graph;                       // cuda_graph: the infer forward or train step, captured after Build
  double graph_capture_s = 0;      // its warm-up runs and capture, before READY
  std::unique_ptr<ddp::Rank> ddp;  // strategy ddp only
  std::optional<std::int64_t> step_comm_ns;  // ddp serial: this step's all-reduce
  // Where the memory goes (memory_accounting.h): the runner's RSS before the model was built, the
  // expected bytes once it was, and whether the device's peak counters restarted after warm-up.
  std::int64_t rss_before_build = 0;
  ExpectedMemory expected_memory;
  bool steady_peak_window = false;
  // A cpu cell under memory_cap (the orchestrator's RLIMIT_DATA or cgroup): the BLAS library's
  // buffers are made before the model (WarmBlasBuffers).
  bool host_capped = false;
};

// Builds the model, its batch and optimizer on the device with every switch set. Throws; the
// caller classifies.
void Build(CellState& s, std::uint64_t seed, int rank);

}  // namespace dlbench::torchrunner
