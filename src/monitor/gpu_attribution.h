// Which GPUs a cell's monitor figures come from. The monitor samples every GPU of the host; a
// cell uses some of them. A runner names its GPUs in the effective cell it sends with READY as
// "device_uuids" (docs/protocol.md), and the NVML sampler's description maps each UUID to the
// NVML index in the series names ("gpu3.power_w"). CUDA's device order need not be NVML's (and
// CUDA_VISIBLE_DEVICES renumbers), so the UUID is the only safe key.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "record/records.h"

namespace dlbench::monitor {

struct GpuAttribution {
  // NVML indices whose series belong to the cell; nullopt: every sampled GPU (the runner named
  // none, or none of its UUIDs is among the sampled GPUs). Empty: the cell uses no GPU.
  std::optional<std::vector<int>> nvml_indices;
  // One line for extras.monitor.gpu_attribution: what was chosen and why.
  std::string note;
};

// effective: the cell's READY "effective" object; monitor_description: Monitor::Describe().
GpuAttribution AttributeGpus(const nlohmann::json& effective, const nlohmann::json& monitor_description);

// Drops the gpu<i>.* points whose i is not in nvml_indices; other series are kept.
void KeepGpuSeries(std::vector<record::SeriesPoint>& series, const std::vector<int>& nvml_indices);

}  // namespace dlbench::monitor
