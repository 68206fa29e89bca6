// The CUDA part of the feeder behind a header with no CUDA in it (as cuda_support.h): a side
// stream for host-to-device copies that overlap the step computing on the current stream. Two
// translation units implement it: device_copier_cuda.cc, compiled only when LibTorch has CUDA,
// and device_copier_none.cc. CMake picks one (DLBENCH_TORCH_HAS_CUDA).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace dlbench::torchrunner::data {

class DeviceCopier {
 public:
  virtual ~DeviceCopier() = default;
  // Enqueues dst[i].copy_(src[i], non_blocking) on the side stream, then records the event of
  // `slot` (0 or 1) after them. Returns at once; `src` must stay untouched until Wait(slot).
  virtual void CopyAsync(const std::vector<torch::Tensor>& dst, const std::vector<torch::Tensor>& src,
                         int slot) = 0;
  // Blocks the host until the copies of `slot` have finished.
  virtual void Wait(int slot) = 0;
  // Blocks the host until the current (compute) stream has finished; the side stream may go on.
  virtual void SynchronizeCompute() = 0;
};

// A copier for CUDA device `device_index`; nullptr when this LibTorch has no CUDA.
std::unique_ptr<DeviceCopier> MakeSideStreamCopier(int device_index);

}  // namespace dlbench::torchrunner::data
