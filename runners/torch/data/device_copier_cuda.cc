// device_copier.h for a LibTorch with CUDA. Compiled only in the GPU build.
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "data/device_copier.h"

namespace dlbench::torchrunner::data {
namespace {

class SideStreamCopier final : public DeviceCopier {
 public:
  explicit SideStreamCopier(int device_index)
      : device_(static_cast<c10::DeviceIndex>(device_index)),
        side_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device_)) {}

  void CopyAsync(const std::vector<torch::Tensor>& dst, const std::vector<torch::Tensor>& src,
                 int slot) override {
    c10::cuda::CUDAStreamGuard guard(side_);
    for (std::size_t i = 0; i < dst.size(); ++i) dst[i].copy_(src[i], /*non_blocking=*/true);
    events_[slot].record(side_);
  }
  void Wait(int slot) override { events_[slot].synchronize(); }
  void SynchronizeCompute() override { c10::cuda::getCurrentCUDAStream(device_).synchronize(); }

 private:
  c10::DeviceIndex device_;
  c10::cuda::CUDAStream side_;
  at::cuda::CUDAEvent events_[2];
};

}  // namespace

std::unique_ptr<DeviceCopier> MakeSideStreamCopier(int device_index) {
  return std::make_unique<SideStreamCopier>(device_index);
}

}  // namespace dlbench::torchrunner::data
