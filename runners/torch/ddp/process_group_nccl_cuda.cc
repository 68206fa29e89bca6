// Compiled only into a LibTorch with CUDA (CMakeLists.txt); USE_C10D_NCCL is defined for this file,
// as TorchConfig does not.
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "ddp/process_group.h"
#include "ddp/wrap_backend.h"

namespace dlbench::torchrunner::ddp {

bool NcclCompiledIn() { return true; }

c10::intrusive_ptr<c10d::ProcessGroup> MakeNcclGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                     int world_size, std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, options);
#if TORCH_VERSION_MAJOR >= 2
  return WrapBackend(store, rank, world_size, c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL,
                     nccl);
#else
  return nccl;
#endif
}

}  // namespace dlbench::torchrunner::ddp
