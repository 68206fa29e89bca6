// CUDA-graph replay of a fixed-shape inference forward (`cuda_graph: true`; docs/torch-runner.md
// "CUDA graphs"), behind a header with no CUDA in it. Two translation units implement it:
// cuda_graph_cuda.cc (LibTorch with CUDA: at::cuda::CUDAGraph) and cuda_graph_none.cc, where
// capturing is unsupported. What a replay saves is the host's work: one graph launch instead of a
// kernel launch (and the dispatcher's work) per operator, which is what bounds small-batch
// inference latency on a fast GPU.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

namespace dlbench::torchrunner {

class CapturedForward {
 public:
  virtual ~CapturedForward() = default;
  // Launches the captured work on the calling thread's current stream of the capture's device and
  // returns the outputs' tensors, which every replay overwrites in place. No host synchronisation.
  virtual const std::vector<torch::Tensor>& Replay() = 0;
};

// Runs `forward` `warmup_runs` times on a side stream (as PyTorch's CUDA-graph docs do, so lazy
// initialisation and cuDNN's autotuning happen before the capture), then captures one call into a
// CUDA graph, with autocast's weight-cast cache off during the capture (torch.cuda.graphs' rule:
// cache_enabled=False), so the casts are part of every replay. `forward` must read its inputs from
// tensors whose storage stays put (a replay reads those addresses) and must not synchronise with
// the host or allocate with a data-dependent size. Throws UnsupportedError for a build without CUDA,
// a device that is not CUDA, or work that cannot be captured (the message names `what` was
// captured, "the forward" or "the training step", and CUDA's reason).
std::unique_ptr<CapturedForward> CaptureForward(torch::Device device, int warmup_runs,
                                                const std::function<std::vector<torch::Tensor>()>& forward,
                                                const char* what = "the forward");

// Whether this binary can capture CUDA graphs (built against a LibTorch with CUDA).
bool CudaGraphsCompiledIn();

}  // namespace dlbench::torchrunner
