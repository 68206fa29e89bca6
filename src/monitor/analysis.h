// What a cell's samples say (R4, R5, R6, R14): utilisation, clocks, power and energy, host load,
// memory peaks and growth, throttling. Pure: the samples and step records in, metrics and
// verdicts out; nothing here reads a clock or a device. docs/monitoring.md states every rule.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "record/records.h"

namespace dlbench::monitor {

enum class Scenario { kTrain, kInfer };

struct AnalysisInput {
  std::vector<record::SeriesPoint> series;  // the cell's samples (Monitor::Stop), any order
  std::vector<record::StepRow> steps;       // step records of every rank, each rank in step order
  // The measured window (decided by the measurement policy): the analysed rank's records
  // [first_step, first_step + steps) are measured.
  record::MeasuredWindow window;
  Scenario scenario = Scenario::kInfer;
  // Samples per step when a record's own `samples` is 0 (a runner that does not fill it).
  std::uint32_t samples_per_step = 0;
  // Samples taken with the GPU idle before the cell (`measure: idle_baseline_s`); empty: none.
  std::vector<record::SeriesPoint> idle_series;
  // Whether clocks limited by the board's power limit (sw_power_cap) make the cell invalid. Off by
  // default: a saturating workload on an H200 sits at its power cap as its steady state (the
  // limit is in the fingerprint), so it is reported as a warning; thermal and hardware slowdowns
  // always invalidate.
  bool power_cap_invalidates = false;
  // Whether the window starts at the run's first step with no warm-up cut (a converge cell's
  // `whole_run` window): start-up allocations (allocator pools, thread pools, the first
  // evaluation's buffers) then sit inside it and read as growth, so the leak test judges only the
  // window's second half (by steps), where a real leak still grows as it did from the start.
  bool window_holds_warmup = false;
  // The processes outside the driver's tree that used the most CPU while the cell ran
  // (busy_processes.h: DescribeBusiest); a `contended` reason names them. Empty: not known.
  std::string busiest_elsewhere;
};

struct CellAnalysis {
  // Names carry their unit: gpu_util_mean_pct, gpu_util_p5_pct, gpu_mem_util_mean_pct,
  // sm_clock_mean_mhz, power_mean_w, power_max_w, temp_max_c, energy_total_j,
  // energy_per_step_j, energy_per_sample_j, idle_power_w, energy_above_idle_per_step_j,
  // energy_above_idle_per_sample_j, cpu_package_energy_per_step_j, cpu_package_energy_per_sample_j,
  // clocks_throttled_fraction, pcie_tx_mean_bytes_per_s, pcie_rx_mean_bytes_per_s,
  // host_cpu_util_pct, proc_cpu_util_pct, proc_rss_peak_bytes, host_mem_used_peak_bytes,
  // gpu_mem_used_peak_bytes, device_proc_mem_peak_bytes, rss_growth_bytes_per_step (+ _ci_low,
  // _ci_high), device_mem_growth_bytes_per_step (+ _ci_low, _ci_high). A metric whose series is
  // absent (no GPU, no RAPL) is absent, never 0.
  std::vector<record::MetricRecord> metrics;
  // Each makes the cell invalid: "throttled: hw_thermal_slowdown during 35% of samples (gpu0)",
  // "leaking: host RSS grows 65536 B/step [CI 6.4e+04, 6.7e+04]", "contended: 1.30 CPU cores were
  // busy outside the runner ...". Each starts with its verdict's name (record::VerdictOfReason).
  std::vector<std::string> verdict_reasons;
  // Worth a look, not invalidating: low GPU busy time in training with its likely cause, power cap.
  std::vector<std::string> warnings;
  // Facts about how metrics were computed: energy_method ("counter" | "power_integral"),
  // window_start_ns, window_end_ns, samples_in_window, leak test details.
  nlohmann::json info = nlohmann::json::object();

  const record::MetricRecord* Find(const std::string& name) const;
};

// Only samples inside the measured window count: from the first post-warm-up step's start to the
// last step's end, on the analysed rank (rank 0, or the lowest rank present). Counters (energy,
// CPU seconds) are interpolated at the window's edges.
CellAnalysis AnalyzeCell(const AnalysisInput& input);

// What the samples say changed between two spans of a cell's window (the first and last tenth of
// a drifting window, or before and after a level shift), for the verdict to name a likely cause:
// "the SM clock fell from 1980 to 1755 MHz (gpu0)", "board power rose from 410 to 690 W",
// "host CPU outside the runner rose from 0.1 to 1.2 cores". A reading counts when its mean moved
// by at least kCauseMinRelChange (clocks, power), by kCauseMinCores (host CPU outside the
// runner's process tree) or by kCauseMinStealPct (host CPU steal, "host CPU steal ... rose from
// 0.4% to 9.8% of the CPUs' time"); the largest change comes first. Empty when nothing moved or the series
// are absent.
std::vector<std::string> ExplainChange(const std::vector<record::SeriesPoint>& series,
                                       std::int64_t a_start_ns, std::int64_t a_end_ns,
                                       std::int64_t b_start_ns, std::int64_t b_end_ns);
inline constexpr double kCauseMinRelChange = 0.03;
inline constexpr double kCauseMinCores = 0.25;
// Percentage points of all CPUs' time: a steal change smaller than this is not named.
inline constexpr double kCauseMinStealPct = 2.0;

// Leak rule constants (documented in docs/monitoring.md).
inline constexpr double kLeakMaxPValue = 0.01;
inline constexpr double kLeakFloorBytesPerStep = 4096;     // one page per step
inline constexpr double kLeakFloorFractionPerStep = 1e-5;  // 0.1% of the level per 100 steps
inline constexpr std::size_t kLeakMinSamples = 10;
// A leak keeps what it takes, so even the lowest readings rise, and at a steady pace. The judged
// samples are cut into thirds in time order and each third's lowest reading (its trough) taken:
// the last third's trough must exceed the first's by more than kLeakMinTroughRiseBytes, and the
// troughs must rise from the middle third's to the last's at least kLeakMinLatePaceRatio times as
// fast (bytes per second between the troughs' samples) as from the first's to the middle's.
// Memory held during part of each step (activations sampled at other phases) moves the mean and
// not the troughs; an allocator settling (glibc extends its heap by 128 KiB at a time, the caching
// allocator reserves 2 MiB segments) rises by less; buffers filling to a high-water mark rise fast
// early and slowly late.
inline constexpr double kLeakMinTroughRiseBytes = 2.0 * (1 << 20);  // 2 MiB
inline constexpr double kLeakMinLatePaceRatio = 0.5;
inline constexpr double kTrainingMinGpuBusyPct = 70;
// What kept a GPU waiting (any scenario, GPU busy under kTrainingMinGpuBusyPct of the window): the
// runner's process tree using at least kHostBoundMinCores of a CPU core is host-bound (the thread
// that launches kernels saturates its core, so the launches set the pace); under
// kHostIdleMaxCores the host was not busy either, and the step waits on something else. Between
// the two nothing is said. The finding is a warning (the measurement is sound; the workload is
// what it is) and info.bound: {kind: host_bound | host_idle, gpu_busy_pct, runner_cores}.
inline constexpr double kHostBoundMinCores = 0.85;
// From this many cores the runner does CPU work of its own in the step, beyond launching kernels.
inline constexpr double kHostBoundMaxLaunchCores = 1.5;
inline constexpr double kHostIdleMaxCores = 0.5;
// A cell is contended when, during its measured window, this many CPU cores on average were busy
// outside the runner's process tree (the dlbench driver and its monitor included, which use a
// few percent of one core), or when any other process computed on one of its GPUs.
inline constexpr double kContendedCores = 0.5;
// A cell is contended when its runner's threads spent at least this long runnable but waiting for
// a CPU, relative to the time they ran: other work took CPUs the runner wanted. (Busy cores
// outside the runner alone are not contention: on a machine with spare cores they cost nothing.)
inline constexpr double kContendedWaitRatio = 0.05;
inline constexpr double kThrottleMinFraction = 0.01;

}  // namespace dlbench::monitor
