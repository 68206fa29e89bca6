// cuda_support.h for a LibTorch with CUDA. Compiled only in the GPU build.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#include <torch/cuda.h>

#include <string>

#include "cuda_support.h"

namespace dlbench::torchrunner {
namespace {

// cudaUUID_t's 16 bytes in NVML's text form: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
std::string FormatUuid(const cudaUUID_t& uuid) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    const auto byte = static_cast<unsigned char>(uuid.bytes[i]);
    text += kHex[byte >> 4];
    text += kHex[byte & 0xf];
  }
  return text;
}

// Index of the aggregate counter in the allocator's StatArrays (StatType::AGGREGATE, the first
// enumerator in 1.13 and 2.x; the enum moved namespaces between them).
constexpr std::size_t kAggregate = 0;

}  // namespace

bool CudaCompiledIn() { return true; }

std::vector<CudaDeviceInfo> CudaDevices() {
  std::vector<CudaDeviceInfo> devices;
  if (!torch::cuda::is_available()) return devices;
  const int count = static_cast<int>(torch::cuda::device_count());
  for (int i = 0; i < count; ++i) {
    const cudaDeviceProp* prop = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(i));
    CudaDeviceInfo d;
    d.index = i;
    d.name = prop->name;
    d.major = prop->major;
    d.minor = prop->minor;
    d.total_memory_bytes = static_cast<std::int64_t>(prop->totalGlobalMem);
    d.multiprocessors = prop->multiProcessorCount;
    d.uuid = FormatUuid(prop->uuid);
    devices.push_back(std::move(d));
  }
  return devices;
}

std::optional<int> CudaRuntimeVersion() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) return std::nullopt;
  return v;
}

std::optional<int> CudaDriverVersion() {
  int v = 0;
  if (cudaDriverGetVersion(&v) != cudaSuccess || v == 0) return std::nullopt;
  return v;
}

std::optional<long> CudnnVersion() {
  const auto& hooks = at::detail::getCUDAHooks();
  if (!hooks.compiledWithCuDNN()) return std::nullopt;
  return hooks.versionCuDNN();
}

std::optional<CudaAllocatorStats> CudaMemoryStats(int device_index) {
  const auto stats =
      c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device_index));
  CudaAllocatorStats s;
  s.allocated_current = stats.allocated_bytes[kAggregate].current;
  s.allocated_peak = stats.allocated_bytes[kAggregate].peak;
  s.reserved_current = stats.reserved_bytes[kAggregate].current;
  s.reserved_peak = stats.reserved_bytes[kAggregate].peak;
  return s;
}

void CudaResetPeakMemory(int device_index) {
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device_index));
}

}  // namespace dlbench::torchrunner
