// Samplers: what the orchestrator watches while a cell runs (R5, R6). Each sampler reads one
// source (NVML, procfs, RAPL) through a seam so tests can feed canned readings.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "store/result_store.h"

namespace dlbench::monitor {

using store::SeriesPoint;

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
};

// Runs samplers on one thread at a fixed interval. Start/Stop are called by the orchestrator
// around a cell; samples are kept in memory and handed over by Stop().
class Monitor {
 public:
  Monitor(std::vector<std::unique_ptr<Sampler>> samplers, const Clock& clock, double interval_ms);
  ~Monitor();
  void Start(pid_t target_pid);
  std::vector<SeriesPoint> Stop();
  nlohmann::json Describe() const;  // {sampler name: {state, facts}}

 private:
  void Loop();
  std::vector<std::unique_ptr<Sampler>> samplers_;
  const Clock& clock_;
  std::int64_t interval_ns_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::mutex mutex_;
  std::vector<SeriesPoint> points_;
};

// The samplers this machine supports: NVML (when the driver loads), procfs, RAPL (when readable).
std::vector<std::unique_ptr<Sampler>> DefaultSamplers();

}  // namespace dlbench::monitor
