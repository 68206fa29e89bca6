// The GPU sampler: NVML loaded at run time (dlopen of libnvidia-ml.so.1), so the dlbench binary
// builds and runs on machines without a driver. A missing library, a failed nvmlInit or zero GPUs
// is a state ("unsupported: ..."), never a stream of zeros.
//
// The seam is NvmlApi, a table of pointers with NVML's own C signatures: LoadNvml fills it with
// dlsym, FakeNvml (fake_nvml.h) with functions over canned readings, and NvmlSampler's parsing
// (buffer sizing, units, unsupported fields) runs the same code against both.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "monitor/procfs_sampler.h"
#include "monitor/sampler.h"

namespace dlbench::monitor {

// Types with nvml.h's layouts (identical in the NVML 11 to 13 headers), declared here so the build
// needs no CUDA headers.
using NvmlReturn = int;
struct NvmlDeviceOpaque;
using NvmlDevice = NvmlDeviceOpaque*;
struct NvmlUtilization {
  unsigned int gpu;     // % of the sample period with at least one kernel resident
  unsigned int memory;  // % of the sample period with device memory being read or written
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct NvmlProcessInfo {  // nvmlProcessInfo_t (= _v2), filled by ..._v3
  unsigned int pid;
  unsigned long long used_gpu_memory;  // bytes, CUDA context included; kNvmlValueNotAvailable if unknown
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
static_assert(sizeof(NvmlProcessInfo) == 24, "must match nvmlProcessInfo_t");
struct NvmlFieldValue {      // nvmlFieldValue_t, for nvmlDeviceGetFieldValues
  unsigned int field_id;     // NVML_FI_* (in)
  unsigned int scope_id;     // 0: the GPU itself (in; "unused" in older headers, to be 0 there too)
  long long timestamp_us;    // CPU time of the value, since 1970 (out)
  long long latency_us;      // how long NVML took to update the value (out)
  int value_type;            // nvmlValueType_t: which member of nvmlValue_t `value` holds (out)
  int nvml_return;           // this field's own nvmlReturn_t; `value` is undefined unless SUCCESS (out)
  unsigned long long value;  // nvmlValue_t's 8 bytes, read through FieldValueNumber
};
static_assert(sizeof(NvmlFieldValue) == 40, "must match nvmlFieldValue_t");

inline constexpr NvmlReturn kNvmlSuccess = 0;
inline constexpr NvmlReturn kNvmlErrorInvalidArgument = 2;
inline constexpr NvmlReturn kNvmlErrorNotSupported = 3;
inline constexpr NvmlReturn kNvmlErrorNoPermission = 4;
inline constexpr NvmlReturn kNvmlErrorNotFound = 6;
inline constexpr NvmlReturn kNvmlErrorInsufficientSize = 7;
inline constexpr NvmlReturn kNvmlErrorDriverNotLoaded = 9;
inline constexpr NvmlReturn kNvmlErrorFunctionNotFound = 13;
inline constexpr NvmlReturn kNvmlErrorUnknown = 999;
inline constexpr int kNvmlClockSm = 1;         // nvmlClockType_t NVML_CLOCK_SM
inline constexpr int kNvmlClockMem = 2;        // NVML_CLOCK_MEM
inline constexpr int kNvmlTemperatureGpu = 0;  // nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU
inline constexpr int kNvmlPcieTxBytes = 0;     // nvmlPcieUtilCounter_t NVML_PCIE_UTIL_TX_BYTES
inline constexpr int kNvmlPcieRxBytes = 1;     // NVML_PCIE_UTIL_RX_BYTES
inline constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;
// Field ids (NVML_FI_DEV_*) whose value is what the matching single call returns: the energy
// counter in mJ (= nvmlDeviceGetTotalEnergyConsumption), and power in mW averaged over 1 s, which
// is what nvmlDeviceGetPowerUsage returns on Ampere (except GA100) and newer; older GPUs report
// that field NOT_SUPPORTED and keep the single call (their instantaneous power). GPU temperature,
// clocks and PCIe throughput have no field id in the nvml.h read for this (ids below
// NVML_FI_MAX = 200) and stay single calls.
inline constexpr unsigned int kNvmlFiTotalEnergyConsumption = 83;
inline constexpr unsigned int kNvmlFiPowerAverage = 185;
// nvmlValueType_t: NVML_VALUE_TYPE_DOUBLE = 0 ... NVML_VALUE_TYPE_UNSIGNED_SHORT = 6.
enum class NvmlValueType : int {
  kDouble = 0,
  kUnsignedInt = 1,
  kUnsignedLong = 2,
  kUnsignedLongLong = 3,
  kSignedLongLong = 4,
  kSignedInt = 5,
  kUnsignedShort = 6,
};
// A successful field's value as a double; nullopt for a type this code does not know.
std::optional<double> FieldValueNumber(const NvmlFieldValue& field);

// Clocks event ("throttle") reason bits, nvmlClocksEventReason* (same bits under both names).
inline constexpr std::uint64_t kClocksEventGpuIdle = 0x1;
inline constexpr std::uint64_t kClocksEventSwPowerCap = 0x4;
inline constexpr std::uint64_t kClocksEventHwSlowdown = 0x8;
inline constexpr std::uint64_t kClocksEventSwThermal = 0x20;
inline constexpr std::uint64_t kClocksEventHwThermal = 0x40;
inline constexpr std::uint64_t kClocksEventHwPowerBrake = 0x80;

// NVML's entry points. The first five are required; any other may be null (an older driver),
// and then its series is simply not produced.
struct NvmlApi {
  NvmlReturn (*init)() = nullptr;                                                 // nvmlInit_v2
  NvmlReturn (*shutdown)() = nullptr;                                             // nvmlShutdown
  const char* (*error_string)(NvmlReturn) = nullptr;                              // nvmlErrorString
  NvmlReturn (*device_get_count)(unsigned int*) = nullptr;                        // nvmlDeviceGetCount_v2
  NvmlReturn (*device_get_handle_by_index)(unsigned int, NvmlDevice*) = nullptr;  // ..._v2
  NvmlReturn (*device_get_name)(NvmlDevice, char*, unsigned int) = nullptr;
  NvmlReturn (*device_get_uuid)(NvmlDevice, char*, unsigned int) = nullptr;
  NvmlReturn (*system_get_driver_version)(char*, unsigned int) = nullptr;
  NvmlReturn (*system_get_nvml_version)(char*, unsigned int) = nullptr;
  NvmlReturn (*device_get_utilization_rates)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*device_get_memory_info)(NvmlDevice, NvmlMemory*) = nullptr;
  NvmlReturn (*device_get_power_usage)(NvmlDevice, unsigned int* milliwatts) = nullptr;
  NvmlReturn (*device_get_enforced_power_limit)(NvmlDevice, unsigned int* milliwatts) = nullptr;
  NvmlReturn (*device_get_total_energy_consumption)(NvmlDevice, unsigned long long* millijoules) = nullptr;
  NvmlReturn (*device_get_clock_info)(NvmlDevice, int clock_type, unsigned int* mhz) = nullptr;
  NvmlReturn (*device_get_temperature)(NvmlDevice, int sensor, unsigned int* celsius) = nullptr;
  NvmlReturn (*device_get_pcie_throughput)(NvmlDevice, int counter, unsigned int* kb_per_s) = nullptr;
  // nvmlDeviceGetCurrentClocksEventReasons, or ...ClocksThrottleReasons on drivers before 12.2.
  NvmlReturn (*device_get_clocks_event_reasons)(NvmlDevice, unsigned long long*) = nullptr;
  NvmlReturn (*device_get_supported_clocks_event_reasons)(NvmlDevice, unsigned long long*) = nullptr;
  NvmlReturn (*device_get_compute_running_processes)(NvmlDevice, unsigned int* count,
                                                     NvmlProcessInfo*) = nullptr;  // _v3
  // nvmlDeviceGetFieldValues: several readings in one call, each with its own return code.
  NvmlReturn (*device_get_field_values)(NvmlDevice, int count, NvmlFieldValue* values) = nullptr;
};

// A dlopen'ed libnvidia-ml and its entry points. The library stays loaded while any copy of
// `library` lives.
struct NvmlLibrary {
  std::shared_ptr<void> library;
  NvmlApi api;
  std::vector<std::string> missing;  // optional symbols the library lacks
};

// kUnsupported when the library cannot be opened or lacks a required symbol (message says which).
Result<NvmlLibrary> LoadNvml(const std::string& soname = "libnvidia-ml.so.1");

// Series per sampled device i (NVML index), when the driver supports the reading:
//   gpu<i>.sm_util_pct, gpu<i>.mem_util_pct, gpu<i>.mem_used_bytes, gpu<i>.power_w,
//   gpu<i>.energy_j (the driver's counter since it loaded, mJ -> J), gpu<i>.sm_clock_mhz,
//   gpu<i>.mem_clock_mhz, gpu<i>.temp_c, gpu<i>.pcie_tx_bytes_per_s, gpu<i>.pcie_rx_bytes_per_s
//   (every options.pcie_every_n_samples rounds), gpu<i>.clocks_event_reasons (bitmask as double),
//   gpu<i>.proc_mem_bytes (memory of the target's process tree on that GPU; only when NVML lists
//   a process of the tree: PIDs are host PIDs and do not match inside a PID namespace).
// Temperature, clocks, clocks event reasons and the process list (proc_mem_bytes, other_procs)
// are read every options.slow_every_n_samples rounds; energy every energy_every_n_samples. A
// round that does not read a series has no point of it (never a repeated or zero value).
// With options.nvml_field_values = kAuto and a driver exporting nvmlDeviceGetFieldValues, power
// and energy are read in one call per GPU; a field whose own return code is not SUCCESS is read
// by its single call instead that round, and for good when the code says the field will never
// work (NOT_SUPPORTED, NO_PERMISSION, FUNCTION_NOT_FOUND, INVALID_ARGUMENT: an id the driver
// does not know). Values and series are the same either way.
// A reading that returns NOT_SUPPORTED once is not asked again (and Describe lists it).
class NvmlSampler final : public Sampler {
 public:
  // Calls api.init; on failure, or with no GPU, the sampler is unsupported. `library` keeps the
  // functions alive (null for a fake). `procfs` resolves which GPU processes are the target's.
  NvmlSampler(NvmlApi api, std::shared_ptr<void> library, std::shared_ptr<const ProcFs> procfs,
              const SamplerOptions& options);
  ~NvmlSampler() override;  // nvmlShutdown when init succeeded
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  // A sampler that samples nothing and reports `reason` (the library could not be loaded).
  static std::unique_ptr<NvmlSampler> Unsupported(std::string reason);

  // Restricts sampling to these NVML indices (empty: all). Indices the driver does not have are
  // ignored and listed in Describe() as "missing_devices". Call before Start.
  void SetDevices(std::vector<int> nvml_indices);

  std::string name() const override { return "nvml"; }
  std::string state() const override { return state_; }
  void SetTargetPid(pid_t pid) override { target_ = pid; }
  void Sample(std::int64_t t_ns, std::vector<SeriesPoint>& out) override;
  // {driver_version, nvml_version, devices: [{index, name, uuid, power_limit_w,
  //  memory_total_bytes, supported_clocks_event_reasons}], sampled: [indices], unsupported: {...},
  //  pcie/energy/slow_every_n_samples, nvml_field_values: "off"|"auto",
  //  field_values: {gpu<i>: [series read through field values]} (only with "auto")}
  nlohmann::json Describe() const override;
  // Every compute process NVML lists on the sampled GPUs now, named from /proc/<pid>/comm where
  // that can be read. A GPU whose list cannot be read adds none.
  std::vector<GpuProcess> GpuProcesses() override;

 private:
  explicit NvmlSampler(std::string reason);
  enum class Reading {
    kSmUtil,
    kMemUtil,
    kMemUsed,
    kPower,
    kEnergy,
    kSmClock,
    kMemClock,
    kTemp,
    kPcieTx,
    kPcieRx,
    kEvents,
    kProcMem,
    kCount,
  };
  static constexpr int kReadingCount = static_cast<int>(Reading::kCount);
  // The readings nvmlDeviceGetFieldValues serves, by the field id whose value is the single call's.
  struct FieldReading {
    Reading reading;
    unsigned int field_id;
  };
  static constexpr FieldReading kFieldReadings[] = {{Reading::kPower, kNvmlFiPowerAverage},
                                                    {Reading::kEnergy, kNvmlFiTotalEnergyConsumption}};
  struct Device {
    int index = 0;
    NvmlDevice handle = nullptr;
    std::string series[kReadingCount];  // precomputed names: no formatting per round
    bool supported[kReadingCount] = {};
    // Read through nvmlDeviceGetFieldValues (kAuto only; cleared for a field that will never work).
    bool by_field[kReadingCount] = {};
    nlohmann::json facts;  // name, uuid, power limit, memory total
  };
  bool Ok(Device& device, Reading reading, NvmlReturn rc);
  // Reads this round's field-value readings of `device` (the `wanted` ones still by_field) in one
  // call; sets values[r] for each field that succeeded.
  void FetchFields(Device& device, const bool wanted[kReadingCount],
                   std::optional<double> values[kReadingCount]);
  void SampleProcesses(Device& device, std::int64_t t_ns, std::vector<SeriesPoint>& out);
  // Fills process_buffer_ with the device's compute processes; their count, or nullopt when NVML
  // refused (unsupported readings are marked as Sample marks them).
  std::optional<unsigned int> FetchProcesses(Device& device);
  std::string ErrorText(NvmlReturn rc) const;
  std::string ReadString(NvmlReturn (*fn)(char*, unsigned int)) const;

  NvmlApi api_;
  std::shared_ptr<void> library_;
  std::shared_ptr<const ProcFs> procfs_;
  SamplerOptions options_;
  std::string state_;
  bool initialized_ = false;
  unsigned int device_count_ = 0;
  std::vector<Device> devices_;
  std::vector<int> missing_devices_;
  pid_t target_ = 0;
  std::uint64_t rounds_ = 0;
  std::vector<NvmlProcessInfo> process_buffer_;  // reused across rounds
};

// The production NVML sampler: LoadNvml + NvmlSampler, or an unsupported one saying why.
std::unique_ptr<Sampler> MakeNvmlSampler(std::shared_ptr<const ProcFs> procfs, const SamplerOptions& options);

}  // namespace dlbench::monitor
