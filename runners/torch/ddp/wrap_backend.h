// LibTorch 2.x made ProcessGroupGloo and ProcessGroupNCCL c10d::Backends; the Reducer and the
// collectives take a c10d::ProcessGroup that dispatches to one. In 1.13 they are ProcessGroups.
// Only process_group_*.cc include this.
#pragma once

#include <torch/version.h>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

namespace dlbench::torchrunner::ddp {

#if TORCH_VERSION_MAJOR >= 2
template <class B>
c10::intrusive_ptr<c10d::ProcessGroup> WrapBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                   int world_size, c10::DeviceType device,
                                                   c10d::ProcessGroup::BackendType type,
                                                   const c10::intrusive_ptr<B>& backend) {
  auto group = c10::make_intrusive<c10d::ProcessGroup>(store, rank, world_size);
  group->setBackend(device, type, c10::intrusive_ptr<c10d::Backend>(backend));
  group->setDefaultBackend(type);
  return group;
}
#endif

}  // namespace dlbench::torchrunner::ddp
