// cuda_graph.h for a LibTorch with CUDA. Compiled only in the GPU build.
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <fmt/format.h>
#include <torch/cuda.h>

#include "cuda_graph.h"
#include "failure.h"

namespace dlbench::torchrunner {
namespace {

class CudaCapturedForward final : public CapturedForward {
 public:
  const std::vector<torch::Tensor>& Replay() override {
    graph_.replay();
    return outputs_;
  }

  at::cuda::CUDAGraph graph_;
  std::vector<torch::Tensor> outputs_;
};

// Autocast's weight-cast cache off for a scope, as torch.cuda.graphs asks of a capture.
class AutocastCacheOff {
 public:
  AutocastCacheOff() : was_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::set_autocast_cache_enabled(false);
  }
  ~AutocastCacheOff() { at::autocast::set_autocast_cache_enabled(was_); }
  AutocastCacheOff(const AutocastCacheOff&) = delete;
  AutocastCacheOff& operator=(const AutocastCacheOff&) = delete;

 private:
  bool was_;
};

}  // namespace

bool CudaGraphsCompiledIn() { return true; }

std::unique_ptr<CapturedForward> CaptureForward(torch::Device device, int warmup_runs,
                                                const std::function<std::vector<torch::Tensor>()>& forward,
                                                const char* what) {
  if (!device.is_cuda())
    throw UnsupportedError("unsupported: cuda_graph captures CUDA work: it needs device cuda");
  auto captured = std::make_unique<CudaCapturedForward>();
  const c10::DeviceIndex index = device.index();
  torch::cuda::synchronize(index);
  // A capture may not run on the legacy default stream; the warm-up runs on the same side stream.
  c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index);
  try {
    c10::cuda::CUDAStreamGuard guard(side);
    AutocastCacheOff cache_off;
    for (int i = 0; i < warmup_runs; ++i) (void)forward();
    side.synchronize();
    captured->graph_.capture_begin();
    try {
      captured->outputs_ = forward();
    } catch (...) {
      // End the capture so the stream is usable again; the graph is discarded with `captured`.
      try {
        captured->graph_.capture_end();
      } catch (...) {
      }
      throw;
    }
    captured->graph_.capture_end();
    side.synchronize();
  } catch (const UnsupportedError&) {
    throw;
  } catch (const std::exception& e) {
    std::string reason = e.what();
    if (const auto newline = reason.find('\n'); newline != std::string::npos) reason.resize(newline);
    throw UnsupportedError(
        fmt::format("unsupported: cuda_graph: {} could not be captured into a CUDA graph ({}); run it with "
                    "cuda_graph: false",
                    what, reason));
  }
  torch::cuda::synchronize(index);
  return captured;
}

}  // namespace dlbench::torchrunner
