// Build: a cell's model, batch, optimizer and switches on its device (cell_state.h).
#include "cell_state.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <memory>
#include <optional>

#include "blas_threads.h"
#include "cell_options.h"
#include "data/feeder.h"
#include "ddp/cell.h"
#include "device_info.h"
#include "failure.h"
#include "foreach_optim.h"
#include "memory_accounting.h"
#include "precision.h"
#include "workload.h"

namespace dlbench::torchrunner {
namespace {

torch::MemoryFormat ResolveMemoryFormat(const TorchCell& cell, const Workload& workload) {
  switch (cell.memory_format) {
    case MemoryFormat::kChannelsLast:
      return torch::MemoryFormat::ChannelsLast;
    case MemoryFormat::kContiguous:
      return torch::MemoryFormat::Contiguous;
    case MemoryFormat::kAuto:
      break;
  }
  return cell.device.kind == DeviceKind::kCuda && workload.is_convolutional()
             ? torch::MemoryFormat::ChannelsLast
             : torch::MemoryFormat::Contiguous;
}

// OpenBLAS (0.3.21, Debian's libblas.so.3) allocates its 128 MiB work buffer at the first matrix
// product of a thread and keeps it; when that allocation fails it tries again without end
// (blas_memory_alloc's loop), so under RLIMIT_DATA a first product at the edge of the cap spun
// until timeout_s (a ResNet-50 at base_width 4 and batch 5064 under 1 GiB, the fc layer's addmm
// after the convolutions' activations; docs/memory.md "A crash under RLIMIT_DATA"). One product
// before the model, with the cell's threads set, makes the buffers while the cap has room; the
// model's products reuse them. 256 x 256 is above OpenBLAS's small-matrix path, which takes no
// buffer. A failure here is the cell's (the caller classifies it).
void WarmBlasBuffers() {
  const torch::Tensor a = torch::ones({256, 256});
  (void)torch::mm(a, a);
}

}  // namespace

void Build(CellState& s, std::uint64_t seed, int rank) {
  const TorchCell& cell = s.cell;
  s.rss_before_build = HostRssBytes();
  if (cell.threads) at::set_num_threads(*cell.threads);
  // at::set_num_threads leaves the BLAS library's own pool alone (blas_threads.h).
  s.blas = SetBlasThreads(cell.threads);
  if (s.host_capped) WarmBlasBuffers();
  s.switches = ApplyMathSwitches(cell);
  torch::manual_seed(seed);
  s.device = cell.device.kind == DeviceKind::kCuda
                 ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(cell.device.index))
                 : torch::Device(torch::kCPU);
  s.cuda_device = FindCudaDevice(cell.device);
  // An AOTInductor package's kernels are compiled at its precision and do not go through ATen's
  // dispatcher, where autocast acts: no autocast around its forward (aoti_workload.h).
  s.autocast_dtype = cell.aoti ? std::nullopt : AutocastDtype(cell.precision);
  s.workload = MakeWorkload(cell);
  s.memory_format = ResolveMemoryFormat(cell, *s.workload);
  // The model starts from `seed` on every rank; each rank of a ddp cell trains on its own batch.
  s.workload->Prepare(cell, s.device, s.memory_format, ddp::BatchSeed(seed, rank));
  if (cell.precision == Precision::kInt8) {
    if (cell.torchscript) {
      // The file's own int8 layers run as saved; the runner quantizes nothing.
      if (s.workload->QuantizedInModel().is_null()) {
        throw UnsupportedError(fmt::format(
            "unsupported: precision int8 of TorchScript model {}: it holds no quantized layers (no "
            "torch.classes.quantized packed weights, no quantized tensors); quantize it offline "
            "(scripts/quantize_cnn.py) or run it at precision fp32",
            cell.torchscript->path));
      }
    } else {
      s.workload->QuantizeDynamicInt8();
    }
  }
  s.workload->SetTraining(Trains(cell.scenario));
  s.feeder = std::make_unique<data::Feeder>(cell, *s.workload, s.device, seed);
  if (Trains(cell.scenario)) {
    s.optimizer = s.workload->MakeOptimizer(cell.lr);
    const bool foreach = cell.optimizer_impl == OptimizerImpl::kForeach ||
                         (cell.optimizer_impl == OptimizerImpl::kAuto && s.device.is_cuda());
    if (foreach) {
      auto twin = ForeachTwin(*s.optimizer, /*capturable=*/cell.cuda_graph);
      if (!twin)
        throw UnsupportedError("optimizer_impl foreach: no multi-tensor form of " +
                               s.workload->OptimizerName());
      s.optimizer = std::move(twin);
      s.optimizer_impl = "foreach";
    } else {
      s.optimizer_impl = "per_param";
    }
    if (cell.precision == Precision::kFp16) s.scaler = std::make_unique<LossScaler>(s.device);
  }
  const std::optional<WeightBytes> weights = s.workload->DeployedWeightBytes();
  s.expected_memory = ExpectMemory(s.workload->Parameters(), s.workload->Buffers(), s.workload->FeedTensors(),
                                   weights ? std::optional<std::int64_t>(weights->total) : std::nullopt,
                                   s.optimizer.get(), s.optimizer_impl == "foreach");
}

}  // namespace dlbench::torchrunner
