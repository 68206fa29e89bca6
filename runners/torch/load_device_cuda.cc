// load_device.h for a LibTorch with CUDA. Compiled only in the GPU build.
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include "load_device.h"

namespace dlbench::torchrunner {
namespace {

class CudaLoadStream final : public LoadStream {
 public:
  explicit CudaLoadStream(torch::Device device)
      : stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index())),
        // cudaEventDefault: timing enabled (the events are what the phases are measured with);
        // a blocking-sync event would make Synchronize sleep instead of spin, adding wake-up
        // latency to every query (trtexec's --useSpinWait choice).
        copy_in_start_(cudaEventDefault),
        compute_start_(cudaEventDefault),
        compute_end_(cudaEventDefault),
        copy_out_end_(cudaEventDefault) {}

  std::shared_ptr<void> Enter() override { return std::make_shared<c10::cuda::CUDAStreamGuard>(stream_); }
  void MarkCopyInStart() override { copy_in_start_.record(stream_); }
  void MarkComputeStart() override { compute_start_.record(stream_); }
  void MarkComputeEnd() override { compute_end_.record(stream_); }
  void MarkCopyOutEnd() override { copy_out_end_.record(stream_); }
  void Synchronize() override { copy_out_end_.synchronize(); }
  void ReadTimes(load::QueryTiming& timing) override {
    auto ns = [](const at::cuda::CUDAEvent& a, const at::cuda::CUDAEvent& b) {
      return static_cast<std::int64_t>(static_cast<double>(a.elapsed_time(b)) * 1e6);
    };
    timing.h2d_ns = ns(copy_in_start_, compute_start_);
    timing.compute_ns = ns(compute_start_, compute_end_);
    timing.d2h_ns = ns(compute_end_, copy_out_end_);
    timing.present |= record::kQueryHasH2d | record::kQueryHasCompute | record::kQueryHasD2h;
  }

 private:
  c10::cuda::CUDAStream stream_;
  at::cuda::CUDAEvent copy_in_start_;
  at::cuda::CUDAEvent compute_start_;
  at::cuda::CUDAEvent compute_end_;
  at::cuda::CUDAEvent copy_out_end_;
};

}  // namespace

std::unique_ptr<LoadStream> MakeLoadStream(torch::Device device) {
  if (!device.is_cuda()) return MakeCpuLoadStream();
  return std::make_unique<CudaLoadStream>(device);
}

torch::Tensor HostBuffer(const std::vector<std::int64_t>& shape, torch::ScalarType dtype,
                         torch::MemoryFormat layout, torch::Device device) {
  // empty_cpu takes the page-locked allocator and the memory format together.
  return torch::empty(shape, torch::TensorOptions()
                                 .dtype(dtype)
                                 .device(torch::kCPU)
                                 .pinned_memory(device.is_cuda())
                                 .memory_format(layout));
}

}  // namespace dlbench::torchrunner
