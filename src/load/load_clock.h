// The load generator's time: reading the clock and sleeping until a scheduled arrival. Injected
// (STYLE.md rule 10) so the scenarios run in simulated time in tests: a SimulatedLoadClock jumps to
// the time a sleep asks for, and a system under test that "takes" 5 ms advances it by 5 ms.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/clock.h"

namespace dlbench::load {

class LoadClock : public Clock {
 public:
  // Returns once NowNs() >= t_ns (at once when it already is). Called by the issue thread only.
  virtual void SleepUntilNs(std::int64_t t_ns) = 0;
};

// CLOCK_MONOTONIC. Sleeps with clock_nanosleep(TIMER_ABSTIME) to kSpinNs before the deadline and
// spins the rest, because a wake-up from a timed sleep is tens of microseconds late on a loaded
// machine and that lateness counts against the system under test in the server scenario.
class MonotonicLoadClock final : public LoadClock {
 public:
  static constexpr std::int64_t kSpinNs = 100'000;
  std::int64_t NowNs() const override { return MonotonicNowNs(); }
  void SleepUntilNs(std::int64_t t_ns) override;
};

// Moves only when told to, or when a sleep asks for a later time. Thread-safe.
class SimulatedLoadClock final : public LoadClock {
 public:
  explicit SimulatedLoadClock(std::int64_t start_ns = 0) : now_ns_(start_ns) {}
  std::int64_t NowNs() const override { return now_ns_.load(); }
  void SleepUntilNs(std::int64_t t_ns) override;
  void AdvanceNs(std::int64_t delta_ns) { now_ns_.fetch_add(delta_ns); }

 private:
  std::atomic<std::int64_t> now_ns_;
};

}  // namespace dlbench::load
