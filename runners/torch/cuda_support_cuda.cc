// cuda_support.h for a LibTorch with CUDA. Compiled only in the GPU build.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#include <torch/cuda.h>

#include <algorithm>
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

void CudaReleaseCachedMemory() { c10::cuda::CUDACachingAllocator::emptyCache(); }

std::optional<CudaMemoryCap> CudaApplyMemoryCap(int device_index, std::int64_t cap_bytes) {
  if (!torch::cuda::is_available() || device_index >= static_cast<int>(torch::cuda::device_count())) {
    return std::nullopt;
  }
  const auto index = static_cast<c10::DeviceIndex>(device_index);
  try {
    // The caching allocator exists only after LibTorch's lazy CUDA initialisation, which the first
    // CUDA tensor triggers (Python's set_per_process_memory_fraction calls torch.cuda._lazy_init
    // first; before it, LibTorch 2.11's allocator throws "Invalid device argument"). A one-element
    // tensor, freed and its block returned, initialises it.
    { const at::Tensor probe = at::empty({1}, at::TensorOptions().device(at::Device(at::kCUDA, index))); }
    c10::cuda::CUDACachingAllocator::emptyCache();
    // The tensor above created the primary context; cudaMemGetInfo sees it in use.
    if (cudaSetDevice(device_index) != cudaSuccess) return std::nullopt;
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess || total_bytes == 0) return std::nullopt;
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
    CudaMemoryCap cap;
    cap.cap_bytes = cap_bytes;
    cap.total_bytes = static_cast<std::int64_t>(total_bytes);
    cap.fraction = std::min(1.0, static_cast<double>(cap_bytes) / static_cast<double>(total_bytes));
    cap.outside_allocator_bytes = static_cast<std::int64_t>(total_bytes - free_bytes) -
                                  static_cast<std::int64_t>(stats.reserved_bytes[kAggregate].current);
    c10::cuda::CUDACachingAllocator::setMemoryFraction(cap.fraction, index);
    return cap;
  } catch (const c10::Error&) {
    return std::nullopt;
  }
}

}  // namespace dlbench::torchrunner
