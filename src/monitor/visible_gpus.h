// How many GPUs the CUDA processes dlbench starts on this host can use, for plan-time checks
// (plan/host_gpus.h): NVML's device count, bounded by CUDA_VISIBLE_DEVICES when it is set.
#pragma once

#include <optional>
#include <string>

#include "monitor/nvml_sampler.h"

namespace dlbench::monitor {

struct VisibleGpus {
  int count = 0;
  std::string from;  // "NVML: 8 GPUs, CUDA_VISIBLE_DEVICES=0,1 keeps 2"
};

// The entries of CUDA_VISIBLE_DEVICES CUDA uses: those before the first empty or negative one
// ("0,1" -> 2, "" -> 0, "-1" -> 0, "0,-1,2" -> 1, "GPU-8f3e...,1" -> 2).
int CudaVisibleEntries(const std::string& value);

// `api` (null: NVML could not be loaded) and CUDA_VISIBLE_DEVICES (nullopt: unset). nullopt when
// neither says anything: NVML missing or failing and the variable unset (no driver here, or none
// that answers: the runner judges its cells when they run). Calls api->init and api->shutdown.
std::optional<VisibleGpus> CountVisibleGpus(const NvmlApi* api,
                                            const std::optional<std::string>& cuda_visible);

// The same for this process: libnvidia-ml.so.1 and this environment.
std::optional<VisibleGpus> ThisHostsVisibleGpus();

}  // namespace dlbench::monitor
