// load_device.h for a LibTorch without CUDA (the Debian CPU build).
#include "failure.h"
#include "load_device.h"

namespace dlbench::torchrunner {

std::unique_ptr<LoadStream> MakeLoadStream(torch::Device device) {
  if (device.is_cuda()) throw UnsupportedError("load scenarios on CUDA need a LibTorch built with CUDA");
  return MakeCpuLoadStream();
}

torch::Tensor HostBuffer(const std::vector<std::int64_t>& shape, torch::ScalarType dtype,
                         torch::MemoryFormat layout, torch::Device) {
  return torch::empty(shape, torch::TensorOptions().dtype(dtype).memory_format(layout));
}

}  // namespace dlbench::torchrunner
