// What the torch runner tells the orchestrator about its environment and memory: the HELLO body
// (versions and devices, for the environment fingerprint) and MEMORY snapshots.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cell_options.h"
#include "cuda_support.h"

namespace dlbench::torchrunner {

// HELLO's body: runner, runner_version, framework {name, version, cuda_runtime, cuda_driver,
// cudnn, nccl, build_config}, devices [{type, index, name, compute_capability,
// total_memory_bytes, multiprocessors}], threads (intra-op default). Absent facts are omitted,
// never faked. Initialises CUDA when LibTorch has it.
nlohmann::json MakeHello();

// "2.11.0" from LibTorch's compile-time version; the major number for Capabilities.
std::string TorchVersion();
int TorchMajorVersion();

// Capabilities for CheckSupported, for the requested device.
Capabilities ProbeCapabilities(const DeviceSpec& device);

// The CUDA device's properties, when the spec names one that exists.
std::optional<CudaDeviceInfo> FindCudaDevice(const DeviceSpec& device);

// A MEMORY body: {"label", "device", "host_rss_bytes", "host_peak_rss_bytes"} plus, on CUDA,
// "device_allocated_bytes", "device_allocated_peak_bytes", "device_reserved_bytes",
// "device_reserved_peak_bytes" from the caching allocator.
nlohmann::json MemorySnapshot(const std::string& label, const DeviceSpec& device);
// Starts a new peak window for the device's allocator counters (no-op on the CPU).
void ResetPeakMemory(const DeviceSpec& device);
// The runner's resident set now (/proc/self/statm), 0 when it cannot be read.
std::int64_t HostRssBytes();
// Between two cells of one process (docs/adr/0011-runner-reuse.md): the process's peak RSS
// (VmHWM, which host_peak_rss_bytes reads) starts again from its RSS now (/proc/self/clear_refs),
// and on CUDA the caching allocator gives its cached blocks back and starts new peak counters, so
// the next cell's peaks are its own. False when the kernel refused the RSS reset.
bool ResetProcessForNextCell(const DeviceSpec& device);

// "12.4" from CUDA's 12040 encoding.
std::string FormatCudaVersion(int encoded);

}  // namespace dlbench::torchrunner
