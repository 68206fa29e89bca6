#include "monitor/sampler.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/error.h"
#include "monitor/nvml_sampler.h"
#include "monitor/procfs_sampler.h"

namespace dlbench::monitor {
namespace {

// Room for a minute of rounds at 10 Hz with a dozen series each, so appending rarely reallocates
// while the cell runs.
constexpr std::size_t kInitialPointCapacity = 8192;

}  // namespace

Monitor::Monitor(std::vector<std::unique_ptr<Sampler>> samplers, const Clock& clock, double interval_ms)
    : samplers_(std::move(samplers)),
      clock_(clock),
      interval_ns_(static_cast<std::int64_t>(interval_ms * 1e6)) {
  DLBENCH_CHECK(interval_ns_ > 0, "the monitor interval must be positive");
}

Monitor::~Monitor() {
  if (running_.load()) (void)Stop();
}

void Monitor::Start(pid_t target_pid) {
  DLBENCH_CHECK(!running_.load(), "Monitor::Start called while running");
  for (auto& sampler : samplers_) sampler->SetTargetPid(target_pid);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_requested_ = false;
    points_.clear();
    points_.reserve(kInitialPointCapacity);
  }
  running_.store(true);
  thread_ = std::thread([this] { Loop(); });
}

std::vector<SeriesPoint> Monitor::Stop() {
  if (!running_.load()) return {};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_requested_ = true;
  }
  wake_.notify_all();
  thread_.join();
  running_.store(false);
  std::lock_guard<std::mutex> lock(mutex_);
  return std::move(points_);
}

nlohmann::json Monitor::Describe() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& sampler : samplers_) {
    out[sampler->name()] = {{"state", sampler->state()}, {"facts", sampler->Describe()}};
  }
  return out;
}

std::vector<GpuProcess> Monitor::GpuProcesses() {
  std::vector<GpuProcess> out;
  if (running_.load()) return out;
  for (auto& sampler : samplers_) {
    std::vector<GpuProcess> some = sampler->GpuProcesses();
    out.insert(out.end(), some.begin(), some.end());
  }
  return out;
}

void Monitor::SampleRound(std::vector<SeriesPoint>& out) {
  const std::int64_t t_ns = clock_.NowNs();
  for (auto& sampler : samplers_) sampler->Sample(t_ns, out);
}

void Monitor::Loop() {
  // The schedule runs on steady_clock (CLOCK_MONOTONIC on Linux, the same clock the production
  // Clock reads); stamps come from clock_, so a simulated clock in tests changes the stamps, not
  // the pacing.
  using Steady = std::chrono::steady_clock;
  const auto interval = std::chrono::nanoseconds(interval_ns_);
  // Each round samples into a local buffer outside the lock, so Stop() never waits on a sampler.
  std::vector<SeriesPoint> round;
  auto flush = [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& p : round) points_.push_back(std::move(p));
    round.clear();
  };
  const auto start = Steady::now();
  std::int64_t tick = 0;
  while (true) {
    SampleRound(round);
    flush();
    const auto now = Steady::now();
    // Next tick on the fixed grid; ticks missed by a slow round are skipped, not bunched.
    tick = std::max<std::int64_t>(tick + 1, (now - start) / interval + 1);
    const auto deadline = start + tick * interval;
    std::unique_lock<std::mutex> lock(mutex_);
    if (wake_.wait_until(lock, deadline, [this] { return stop_requested_; })) break;
  }
  SampleRound(round);
  flush();
}

std::vector<std::unique_ptr<Sampler>> DefaultSamplers() { return DefaultSamplers(SamplerOptions{}); }

std::vector<std::unique_ptr<Sampler>> DefaultSamplers(const SamplerOptions& options) {
  auto procfs = std::make_shared<RealProcFs>();
  std::vector<std::unique_ptr<Sampler>> samplers;
  samplers.push_back(MakeNvmlSampler(procfs, options));
  samplers.push_back(std::make_unique<ProcFsSampler>(procfs, 0, 0, options.proc_tree_every_n_samples));
  samplers.push_back(std::make_unique<RaplSampler>(procfs));
  return samplers;
}

}  // namespace dlbench::monitor
