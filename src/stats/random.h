// A small, seeded pseudo-random generator for the statistics (bootstrap resampling, subsampling)
// and for tests. It is written out here rather than taken from <random> because the standard
// distributions are implementation-defined: the same seed must give the same bootstrap interval
// on every platform and compiler.
#pragma once

#include <cstdint>

namespace dlbench::stats {

// xoshiro256** (Blackman and Vigna, 2018), seeded through SplitMix64 so that any 64-bit seed,
// zero included, gives a well-mixed state.
class Random {
 public:
  explicit Random(std::uint64_t seed);

  // The next 64 uniformly distributed bits.
  std::uint64_t Next();
  // A uniform integer in [0, bound); bound must be positive. Unbiased (rejection sampling).
  std::uint64_t Below(std::uint64_t bound);
  // A uniform double in [0, 1) with 53 random bits.
  double Uniform();
  // A standard normal deviate (Box-Muller). Uses std::log/std::cos, so the last bits may differ
  // between C libraries; meant for synthetic test data, not for results that must be identical.
  double Normal();

 private:
  std::uint64_t s_[4];
};

}  // namespace dlbench::stats
