#include "data/shuffle.h"

#include <algorithm>

namespace dlbench::torchrunner::data {

ShuffleStream::ShuffleStream(std::int64_t n, std::int64_t buffer, std::uint64_t seed)
    : n_(n), buffer_size_(std::min(buffer, n)), seed_(seed) {
  StartEpoch();
}

void ShuffleStream::StartEpoch() {
  ++epoch_;
  next_input_ = 0;
  buffer_.clear();
  rng_ = SplitMix64(MixSeed(seed_, static_cast<std::uint64_t>(epoch_)));
  if (buffer_size_ <= 1) return;
  buffer_.reserve(static_cast<std::size_t>(buffer_size_));
  while (next_input_ < buffer_size_) buffer_.push_back(next_input_++);
}

std::int64_t ShuffleStream::Next() {
  if (buffer_size_ <= 1) {
    if (next_input_ == n_) StartEpoch();
    return next_input_++;
  }
  if (buffer_.empty()) StartEpoch();
  // tf.data's ShuffleDataset: a uniformly chosen element leaves; the next input takes its place.
  const auto j = static_cast<std::size_t>(rng_.Below(buffer_.size()));
  const std::int64_t out = buffer_[j];
  if (next_input_ < n_) {
    buffer_[j] = next_input_++;
  } else {
    buffer_[j] = buffer_.back();
    buffer_.pop_back();
  }
  return out;
}

}  // namespace dlbench::torchrunner::data
