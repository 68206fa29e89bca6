// A fake NVML for tests: canned readings served through real NvmlApi function pointers, so the
// sampler's own parsing (units, buffer sizing, unsupported readings) is what the tests exercise.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "monitor/nvml_sampler.h"

namespace dlbench::monitor {

// One fake GPU. An empty optional makes its entry point return NVML_ERROR_NOT_SUPPORTED.
struct FakeGpu {
  std::string name = "NVIDIA H200";
  std::string uuid = "GPU-00000000-0000-0000-0000-000000000000";
  std::optional<unsigned int> sm_util_pct = 0, mem_util_pct = 0;
  std::optional<unsigned long long> mem_used_bytes = 0, mem_total_bytes = 150ull << 30;
  std::optional<unsigned int> power_mw = 0, power_limit_mw = 700000;
  std::optional<unsigned long long> energy_mj = 0;
  std::optional<unsigned int> sm_clock_mhz = 1980, mem_clock_mhz = 2619, temp_c = 30;
  std::optional<unsigned int> pcie_tx_kb_per_s = 0, pcie_rx_kb_per_s = 0;
  std::optional<unsigned long long> clocks_event_reasons = 0x1, supported_clocks_event_reasons = 0x1ff;
  std::optional<std::vector<NvmlProcessInfo>> processes = std::vector<NvmlProcessInfo>{};
  // Processes that appear between the sizing call and the fetch (tests the retry); consumed once.
  std::vector<NvmlProcessInfo> processes_arriving_late;
  // nvmlDeviceGetFieldValues: a field id listed here gets this return code instead of its value.
  std::map<unsigned int, NvmlReturn> field_errors;
  // Served in the field (nvmlFieldValue_t.valueType) for the power field; the sampler must read
  // whichever type the driver chose.
  NvmlValueType power_field_type = NvmlValueType::kUnsignedInt;
};

// At most one FakeNvml exists at a time (NVML's C entry points carry no context, so the functions
// reach the live fake through a global). Not thread-safe: change readings only while no Monitor
// thread samples through it.
class FakeNvml {
 public:
  FakeNvml();
  ~FakeNvml();
  FakeNvml(const FakeNvml&) = delete;
  FakeNvml& operator=(const FakeNvml&) = delete;

  // Entry points that read this fake. Null where the matching `without_*` flag below is set.
  NvmlApi Api() const;

  std::vector<FakeGpu> gpus{FakeGpu{}};
  NvmlReturn init_result = kNvmlSuccess;
  std::string driver_version = "580.159.04";
  std::string nvml_version = "13.580.159.04";
  bool without_energy_function = false;        // a library without nvmlDeviceGetTotalEnergyConsumption
  bool without_field_values_function = false;  // a library without nvmlDeviceGetFieldValues
  // What nvmlDeviceGetFieldValues itself returns (SUCCESS: each field has its own code).
  NvmlReturn field_values_result = kNvmlSuccess;
  int field_values_calls = 0;
  std::vector<unsigned int> last_field_ids;  // the ids the latest field-values call asked for
  int power_calls = 0;                       // nvmlDeviceGetPowerUsage
  int energy_calls = 0;                      // nvmlDeviceGetTotalEnergyConsumption
  int clock_calls = 0;                       // nvmlDeviceGetClockInfo
  int init_calls = 0;
  int shutdown_calls = 0;
  int pcie_calls = 0;
  int process_calls = 0;
};

}  // namespace dlbench::monitor
