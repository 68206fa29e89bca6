// Which queries a run issues and when they are due: the schedule LoadGen pre-generates in
// GenerateQueries (loadgen.cc), generated here lazily in the same order, since a dlbench cell runs
// until the orchestrator's STOP rather than for a duration fixed up front.
//
// Deterministic for its seeds on every platform: the generators are std::mt19937_64, whose output
// the C++ standard fixes, and the distributions are written out (std::exponential_distribution
// and std::uniform_int_distribution are each standard library's own algorithm, so LoadGen's
// schedule differs between libstdc++ and libc++).
#pragma once

#include <cstdint>
#include <random>

#include "load/settings.h"

namespace dlbench::load {

// One query of the schedule. Its samples are `samples` consecutive indices of the sample library
// from `first_sample`, wrapping at the library's size (LoadGen draws multi_stream queries as
// contiguous samples too).
struct ScheduledQuery {
  std::uint64_t id = 0;
  // Server: the Poisson arrival's offset from the run's start; multi_stream at a fixed interval:
  // id x interval. Closed-loop scenarios are due when the previous query completes (offset 0).
  std::int64_t offset_ns = 0;
  std::uint32_t first_sample = 0;
  std::uint32_t samples = 1;
};

class QuerySchedule {
 public:
  // `library_size` samples to draw from (>= 1).
  QuerySchedule(const EffectiveLoadSettings& settings, std::uint32_t library_size);

  // The next query. Server gaps are exponential with mean 1 / target_qps:
  //   gap_ns = round(-ln(u) / target_qps x 1e9), u = (x >> 11 + 0.5) / 2^53 in (0, 1),
  // offsets the running sum of the gaps from 0 (the first query is due at the start, as in
  // LoadGen). Samples: uniform over the library for single_stream, server and the first sample of
  // a multi_stream query (x * size >> 64); offline queries walk the library in order, one after
  // another (LoadGen repeats the loaded samples in order).
  ScheduledQuery Next();

  // A schedule for another rate from the current point (the peak search's next probe keeps the
  // same sample stream and restarts offsets at 0).
  void Restart(double target_qps);

 private:
  std::uint32_t DrawSample();

  Scenario scenario_;
  double target_qps_;
  std::int64_t interval_ns_;
  std::uint32_t samples_per_query_;
  std::uint32_t library_size_;
  std::mt19937_64 schedule_rng_;
  std::mt19937_64 sample_rng_;
  std::uint64_t next_id_ = 0;
  std::int64_t next_offset_ns_ = 0;
  std::uint64_t offline_cursor_ = 0;
};

}  // namespace dlbench::load
