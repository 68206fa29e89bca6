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

#include "monitor/sampler.h"
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

// The warnings of a cell whose GPUs other processes held just before its runner started (docs/
// memory.md "Another process on the GPU"): one per GPU of the cell that NVML listed a compute
// process on, naming each process (pid, /proc name) and the memory it held. `before` is
// Monitor::GpuProcesses() taken just before the runner was spawned (so none of them is the cell's);
// `gpus` the cell's NVML indices (AttributeGpus). When the runner named no GPU (nullopt), every GPU
// in `before` counts if `cell_on_cuda` (the cell's device is cuda), none otherwise.
std::vector<std::string> OtherGpuProcessWarnings(const std::vector<GpuProcess>& before,
                                                 const std::optional<std::vector<int>>& gpus,
                                                 bool cell_on_cuda);

// Drops the gpu<i>.* points whose i is not in nvml_indices; other series are kept.
void KeepGpuSeries(std::vector<record::SeriesPoint>& series, const std::vector<int>& nvml_indices);

}  // namespace dlbench::monitor
