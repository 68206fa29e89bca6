// Where a load query's device work runs and how its phases are timed (docs/load.md
// "Decomposition"), behind a header with no CUDA in it. On the CPU a LoadStream reads the host
// clock at each mark; on CUDA (load_device_cuda.cc, compiled only when LibTorch has CUDA) it is a
// CUDA stream from the pool with CUDA events at the marks, so the host-to-device copy, the compute
// and the device-to-host copy are each timed on the device, as trtexec does
// (samples/common/sampleInference.cpp: events around the input copy, the enqueue, the output copy).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "load/system_under_test.h"

namespace dlbench::torchrunner {

class LoadStream {
 public:
  virtual ~LoadStream() = default;
  // Makes this stream current on the calling thread until the returned guard is destroyed (CUDA:
  // a CUDAStreamGuard; CPU: nothing).
  virtual std::shared_ptr<void> Enter() = 0;
  // Marks on the stream, in this order for one query: before the input copy, after it (= before
  // the compute), after the compute, after the output copy. No host synchronisation.
  virtual void MarkCopyInStart() = 0;
  virtual void MarkComputeStart() = 0;
  virtual void MarkComputeEnd() = 0;
  virtual void MarkCopyOutEnd() = 0;
  // Waits until the last mark's work is done on the device (returns at once on the CPU).
  virtual void Synchronize() = 0;
  // After Synchronize: the phases between the marks into `timing` (h2d, compute, d2h with their
  // bits; on the CPU compute only: there are no copies).
  virtual void ReadTimes(load::QueryTiming& timing) = 0;
};

// A stream for `device`: the CPU's host-clock stream, or (CUDA) a new stream from LibTorch's pool
// on that device. Throws UnsupportedError for CUDA in a build without it.
std::unique_ptr<LoadStream> MakeLoadStream(torch::Device device);

// An uninitialised CPU tensor of `shape`, `dtype` and `layout`, page-locked when `device` is CUDA
// (so copies to and from the device are DMA and can run asynchronously on a stream).
torch::Tensor HostBuffer(const std::vector<std::int64_t>& shape, torch::ScalarType dtype,
                         torch::MemoryFormat layout, torch::Device device);

// The CPU implementation, shared by both builds (a CUDA build runs CPU cells too).
std::unique_ptr<LoadStream> MakeCpuLoadStream();

}  // namespace dlbench::torchrunner
