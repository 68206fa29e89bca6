// cuda_support.h for a LibTorch without CUDA (the Debian CPU build): there is nothing to query.
#include "cuda_support.h"

namespace dlbench::torchrunner {

bool CudaCompiledIn() { return false; }
std::vector<CudaDeviceInfo> CudaDevices() { return {}; }
std::optional<int> CudaRuntimeVersion() { return std::nullopt; }
std::optional<int> CudaDriverVersion() { return std::nullopt; }
std::optional<long> CudnnVersion() { return std::nullopt; }
std::optional<CudaAllocatorStats> CudaMemoryStats(int) { return std::nullopt; }
void CudaResetPeakMemory(int) {}
void CudaReleaseCachedMemory() {}
std::optional<CudaMemoryCap> CudaApplyMemoryCap(int, std::int64_t) { return std::nullopt; }

}  // namespace dlbench::torchrunner
