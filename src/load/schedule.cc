#include "load/schedule.h"

#include <cmath>

#include "common/error.h"

namespace dlbench::load {

QuerySchedule::QuerySchedule(const EffectiveLoadSettings& settings, std::uint32_t library_size)
    : scenario_(settings.scenario),
      target_qps_(settings.target_qps),
      interval_ns_(settings.query_interval_ns.value_or(0)),
      samples_per_query_(settings.samples_per_query),
      library_size_(library_size),
      schedule_rng_(settings.schedule_seed),
      sample_rng_(settings.sample_seed) {
  DLBENCH_CHECK(library_size_ >= 1, "a sample library needs at least one sample");
  DLBENCH_CHECK(scenario_ != Scenario::kServer || target_qps_ > 0, "a server schedule needs a rate > 0");
}

std::uint32_t QuerySchedule::DrawSample() {
  // Multiply-shift (Lemire) without the rejection step: its bias is below size / 2^64.
  const unsigned __int128 wide = static_cast<unsigned __int128>(sample_rng_()) * library_size_;
  return static_cast<std::uint32_t>(wide >> 64);
}

ScheduledQuery QuerySchedule::Next() {
  ScheduledQuery q;
  q.id = next_id_++;
  q.samples = samples_per_query_;
  switch (scenario_) {
    case Scenario::kServer: {
      q.offset_ns = next_offset_ns_;
      const double u = (static_cast<double>(schedule_rng_() >> 11) + 0.5) * 0x1.0p-53;
      next_offset_ns_ += std::llround(-std::log(u) / target_qps_ * 1e9);
      q.first_sample = DrawSample();
      break;
    }
    case Scenario::kMultiStream:
      q.offset_ns = interval_ns_ > 0 ? next_offset_ns_ : 0;
      next_offset_ns_ += interval_ns_;
      q.first_sample = DrawSample();
      break;
    case Scenario::kSingleStream:
      q.first_sample = DrawSample();
      break;
    case Scenario::kOffline:
      q.first_sample = static_cast<std::uint32_t>(offline_cursor_ % library_size_);
      offline_cursor_ += q.samples;
      break;
  }
  return q;
}

void QuerySchedule::Restart(double target_qps) {
  DLBENCH_CHECK(scenario_ != Scenario::kServer || target_qps > 0, "a server schedule needs a rate > 0");
  target_qps_ = target_qps;
  next_offset_ns_ = 0;
}

}  // namespace dlbench::load
