// One host's figures over a cell, from its monitor's series (docs/distributed.md "Every host of a
// group run is monitored", adr/0012-monitoring-every-host.md): what a task of a group run sends
// rank 0 about its own host, and what rank 0 computes the same way for its own. Pure: series in,
// a small JSON object out, whatever the cell's length.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

#include "record/records.h"

namespace dlbench::monitor {

// The figures' names (host_figure below), over every sample (the rank's runner's whole life,
// start-up included; not the measured window, which is rank 0's to decide after the tasks
// reported):
//   rounds                        distinct sample times
//   span_s                        last sample time minus the first
//   host_cpu_busy_cores_mean/max  host.cpu_busy_cores
//   host_cpu_util_mean_pct        host.cpu_util_pct
//   host_mem_peak_bytes           host.mem_used_bytes
//   runner_cpu_cores              proc.cpu_s's rise over its readings' span (the runner's tree)
//   runner_rss_peak_bytes         proc.rss_bytes
//   gpus                          per NVML index present: index, util_mean_pct (sm_util_pct),
//                                 board_power_mean_w and board_power_max_w (power_w),
//                                 mem_used_peak_bytes, temp_peak_c
// A figure whose series is absent (or only NaN) is absent, never 0; no samples: {"rounds": 0}.
namespace host_figure {
inline constexpr char kRounds[] = "rounds";
inline constexpr char kSpanS[] = "span_s";
inline constexpr char kCpuBusyCoresMean[] = "host_cpu_busy_cores_mean";
inline constexpr char kCpuBusyCoresMax[] = "host_cpu_busy_cores_max";
inline constexpr char kCpuUtilMeanPct[] = "host_cpu_util_mean_pct";
inline constexpr char kMemPeakBytes[] = "host_mem_peak_bytes";
inline constexpr char kRunnerCpuCores[] = "runner_cpu_cores";
inline constexpr char kRunnerRssPeakBytes[] = "runner_rss_peak_bytes";
inline constexpr char kGpus[] = "gpus";
inline constexpr char kGpuIndex[] = "index";
inline constexpr char kGpuUtilMeanPct[] = "util_mean_pct";
inline constexpr char kGpuPowerMeanW[] = "board_power_mean_w";
inline constexpr char kGpuPowerMaxW[] = "board_power_max_w";
inline constexpr char kGpuMemPeakBytes[] = "mem_used_peak_bytes";
inline constexpr char kGpuTempPeakC[] = "temp_peak_c";
}  // namespace host_figure
nlohmann::json SummarizeHost(const std::vector<record::SeriesPoint>& series);

// The cell's extras key of a group run's hosts (orchestrator/rank_group.cc): one entry per rank,
// {rank, host, addr, figures (SummarizeHost), gpu_attribution} or {rank, host, addr, missing}.
inline constexpr char kHostsExtrasKey[] = "hosts";

// A task's host report larger than this (its JSON) is refused by rank 0 with a warning in the
// cell, and a task does not send one (it sends its size instead). A summary of a host of 16 GPUs is
// about 3 KiB.
inline constexpr std::size_t kMaxHostReportBytes = std::size_t{64} * 1024;

}  // namespace dlbench::monitor
