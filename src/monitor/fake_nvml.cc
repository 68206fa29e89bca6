#include "monitor/fake_nvml.h"

#include <cstdint>
#include <cstring>

#include "common/error.h"

namespace dlbench::monitor {
namespace {

FakeNvml* g_fake = nullptr;

constexpr NvmlReturn kInvalidArgument = 2;

// Handles are index + 1, so a null handle is never a valid device.
NvmlDevice HandleOf(unsigned int index) {
  return reinterpret_cast<NvmlDevice>(static_cast<std::uintptr_t>(index) + 1);
}

FakeGpu* GpuOf(NvmlDevice handle) {
  auto index = reinterpret_cast<std::uintptr_t>(handle);
  if (g_fake == nullptr || index == 0 || index > g_fake->gpus.size()) return nullptr;
  return &g_fake->gpus[index - 1];
}

NvmlReturn CopyString(const std::string& s, char* out, unsigned int length) {
  if (out == nullptr || length <= s.size()) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  std::memcpy(out, s.c_str(), s.size() + 1);
  return kNvmlSuccess;
}

template <class T, class U>
NvmlReturn Serve(NvmlDevice handle, std::optional<U> FakeGpu::*field, T* out) {
  FakeGpu* gpu = GpuOf(handle);
  if (gpu == nullptr || out == nullptr) return kInvalidArgument;
  const auto& value = gpu->*field;
  if (!value) return kNvmlErrorNotSupported;
  *out = static_cast<T>(*value);
  return kNvmlSuccess;
}

NvmlReturn Init() {
  ++g_fake->init_calls;
  return g_fake->init_result;
}
NvmlReturn Shutdown() {
  ++g_fake->shutdown_calls;
  return kNvmlSuccess;
}
const char* ErrorString(NvmlReturn rc) {
  switch (rc) {
    case kNvmlSuccess:
      return "Success";
    case kNvmlErrorNotSupported:
      return "Not Supported";
    case kNvmlErrorDriverNotLoaded:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}
NvmlReturn DeviceGetCount(unsigned int* count) {
  *count = static_cast<unsigned int>(g_fake->gpus.size());
  return kNvmlSuccess;
}
NvmlReturn DeviceGetHandleByIndex(unsigned int index, NvmlDevice* device) {
  if (index >= g_fake->gpus.size()) return kInvalidArgument;
  *device = HandleOf(index);
  return kNvmlSuccess;
}
NvmlReturn DeviceGetName(NvmlDevice d, char* out, unsigned int length) {
  FakeGpu* gpu = GpuOf(d);
  return gpu ? CopyString(gpu->name, out, length) : kInvalidArgument;
}
NvmlReturn DeviceGetUuid(NvmlDevice d, char* out, unsigned int length) {
  FakeGpu* gpu = GpuOf(d);
  return gpu ? CopyString(gpu->uuid, out, length) : kInvalidArgument;
}
NvmlReturn SystemGetDriverVersion(char* out, unsigned int length) {
  return CopyString(g_fake->driver_version, out, length);
}
NvmlReturn SystemGetNvmlVersion(char* out, unsigned int length) {
  return CopyString(g_fake->nvml_version, out, length);
}
NvmlReturn DeviceGetUtilizationRates(NvmlDevice d, NvmlUtilization* out) {
  FakeGpu* gpu = GpuOf(d);
  if (gpu == nullptr) return kInvalidArgument;
  if (!gpu->sm_util_pct || !gpu->mem_util_pct) return kNvmlErrorNotSupported;
  out->gpu = *gpu->sm_util_pct;
  out->memory = *gpu->mem_util_pct;
  return kNvmlSuccess;
}
NvmlReturn DeviceGetMemoryInfo(NvmlDevice d, NvmlMemory* out) {
  FakeGpu* gpu = GpuOf(d);
  if (gpu == nullptr) return kInvalidArgument;
  if (!gpu->mem_used_bytes || !gpu->mem_total_bytes) return kNvmlErrorNotSupported;
  out->total = *gpu->mem_total_bytes;
  out->used = *gpu->mem_used_bytes;
  out->free = out->total - out->used;
  return kNvmlSuccess;
}
NvmlReturn DeviceGetPowerUsage(NvmlDevice d, unsigned int* mw) {
  ++g_fake->power_calls;
  return Serve(d, &FakeGpu::power_mw, mw);
}
NvmlReturn DeviceGetPowerLimit(NvmlDevice d, unsigned int* mw) {
  return Serve(d, &FakeGpu::power_limit_mw, mw);
}
NvmlReturn DeviceGetEnergy(NvmlDevice d, unsigned long long* mj) {
  ++g_fake->energy_calls;
  return Serve(d, &FakeGpu::energy_mj, mj);
}
NvmlReturn DeviceGetClockInfo(NvmlDevice d, int type, unsigned int* mhz) {
  ++g_fake->clock_calls;
  if (type == kNvmlClockSm) return Serve(d, &FakeGpu::sm_clock_mhz, mhz);
  if (type == kNvmlClockMem) return Serve(d, &FakeGpu::mem_clock_mhz, mhz);
  return kInvalidArgument;
}
NvmlReturn DeviceGetTemperature(NvmlDevice d, int sensor, unsigned int* c) {
  if (sensor != kNvmlTemperatureGpu) return kInvalidArgument;
  return Serve(d, &FakeGpu::temp_c, c);
}
NvmlReturn DeviceGetPcieThroughput(NvmlDevice d, int counter, unsigned int* kb) {
  ++g_fake->pcie_calls;
  if (counter == kNvmlPcieTxBytes) return Serve(d, &FakeGpu::pcie_tx_kb_per_s, kb);
  if (counter == kNvmlPcieRxBytes) return Serve(d, &FakeGpu::pcie_rx_kb_per_s, kb);
  return kInvalidArgument;
}
NvmlReturn DeviceGetEvents(NvmlDevice d, unsigned long long* mask) {
  return Serve(d, &FakeGpu::clocks_event_reasons, mask);
}
NvmlReturn DeviceGetSupportedEvents(NvmlDevice d, unsigned long long* mask) {
  return Serve(d, &FakeGpu::supported_clocks_event_reasons, mask);
}
// NVML's contract: *count in = the buffer's capacity; out = the number of processes. A capacity
// too small returns INSUFFICIENT_SIZE with the needed count; zero processes return SUCCESS.
NvmlReturn DeviceGetComputeRunningProcesses(NvmlDevice d, unsigned int* count, NvmlProcessInfo* infos) {
  ++g_fake->process_calls;
  FakeGpu* gpu = GpuOf(d);
  if (gpu == nullptr || count == nullptr) return kInvalidArgument;
  if (!gpu->processes) return kNvmlErrorNotSupported;
  auto& list = *gpu->processes;
  if (infos != nullptr && !gpu->processes_arriving_late.empty()) {
    list.insert(list.end(), gpu->processes_arriving_late.begin(), gpu->processes_arriving_late.end());
    gpu->processes_arriving_late.clear();
  }
  unsigned int capacity = *count;
  *count = static_cast<unsigned int>(list.size());
  if (list.empty()) return kNvmlSuccess;
  if (infos == nullptr || capacity < list.size()) return kNvmlErrorInsufficientSize;
  std::memcpy(infos, list.data(), list.size() * sizeof(NvmlProcessInfo));
  return kNvmlSuccess;
}

template <class T>
void StoreValue(NvmlFieldValue& field, NvmlValueType type, T value) {
  field.value_type = static_cast<int>(type);
  field.value = 0;
  std::memcpy(&field.value, &value, sizeof(value));
}

// NVML's contract: each field gets its own nvmlReturn; the call returns SUCCESS when it could
// look at the fields at all. Only the two fields the sampler asks for are known here; any other id
// is INVALID_ARGUMENT, as a driver older than the id answers.
NvmlReturn DeviceGetFieldValues(NvmlDevice d, int count, NvmlFieldValue* values) {
  ++g_fake->field_values_calls;
  FakeGpu* gpu = GpuOf(d);
  if (gpu == nullptr || values == nullptr || count <= 0) return kInvalidArgument;
  if (g_fake->field_values_result != kNvmlSuccess) return g_fake->field_values_result;
  g_fake->last_field_ids.clear();
  for (int i = 0; i < count; ++i) {
    g_fake->last_field_ids.push_back(values[i].field_id);
    NvmlFieldValue& f = values[i];
    f.timestamp_us = 1;
    f.latency_us = 0;
    if (auto it = gpu->field_errors.find(f.field_id); it != gpu->field_errors.end()) {
      f.nvml_return = it->second;
      continue;
    }
    f.nvml_return = kNvmlErrorNotSupported;
    if (f.field_id == kNvmlFiPowerAverage && gpu->power_mw) {
      f.nvml_return = kNvmlSuccess;
      const unsigned int mw = *gpu->power_mw;
      switch (gpu->power_field_type) {
        case NvmlValueType::kDouble:
          StoreValue(f, gpu->power_field_type, static_cast<double>(mw));
          break;
        case NvmlValueType::kUnsignedLongLong:
          StoreValue(f, gpu->power_field_type, static_cast<unsigned long long>(mw));
          break;
        default:
          StoreValue(f, NvmlValueType::kUnsignedInt, mw);
      }
    } else if (f.field_id == kNvmlFiTotalEnergyConsumption && gpu->energy_mj) {
      f.nvml_return = kNvmlSuccess;
      StoreValue(f, NvmlValueType::kUnsignedLongLong, *gpu->energy_mj);
    } else if (f.field_id != kNvmlFiPowerAverage && f.field_id != kNvmlFiTotalEnergyConsumption) {
      f.nvml_return = kInvalidArgument;
    }
  }
  return kNvmlSuccess;
}

}  // namespace

FakeNvml::FakeNvml() {
  DLBENCH_CHECK(g_fake == nullptr, "only one FakeNvml may exist at a time");
  g_fake = this;
}

FakeNvml::~FakeNvml() { g_fake = nullptr; }

NvmlApi FakeNvml::Api() const {
  NvmlApi api;
  api.init = &Init;
  api.shutdown = &Shutdown;
  api.error_string = &ErrorString;
  api.device_get_count = &DeviceGetCount;
  api.device_get_handle_by_index = &DeviceGetHandleByIndex;
  api.device_get_name = &DeviceGetName;
  api.device_get_uuid = &DeviceGetUuid;
  api.system_get_driver_version = &SystemGetDriverVersion;
  api.system_get_nvml_version = &SystemGetNvmlVersion;
  api.device_get_utilization_rates = &DeviceGetUtilizationRates;
  api.device_get_memory_info = &DeviceGetMemoryInfo;
  api.device_get_power_usage = &DeviceGetPowerUsage;
  api.device_get_enforced_power_limit = &DeviceGetPowerLimit;
  api.device_get_total_energy_consumption = without_energy_function ? nullptr : &DeviceGetEnergy;
  api.device_get_clock_info = &DeviceGetClockInfo;
  api.device_get_temperature = &DeviceGetTemperature;
  api.device_get_pcie_throughput = &DeviceGetPcieThroughput;
  api.device_get_clocks_event_reasons = &DeviceGetEvents;
  api.device_get_supported_clocks_event_reasons = &DeviceGetSupportedEvents;
  api.device_get_compute_running_processes = &DeviceGetComputeRunningProcesses;
  api.device_get_field_values = without_field_values_function ? nullptr : &DeviceGetFieldValues;
  return api;
}

}  // namespace dlbench::monitor
