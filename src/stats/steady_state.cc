#include "stats/steady_state.h"

#include <algorithm>

#include "stats/distributions.h"

namespace dlbench::stats {

std::optional<Interval> BatchMeansCI(const std::vector<double>& x, double level, std::size_t batches) {
  if (!(level > 0.0 && level < 1.0) || batches < 2) return std::nullopt;
  const std::size_t k = std::min(batches, x.size() / kBatchMeansMinBatchSize);
  if (k < 2) return std::nullopt;
  const std::size_t b = x.size() / k;
  const std::size_t first = x.size() - k * b;
  // Batch sums are formed on values shifted by a member of the series so that a 1.2e10 offset
  // does not swallow nanosecond differences.
  const double shift = x[first];
  std::vector<double> batch_means(k);
  for (std::size_t i = 0; i < k; ++i) {
    double sum = 0;
    for (std::size_t j = first + i * b; j < first + (i + 1) * b; ++j) sum += x[j] - shift;
    batch_means[i] = sum / static_cast<double>(b);
  }
  const Moments between = ComputeMoments(batch_means);
  const double mean = ComputeMoments(x).mean;
  const double t = StudentTQuantile(0.5 + level / 2.0, static_cast<double>(k - 1));
  const double half_width = t * between.stddev / std::sqrt(static_cast<double>(k));
  return Interval{mean - half_width, mean + half_width};
}

std::optional<std::size_t> Mser5Cut(const std::vector<double>& x) {
  const std::size_t batches = x.size() / kMser5BatchSize;
  if (batches < kMser5MinBatches) return std::nullopt;
  const double shift = x[0];
  std::vector<double> z(batches);
  for (std::size_t i = 0; i < batches; ++i) {
    double sum = 0;
    for (std::size_t j = i * kMser5BatchSize; j < (i + 1) * kMser5BatchSize; ++j) sum += x[j] - shift;
    z[i] = sum / static_cast<double>(kMser5BatchSize);
  }
  // Suffix statistics by Welford's update, walking from the end: stable where the textbook
  // sum-of-squares formula would cancel, and O(1) per candidate cut.
  const std::size_t last_candidate = batches / 2;
  std::vector<double> mser(last_candidate + 1);
  double mean = 0;
  double m2 = 0;
  double count = 0;
  for (std::size_t j = batches; j-- > 0;) {
    count += 1;
    const double delta = z[j] - mean;
    mean += delta / count;
    m2 += delta * (z[j] - mean);
    if (j <= last_candidate) mser[j] = m2 / (count * count);
  }
  std::size_t best = 0;
  for (std::size_t d = 1; d <= last_candidate; ++d) {
    if (mser[d] < mser[best]) best = d;
  }
  return best * kMser5BatchSize;
}

std::size_t Mser5Truncation(const std::vector<double>& x, std::size_t min_cut) {
  const std::optional<std::size_t> cut = Mser5Cut(x);
  const std::size_t chosen = cut ? std::max(*cut, min_cut) : min_cut;
  return std::min(chosen, x.size());
}

}  // namespace dlbench::stats
