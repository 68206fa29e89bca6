// The order in which samples are read: epoch after epoch over [0, n), each epoch shuffled as
// tf.data's Dataset.shuffle(buffer, seed, reshuffle_each_iteration=True) does it, with a buffer of
// sample indices (so a large buffer costs 8 bytes a sample, not a decoded image). No LibTorch.
#pragma once

#include <cstdint>
#include <vector>

#include "data/crop.h"

namespace dlbench::torchrunner::data {

class ShuffleStream {
 public:
  // n > 0 samples; buffer <= 1 keeps the order 0, 1, ..., n-1 every epoch; buffer >= n draws a
  // uniform permutation per epoch. The same (n, buffer, seed) gives the same stream everywhere.
  ShuffleStream(std::int64_t n, std::int64_t buffer, std::uint64_t seed);
  // The next sample index; epochs follow each other without a gap.
  std::int64_t Next();

 private:
  void StartEpoch();
  std::int64_t n_;
  std::int64_t buffer_size_;
  std::uint64_t seed_;
  std::int64_t epoch_ = -1;
  std::int64_t next_input_ = 0;  // the next index of this epoch to enter the buffer
  std::vector<std::int64_t> buffer_;
  SplitMix64 rng_{0};
};

}  // namespace dlbench::torchrunner::data
