// cuda_graph.h for a LibTorch without CUDA (Debian's): nothing can be captured.
#include "cuda_graph.h"
#include "failure.h"

namespace dlbench::torchrunner {

std::unique_ptr<CapturedForward> CaptureForward(
    torch::Device /*device*/, int /*warmup_runs*/,
    const std::function<std::vector<torch::Tensor>()>& /*forward*/, const char* /*what*/) {
  throw UnsupportedError(
      "unsupported: cuda_graph: this dlbench-torch was built against a LibTorch without CUDA (the GPU "
      "build has it: scripts/build-gpu.sh)");
}

bool CudaGraphsCompiledIn() { return false; }

}  // namespace dlbench::torchrunner
