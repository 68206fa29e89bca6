// Samplers: what the orchestrator watches while a cell runs (R5, R6). Each sampler reads one
// source (NVML, procfs, RAPL) through a seam so tests can feed canned readings.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "record/records.h"

namespace dlbench::monitor {

using record::SeriesPoint;

// A compute process on a GPU, from NVML's process list (nvmlDeviceGetComputeRunningProcesses).
struct GpuProcess {
  int nvml_index = 0;
  std::string gpu_uuid;                     // "GPU-5e0c..." when NVML told it
  unsigned int pid = 0;                     // a host PID: inside a PID namespace it need not be one of ours
  std::optional<std::uint64_t> used_bytes;  // its device memory, CUDA context included; unknown
                                            // without permission
  std::string name;                         // /proc/<pid>/comm, or empty when not readable here
};

// Called from the monitor thread only, never concurrently with itself.
class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual std::string name() const = 0;
  // "ok", or why it samples nothing ("unsupported: libnvidia-ml.so.1 not found").
  virtual std::string state() const = 0;
  // The process whose tree is attributed to the cell (the runner); called before the first sample.
  virtual void SetTargetPid(pid_t pid) = 0;
  // Appends this instant's readings, all stamped t_ns.
  virtual void Sample(std::int64_t t_ns, std::vector<SeriesPoint>& out) = 0;
  // Static facts for the environment fingerprint (GPU names, driver, power limit...).
  virtual nlohmann::json Describe() const = 0;
  // The compute processes on this sampler's GPUs now; none for samplers without GPUs. Called
  // only while the monitor is not running, like Describe.
  virtual std::vector<GpuProcess> GpuProcesses() { return {}; }
};

// Runs samplers on one thread at a fixed interval. Start/Stop are called by the orchestrator
// around a cell; samples are kept in memory and handed over by Stop().
//
// Timing contract: one round of Sample() calls at Start, then one every interval on a fixed
// schedule (start + k * interval; a round that overruns skips the ticks it missed rather than
// bunching), and one final round inside Stop(), so even a cell shorter than the interval has
// readings at both ends. Every point of a round carries the same t_ns, read from `clock` (the
// step records' clock in production; a SimulatedClock in tests). The thread waits on a condition
// variable, so Stop() returns after at most the round in progress, never a whole interval.
// Start/Stop/Describe are called from one thread (the orchestrator's); the monitor may be
// started again after Stop().
class Monitor {
 public:
  Monitor(std::vector<std::unique_ptr<Sampler>> samplers, const Clock& clock, double interval_ms);
  ~Monitor();  // stops the thread if running; samples not yet taken by Stop() are dropped
  // target_pid <= 0: no process is attributed (an idle baseline); proc.* series are not sampled.
  void Start(pid_t target_pid);
  // Ends sampling and returns every point since Start, in time order. Empty when not started.
  std::vector<SeriesPoint> Stop();
  // {sampler name: {state, facts}}. Call while not running (before Start or after Stop): samplers
  // are not required to describe themselves concurrently with sampling.
  nlohmann::json Describe() const;
  // Every sampler's GpuProcesses(): which processes hold the GPUs before a cell's runner starts
  // (docs/memory.md "Another process on the GPU"). Call while not running; empty while it runs.
  std::vector<GpuProcess> GpuProcesses();
  bool running() const { return running_.load(); }

 private:
  void Loop();
  void SampleRound(std::vector<SeriesPoint>& out);
  std::vector<std::unique_ptr<Sampler>> samplers_;
  const Clock& clock_;
  std::int64_t interval_ns_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::mutex mutex_;
  std::condition_variable wake_;     // signalled by Stop()
  bool stop_requested_ = false;      // guarded by mutex_
  std::vector<SeriesPoint> points_;  // guarded by mutex_
};

// What DefaultSamplers builds.
struct SamplerOptions {
  // NVML device indices to sample (NVML's order is PCI bus order, which need not match CUDA's;
  // map through the UUIDs in Describe()). Empty: every GPU.
  std::vector<int> gpu_devices;
  // nvmlDeviceGetPcieThroughput blocks ~20 ms per call (it counts bytes over a 20 ms window), so
  // PCIe throughput is read on every Nth round only; 0 disables it.
  int pcie_every_n_samples = 10;
  // nvmlDeviceGetTotalEnergyConsumption cost 4.1 ms of CPU per call on the H200 (bench/monitor_bench.cc,
  // BM_NvmlCall; docs/benchmarks.md), 4.1% of a core at 10 Hz, and 3.7-7.2 ms a call at the monitor's
  // cadence on the H100, so the energy counter is read on every Nth round only (50: every 5 s at 10
  // Hz; the monitor measured 0.99% of a core with it, 1.30% with every 10th round, docs/monitoring.md);
  // a cell's energy is the counter between its readings inside the window plus the integrated power
  // at the window's two edges, or the integrated power alone where a window holds fewer than two
  // readings (docs/monitoring.md). 1: every round.
  int energy_every_n_samples = 50;
  // Temperature, SM and memory clocks, clocks event reasons and the process list (the runner's
  // device memory and the count of other processes) are read every Nth round; utilisation,
  // memory used and power every round. 1 (the default): every round, because the per-call costs
  // measured on the H100 and H200 put these readings together at 7 to 9 us a round (under 0.01%
  // of a core at 10 Hz; docs/monitoring.md), while fewer samples weaken the leak rule (at least
  // kLeakMinSamples in its window) and the throttle fractions. dlbench-bench-monitor prints a
  // round's CPU time and the monitor's share of a core with 1 and with 10, so a GPU session can
  // show whether a larger default pays.
  int slow_every_n_samples = 1;
  // The runner's process tree (its processes and threads) is found again every Nth round; the
  // rounds between read the known processes' and threads' files only (ProcFsSampler). 1: every
  // round. Finding it cost about half of the procfs sampler's round (docs/monitoring.md).
  int proc_tree_every_n_samples = 10;
  // Power and the energy counter through one nvmlDeviceGetFieldValues call per GPU (kAuto, where
  // the driver exports it) or one call each (kOff). Off until dlbench-bench-monitor has measured
  // on a real driver that the batched call costs less (docs/monitoring.md).
  enum class FieldValues { kOff, kAuto };
  FieldValues nvml_field_values = FieldValues::kOff;
};

// The samplers this machine supports: NVML, procfs, RAPL. Each is present even when its source
// is missing; it then samples nothing and its state() says "unsupported: <why>".
std::vector<std::unique_ptr<Sampler>> DefaultSamplers();
std::vector<std::unique_ptr<Sampler>> DefaultSamplers(const SamplerOptions& options);

}  // namespace dlbench::monitor
