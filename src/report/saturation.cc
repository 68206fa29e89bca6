#include "report/saturation.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace dlbench::report {

Saturation FindSaturation(const std::vector<ThroughputPoint>& points, const SaturationOptions& options) {
  Saturation result;
  std::map<double, std::pair<double, int>> by_batch;  // batch -> (sum, count)
  for (const ThroughputPoint& p : points) {
    if (!(p.batch_size > 0) || !(p.samples_per_s > 0) || !std::isfinite(p.batch_size) ||
        !std::isfinite(p.samples_per_s)) {
      continue;
    }
    auto& [sum, count] = by_batch[p.batch_size];
    sum += p.samples_per_s;
    ++count;
  }
  for (const auto& [batch, acc] : by_batch) {
    result.curve.push_back({batch, acc.first / acc.second});
  }
  const auto& curve = result.curve;
  if (curve.empty()) return result;

  const auto best = std::max_element(curve.begin(), curve.end(), [](const auto& a, const auto& b) {
    return a.samples_per_s < b.samples_per_s;
  });
  result.best_batch = best->batch_size;
  result.best_samples_per_s = best->samples_per_s;

  for (std::size_t i = 1; i < curve.size(); ++i) {
    if (curve[i].samples_per_s < curve[i - 1].samples_per_s * (1.0 - options.drop_tolerance)) {
      result.drop_batch = curve[i].batch_size;
      break;
    }
  }

  // Walk back from the largest batch while the steps fail to pay: the saturation point is where
  // the run of non-paying steps begins. A step that pays again later resets it, so a dip in the
  // middle of a still-rising curve is not called saturation.
  std::optional<std::size_t> first_flat;
  for (std::size_t i = curve.size() - 1; i >= 1; --i) {
    const double doublings = std::log2(curve[i].batch_size / curve[i - 1].batch_size);
    const double ratio = curve[i].samples_per_s / curve[i - 1].samples_per_s;
    const double gain_per_doubling = std::pow(ratio, 1.0 / doublings) - 1.0;
    if (gain_per_doubling >= options.min_gain_per_doubling) break;
    first_flat = i - 1;
  }
  if (first_flat) result.saturation_batch = curve[*first_flat].batch_size;
  return result;
}

}  // namespace dlbench::report
