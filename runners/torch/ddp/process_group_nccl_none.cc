// A LibTorch without CUDA has no NCCL: backend nccl is refused by name (cell_options.cc refuses it
// before this is reached; this keeps the symbol).
#include "ddp/process_group.h"
#include "failure.h"

namespace dlbench::torchrunner::ddp {

bool NcclCompiledIn() { return false; }

c10::intrusive_ptr<c10d::ProcessGroup> MakeNcclGroup(const c10::intrusive_ptr<c10d::Store>&, int, int,
                                                     std::chrono::milliseconds) {
  throw UnsupportedError(
      "unsupported: backend nccl, but this dlbench-torch was built without c10d's NCCL process group "
      "(the GPU build has it: scripts/build-gpu.sh)");
}

}  // namespace dlbench::torchrunner::ddp
