// The CUDA-only queries of the runner behind a header with no CUDA in it. Two translation units
// implement it: cuda_support_cuda.cc, compiled only when LibTorch has CUDA (it includes CUDA
// runtime and c10/cuda headers), and cuda_support_none.cc for CPU-only LibTorch, where every
// query answers "no CUDA here". CMake picks one (DLBENCH_TORCH_HAS_CUDA).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlbench::torchrunner {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;  // "NVIDIA H200"
  int major = 0;     // compute capability
  int minor = 0;
  std::int64_t total_memory_bytes = 0;
  int multiprocessors = 0;
  // "GPU-5e0c1a2b-...": NVML's form of the same UUID, so the orchestrator's monitor can tell
  // which NVML device this is whatever CUDA_VISIBLE_DEVICES did to the numbering.
  std::string uuid;
};

// The caching allocator's counters for one device (StatType AGGREGATE), in bytes.
struct CudaAllocatorStats {
  std::int64_t allocated_current = 0;
  std::int64_t allocated_peak = 0;
  std::int64_t reserved_current = 0;
  std::int64_t reserved_peak = 0;
};

// True when this binary was built against a LibTorch with CUDA.
bool CudaCompiledIn();
// Visible devices; empty without CUDA or without a driver. Initialises CUDA on first use.
std::vector<CudaDeviceInfo> CudaDevices();
// Versions as CUDA encodes them (13000 = 13.0), cuDNN as LibTorch reports it (91900 = 9.19.0).
std::optional<int> CudaRuntimeVersion();
std::optional<int> CudaDriverVersion();
std::optional<long> CudnnVersion();
std::optional<CudaAllocatorStats> CudaMemoryStats(int device_index);
void CudaResetPeakMemory(int device_index);
// The caching allocator's unused cached blocks back to the driver (emptyCache), so a later cell's
// reserved bytes start from what it allocates.
void CudaReleaseCachedMemory();

// What memory_cap did on a CUDA device (docs/memory.md "Memory cap").
struct CudaMemoryCap {
  std::int64_t cap_bytes = 0;
  std::int64_t total_bytes = 0;  // the device's memory (cudaMemGetInfo)
  double fraction = 0;           // cap / total, at most 1: what the caching allocator got
  // Device memory in use before the cell's first allocation and outside the caching allocator: the
  // CUDA context (and any other process on the device). The fraction cannot cover it.
  std::int64_t outside_allocator_bytes = 0;
};
// Limits the caching allocator of `device_index` to cap_bytes with
// CUDACachingAllocator::setMemoryFraction (an allocation beyond it raises OutOfMemoryError, as a
// smaller device would); creates the CUDA context first, so outside_allocator_bytes includes it.
// nullopt without CUDA or when the device cannot be queried.
std::optional<CudaMemoryCap> CudaApplyMemoryCap(int device_index, std::int64_t cap_bytes);

}  // namespace dlbench::torchrunner
