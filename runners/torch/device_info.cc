#include "device_info.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "common/version.h"
#include "record/metrics.h"

namespace dlbench::torchrunner {
namespace {

// NCCL comes in as a dependency of libtorch_cuda when LibTorch was built with it. Looking the
// symbol up at run time avoids needing NCCL's header and works whether or not it is there.
std::optional<std::string> NcclVersion() {
  using GetVersionFn = int (*)(int*);
  auto fn = reinterpret_cast<GetVersionFn>(dlsym(RTLD_DEFAULT, "ncclGetVersion"));
  if (fn == nullptr) return std::nullopt;
  int code = 0;
  if (fn(&code) != 0 || code <= 0) return std::nullopt;
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch; older ones major*1000 + minor*100 + patch.
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, (code % 1000) / 100, code % 100);
}

std::string FormatCudnnVersion(long v) {
  // cuDNN 9 encodes major*10000 + minor*100 + patch; cuDNN 8 and older major*1000 + minor*100 + patch.
  if (v >= 90000) return fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100);
  return fmt::format("{}.{}.{}", v / 1000, (v % 1000) / 100, v % 100);
}

// Set once ResetProcessForNextCell reset the peak RSS: getrusage's ru_maxrss keeps the largest
// ever (it also holds the peak of the image before exec), so the peak is then read from VmHWM.
bool peak_rss_was_reset = false;

// getrusage's ru_maxrss, as a process serving one cell always read it; VmHWM of /proc/self/status
// (what clear_refs resets) once the peak was reset for a later cell.
std::int64_t HostPeakRssBytes() {
  if (peak_rss_was_reset) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;  // "VmHWM:  123 kB"
    }
  }
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace

std::int64_t HostRssBytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size_pages = 0;
  std::int64_t rss_pages = 0;
  if (!(statm >> size_pages >> rss_pages)) return 0;
  return rss_pages * static_cast<std::int64_t>(sysconf(_SC_PAGESIZE));
}

std::string TorchVersion() { return TORCH_VERSION; }
int TorchMajorVersion() { return TORCH_VERSION_MAJOR; }

std::string FormatCudaVersion(int encoded) {
  return fmt::format("{}.{}", encoded / 1000, (encoded % 1000) / 10);
}

nlohmann::json MakeHello() {
  nlohmann::json framework = {
      {"name", "libtorch"}, {"version", TorchVersion()}, {"cuda_built", CudaCompiledIn()}};
  if (auto v = CudaRuntimeVersion()) framework["cuda_runtime"] = FormatCudaVersion(*v);
  if (auto v = CudaDriverVersion()) framework["cuda_driver_api"] = FormatCudaVersion(*v);
  if (auto v = CudnnVersion()) framework["cudnn"] = FormatCudnnVersion(*v);
  if (auto v = NcclVersion()) framework["nccl"] = *v;
  // LibTorch's own build summary names the BLAS/oneDNN/OpenMP it uses: fp32 CPU speed depends on it.
  framework["build_config"] = torch::show_config();

  nlohmann::json devices = nlohmann::json::array();
  devices.push_back({{"type", "cpu"}, {"index", 0}, {"logical_cpus", sysconf(_SC_NPROCESSORS_ONLN)}});
  for (const CudaDeviceInfo& d : CudaDevices()) {
    devices.push_back({{"type", "cuda"},
                       {"index", d.index},
                       {"name", d.name},
                       {"compute_capability", fmt::format("{}.{}", d.major, d.minor)},
                       {"total_memory_bytes", d.total_memory_bytes},
                       {"multiprocessors", d.multiprocessors},
                       {"uuid", d.uuid}});
  }
  return {{"runner", "torch"},
          {"runner_version", std::string(kVersion) + "+" + kGitCommit},
          {"framework", framework},
          {"devices", devices},
          {"threads", at::get_num_threads()},
          {"interop_threads", at::get_num_interop_threads()}};
}

Capabilities ProbeCapabilities(const DeviceSpec& device) {
  Capabilities caps;
  caps.torch_major = TorchMajorVersion();
  caps.cuda_built = CudaCompiledIn();
  if (caps.cuda_built) {
    const auto devices = CudaDevices();
    caps.cuda_device_count = static_cast<int>(devices.size());
    if (auto d = FindCudaDevice(device)) caps.compute_major = d->major;
  }
  return caps;
}

std::optional<CudaDeviceInfo> FindCudaDevice(const DeviceSpec& device) {
  if (device.kind != DeviceKind::kCuda) return std::nullopt;
  for (const CudaDeviceInfo& d : CudaDevices()) {
    if (d.index == device.index) return d;
  }
  return std::nullopt;
}

nlohmann::json MemorySnapshot(const std::string& label, const DeviceSpec& device) {
  namespace memory = record::memory;
  nlohmann::json m = {{memory::kLabel, label},
                      {"device", device.ToString()},
                      {memory::kHostRssBytes, HostRssBytes()},
                      {memory::kHostPeakRssBytes, HostPeakRssBytes()}};
  if (device.kind == DeviceKind::kCuda) {
    if (auto s = CudaMemoryStats(device.index)) {
      m[memory::kDeviceAllocatedBytes] = s->allocated_current;
      m[memory::kDeviceAllocatedPeakBytes] = s->allocated_peak;
      m[memory::kDeviceReservedBytes] = s->reserved_current;
      m[memory::kDeviceReservedPeakBytes] = s->reserved_peak;
    }
  }
  return m;
}

void ResetPeakMemory(const DeviceSpec& device) {
  if (device.kind == DeviceKind::kCuda) CudaResetPeakMemory(device.index);
}

bool ResetProcessForNextCell(const DeviceSpec& device) {
  if (device.kind == DeviceKind::kCuda) {
    CudaReleaseCachedMemory();
    CudaResetPeakMemory(device.index);
  }
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";  // 5: reset the peak RSS (proc(5))
  clear_refs.flush();
  peak_rss_was_reset = clear_refs.good();
  return peak_rss_was_reset;
}

}  // namespace dlbench::torchrunner
