// Where adding batch stops paying (R9): the saturation point and the drop of a throughput vs
// batch-size curve. Pure functions in double.
#pragma once

#include <optional>
#include <vector>

namespace dlbench::report {

struct ThroughputPoint {
  double batch_size = 0;
  double samples_per_s = 0;
};

struct SaturationOptions {
  // A doubling of the batch "pays" when throughput grows by at least this fraction (0.05 = 5%).
  // Steps that are not doublings are normalised: gain per doubling = ratio^(1/log2(b2/b1)) - 1.
  double min_gain_per_doubling = 0.05;
  // Throughput "drops" when a bigger batch gives less than (1 - drop_tolerance) of the previous
  // batch's throughput. The tolerance keeps run-to-run noise from being called a drop.
  double drop_tolerance = 0.02;
};

struct Saturation {
  // The curve: one point per batch size, sorted, repeated batch sizes averaged, points with a
  // non-positive batch size or throughput left out.
  std::vector<ThroughputPoint> curve;
  // The smallest batch size from which on no bigger batch pays (every later step gains less than
  // min_gain_per_doubling per doubling). Absent when the last step still pays, or with < 2 points.
  std::optional<double> saturation_batch;
  // The first batch size whose throughput is below the previous batch size's (beyond tolerance).
  std::optional<double> drop_batch;
  // The batch size with the highest throughput (absent only when the curve is empty).
  std::optional<double> best_batch;
  double best_samples_per_s = 0;
};

Saturation FindSaturation(const std::vector<ThroughputPoint>& points, const SaturationOptions& options = {});

}  // namespace dlbench::report
