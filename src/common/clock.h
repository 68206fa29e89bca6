// Time in dlbench: every timestamp, in every process, is CLOCK_MONOTONIC in nanoseconds, so the
// runner's step records and the orchestrator's samples line up without conversion.
#pragma once

#include <time.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>

namespace dlbench {

// Nanoseconds since an arbitrary fixed point (CLOCK_MONOTONIC; the same clock as
// std::chrono::steady_clock on Linux). Cheap: a vDSO call, no allocation, no lock.
inline std::int64_t MonotonicNowNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Wall-clock time in nanoseconds since the Unix epoch, for human-facing timestamps only.
inline std::int64_t WallNowNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The clock seam: samplers and policies take a Clock& so tests can drive time by hand.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::int64_t NowNs() const = 0;
};

class MonotonicClock final : public Clock {
 public:
  std::int64_t NowNs() const override { return MonotonicNowNs(); }
};

// A clock that moves only when told to (for tests). Thread-safe.
class SimulatedClock final : public Clock {
 public:
  explicit SimulatedClock(std::int64_t start_ns = 0) : now_ns_(start_ns) {}
  std::int64_t NowNs() const override { return now_ns_.load(); }
  void AdvanceNs(std::int64_t delta_ns) { now_ns_.fetch_add(delta_ns); }
  void SetNs(std::int64_t ns) { now_ns_.store(ns); }

 private:
  std::atomic<std::int64_t> now_ns_;
};

inline double NsToSeconds(std::int64_t ns) { return static_cast<double>(ns) * 1e-9; }
inline double NsToMs(std::int64_t ns) { return static_cast<double>(ns) * 1e-6; }
// The largest duration SecondsToNs returns: 2^62 ns, about 146 years. Adding it to any clock
// reading of this century stays inside int64.
inline constexpr std::int64_t kMaxDurationNs = std::int64_t{1} << 62;
// Seconds -> nanoseconds, truncated toward zero and saturated at +-kMaxDurationNs, so that
// `now + SecondsToNs(timeout)` cannot overflow whatever the configuration holds; NaN gives 0.
inline std::int64_t SecondsToNs(double s) {
  if (std::isnan(s)) return 0;
  const double ns = s * 1e9;
  if (ns >= static_cast<double>(kMaxDurationNs)) return kMaxDurationNs;
  if (ns <= -static_cast<double>(kMaxDurationNs)) return -kMaxDurationNs;
  return static_cast<std::int64_t>(ns);
}

// ISO-8601 UTC text for a wall-clock time in ns ("2026-11-29T18:52:35Z").
std::string FormatUtc(std::int64_t wall_ns);

}  // namespace dlbench
