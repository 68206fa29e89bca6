// The input-bound verdict (R7; docs/input-pipeline.md "The verdict"): is a cell that takes its
// batches from the host limited by its input pipeline, by the host-to-device copy, or by its
// compute? Pure functions: step records, the control cell's speed (the same cell with
// data: device, from the same run), the runner's pipeline counters and the monitor's figures in;
// a verdict, its reasons and what would help out. Nothing here reads a clock, a file or a device.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "record/step.h"

namespace dlbench::monitor {

// A cell's steps summed by phase. Only steps that report both data_wait and compute count (the
// torch runner's, whose step is data_wait + copy + compute: the copy is the remainder, see
// runners/torch/data/feeder.h); others are left out of every sum.
struct StepPhaseTotals {
  std::int64_t steps = 0;
  double step_ns = 0;     // sum of end - start
  double wait_ns = 0;     // sum of data_wait
  double copy_ns = 0;     // sum of max(0, end - start - data_wait - compute - comm)
  double compute_ns = 0;  // sum of compute (and comm, when reported)
  // The share of all waiting done by the 10% of steps (at least one) that waited longest: 0.1
  // when every step waits alike, near 1 when a few long waits hold it all. 0 without any wait.
  double wait_top_decile_share = 0;

  double wait_share() const { return step_ns > 0 ? wait_ns / step_ns : 0; }
  double copy_share() const { return step_ns > 0 ? copy_ns / step_ns : 0; }
  double compute_share() const { return step_ns > 0 ? compute_ns / step_ns : 0; }
};

// Over the measured window's steps (record::MeasuredSteps).
StepPhaseTotals SumStepPhases(const std::vector<record::StepRecord>& steps);

// Energy in joules of a power series (t_ns, watts; sorted by time) over the given intervals
// [begin_ns, end_ns): the trapezoids of the series clipped to each interval. Intervals outside the
// series' span, and series of fewer than two points, contribute nothing.
double EnergyDuringIntervals(const std::vector<std::pair<std::int64_t, double>>& power,
                             const std::vector<std::pair<std::int64_t, std::int64_t>>& intervals);

// What the runner's EXTRAS say about the pipeline (record::metric::kData*), and its knobs.
struct PipelineFacts {
  int workers = 0;       // 0: the source has no workers (host)
  int usable_cores = 0;  // the CPUs the runner may use
  int prefetch = 0;
  bool cache = false;
  bool pin_memory = false;
  bool async_copy = false;
  std::optional<double> worker_cpu_util_pct;
  std::optional<double> worker_busy_pct;
  std::optional<double> read_pct;
  std::optional<double> decode_pct;
};

struct InputVerdictInputs {
  StepPhaseTotals phases;                        // the cell's, over its measured window
  double samples_per_s = 0;                      // the cell's
  double control_samples_per_s = 0;              // its data: device control's
  std::optional<double> pipeline_samples_per_s;  // its pipeline_only: true twin's, when run
  std::optional<double> gpu_util_mean_pct;       // the monitor's, over the window
  std::optional<double> energy_total_j;          // the monitor's, over the window
  std::optional<double> energy_while_waiting_j;  // EnergyDuringIntervals over the steps' waits
  PipelineFacts pipeline;
};

enum class InputBound { kComputeBound, kInputBound, kCopyBound };
const char* InputBoundName(InputBound bound);  // "compute-bound", "input-bound", "copy-bound"

// The rule's thresholds (docs/input-pipeline.md states them with their reasons).
inline constexpr double kBoundSlowdown = 0.05;     // slower than the control by 5% or more
inline constexpr double kMinPhaseShare = 0.02;     // a wait or copy below 2% of step time explains nothing
inline constexpr double kSaturatedCpuPct = 80.0;   // workers' CPU use that means they are the limit
inline constexpr double kBurstyTopDecile = 0.5;    // half the wait in a tenth of the steps
inline constexpr double kDecodeDominatesPct = 50;  // decode's share of the workers' busy time
inline constexpr double kIdleInIoCpuPct = 50.0;    // busy workers using less CPU than this wait on reads
inline constexpr double kIoReadPct = 30.0;

struct InputVerdict {
  InputBound bound = InputBound::kComputeBound;
  double slowdown = 0;         // 1 - samples_per_s / control_samples_per_s
  double control_speedup = 0;  // control_samples_per_s / samples_per_s
  double wait_share = 0;
  double copy_share = 0;
  double compute_share = 0;
  std::optional<double> gpu_idle_share;        // 1 - gpu_util_mean_pct / 100
  std::optional<double> waiting_energy_j;      // energy while the step waited for data
  std::optional<double> waiting_energy_share;  // of the cell's energy
  std::vector<std::string> reasons;            // the figures behind the verdict, in words
  std::vector<std::string> advice;             // what would help, most likely first; empty for compute-bound
};

// The rule: a cell at least kBoundSlowdown slower than its control is limited by its input path,
// copy-bound when the copy's share of step time exceeds the wait's, input-bound otherwise; any
// other cell is compute-bound. Advice for input-bound cells: more workers when their CPU is
// saturated (or caching, or cheaper decode, when they already have every core), more prefetch
// when the waits come in bursts, caching when decode dominates, a faster disk when busy workers use
// little CPU and spend their time in reads. With the pipeline's own rate (pipeline_samples_per_s,
// its pipeline_only twin's) the rate decides first: a pipeline at least as fast as the control
// gets more prefetch, first, when its waits are bursts or its workers stood blocked (busy under
// kSaturatedCpuPct); one slower than the control gets no prefetch but the workers that rate needs
// (ceil(workers x control / alone)), or caching and a cheaper decode when that exceeds the usable
// cores. For copy-bound cells: pinned memory, then the asynchronous copy. control_samples_per_s
// and samples_per_s must be positive (DLBENCH_CHECK).
InputVerdict DecideInputBound(const InputVerdictInputs& in);

}  // namespace dlbench::monitor
