#include "load/load_clock.h"

#include <time.h>

#include <cerrno>

namespace dlbench::load {

void MonotonicLoadClock::SleepUntilNs(std::int64_t t_ns) {
  const std::int64_t wake_ns = t_ns - kSpinNs;
  if (MonotonicNowNs() < wake_ns) {
    timespec ts;
    ts.tv_sec = static_cast<time_t>(wake_ns / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(wake_ns % 1'000'000'000);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
  }
  while (MonotonicNowNs() < t_ns) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

void SimulatedLoadClock::SleepUntilNs(std::int64_t t_ns) {
  std::int64_t now = now_ns_.load();
  while (now < t_ns && !now_ns_.compare_exchange_weak(now, t_ns)) {
  }
}

}  // namespace dlbench::load
