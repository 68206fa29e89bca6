// Names of the sampled series (record::SeriesPoint::series). A GPU reading is "gpu<N>.<field>"
// (N the NVML index); host readings are "host.<field>", the runner's process tree "proc.<field>".
// Samplers write these names, the analysis, the attribution and the exports read them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dlbench::record::series {

// Per-GPU fields (NVML).
inline constexpr std::string_view kSmUtilPct = "sm_util_pct";
inline constexpr std::string_view kMemUtilPct = "mem_util_pct";
inline constexpr std::string_view kSmClockMhz = "sm_clock_mhz";
inline constexpr std::string_view kMemClockMhz = "mem_clock_mhz";
inline constexpr std::string_view kPowerW = "power_w";
inline constexpr std::string_view kEnergyJ = "energy_j";
inline constexpr std::string_view kTempC = "temp_c";
inline constexpr std::string_view kMemUsedBytes = "mem_used_bytes";
inline constexpr std::string_view kProcMemBytes = "proc_mem_bytes";
inline constexpr std::string_view kOtherProcs = "other_procs";  // compute processes outside the runner's tree
inline constexpr std::string_view kClocksEventReasons = "clocks_event_reasons";
inline constexpr std::string_view kPcieTxBytesPerS = "pcie_tx_bytes_per_s";
inline constexpr std::string_view kPcieRxBytesPerS = "pcie_rx_bytes_per_s";

// Host and process-tree series (procfs, RAPL).
inline constexpr std::string_view kHostCpuUtilPct = "host.cpu_util_pct";
inline constexpr std::string_view kHostCpuBusyCores = "host.cpu_busy_cores";  // busy CPUs, all processes
// Ticks the virtual CPUs were ready but the hypervisor ran something else, % of all CPUs' ticks.
inline constexpr std::string_view kHostCpuStealPct = "host.cpu_steal_pct";
inline constexpr std::string_view kHostMemUsedBytes = "host.mem_used_bytes";
inline constexpr std::string_view kHostRaplEnergyJ = "host.rapl_energy_j";
inline constexpr std::string_view kProcCpuS = "proc.cpu_s";
inline constexpr std::string_view kProcRssBytes = "proc.rss_bytes";
// Seconds the runner tree's threads were runnable but waiting for a CPU (/proc/<pid>/task/<tid>/
// schedstat, second field), summed; a counter.
inline constexpr std::string_view kProcRunqueueWaitS = "proc.runqueue_wait_s";

// A load cell's query records (docs/load.md, "What dlbench stores"): one point per query and
// field, at the query's scheduled time (query ids follow scheduled order from 0). Durations in ns.
inline constexpr std::string_view kLoadLatencyNs = "load.latency_ns";   // completed - scheduled
inline constexpr std::string_view kLoadIssueDelayNs = "load.delay_ns";  // issued - scheduled
inline constexpr std::string_view kLoadBatchSamples = "load.batch";     // samples of the serving batch
inline constexpr std::string_view kLoadHostPreNs = "load.pre_ns";       // the decomposition, where sent
inline constexpr std::string_view kLoadH2dNs = "load.h2d_ns";
inline constexpr std::string_view kLoadComputeNs = "load.compute_ns";
inline constexpr std::string_view kLoadD2hNs = "load.d2h_ns";
inline constexpr std::string_view kLoadHostPostNs = "load.post_ns";

// scenario: converge's curves (docs/convergence.md), sent by the runner in EXTRAS
// info.converge.curves and stored as the cell's series. A point's t_ns is the end of the step
// (train.loss) or of the evaluation (eval.*, train.lr) it belongs to; its step is the number of
// rank-0 steps that ended at or before t_ns (record::StepsEndedBy).
inline constexpr std::string_view kTrainLoss = "train.loss";
inline constexpr std::string_view kTrainLr = "train.lr";
inline constexpr std::string_view kEvalAccuracy = "eval.accuracy";
inline constexpr std::string_view kEvalLoss = "eval.loss";
inline constexpr std::string_view kConvergeCurves[] = {kTrainLoss, kTrainLr, kEvalAccuracy, kEvalLoss};

// "gpu<index>.<field>".
std::string GpuSeriesName(int index, std::string_view field);

// A parsed "gpu<index>.<field>" name; nullopt for host/proc series or anything malformed.
struct GpuSeriesRef {
  int index = 0;
  std::string_view field;
};
std::optional<GpuSeriesRef> ParseGpuSeriesName(std::string_view name);

}  // namespace dlbench::record::series
