// Trends over time: monotonic trend tests and slopes (a cell's memory or step time drifting
// during a run; a metric across a history of runs) and change points in a history series.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "stats/descriptive.h"

namespace dlbench::stats {

// Above this many values MannKendall runs on this many, evenly spaced (first and last included),
// keeping the O(n^2) pair count near 12.5 million.
inline constexpr std::size_t kMannKendallMaxValues = 5000;
// Above this many points TheilSen runs on this many, evenly spaced (about 2 million slopes).
inline constexpr std::size_t kTheilSenMaxPoints = 2000;

// Mann-Kendall test for a monotonic trend of y against its index.
// s = sum_{i<j} sign(y_j - y_i); var(s) = (n(n-1)(2n+5) - sum_t t(t-1)(2t+5)) / 18 over groups of
// t tied values; z = (s - sign(s)) / sqrt(var(s)) (continuity correction), 0 when s == 0;
// p_value two-sided. Fewer than 2 values, or all tied -> s 0 or as computed, z 0, p 1.
// Long series are thinned to kMannKendallMaxValues first (s is then that of the thinned series).
struct MannKendallResult {
  double s = 0;
  double z = 0;
  double p_value = 1;
};
MannKendallResult MannKendall(const std::vector<double>& y);

// Theil-Sen line y = intercept + slope x. slope: median of (y_j - y_i) / (x_j - x_i) over pairs
// with x_i != x_j; intercept: median(y) - slope median(x) (SciPy's theilslopes default).
// slope_ci: Sen (1968) eq. 2.6, as SciPy computes it: with N sorted slopes and
// sigma^2 = (n(n-1)(2n+5) - ties in x - ties in y) / 18, the slopes at 0-based indexes
// round((N - z sigma) / 2) - 1 and round((N + z sigma) / 2), z = Phi^-1((1+level)/2), clamped
// to [0, N - 1]. n: the number of points used (after thinning to kTheilSenMaxPoints).
// x and y must have the same size (checked). Fewer than 2 points or every x equal -> NaN slope.
struct TheilSenResult {
  double slope = NAN;
  double intercept = NAN;
  Interval slope_ci;
  std::size_t n = 0;
};
TheilSenResult TheilSen(const std::vector<double>& x, const std::vector<double>& y, double level);

// Change points of a short series (one value per run, oldest first) by binary segmentation: in a
// segment, among the splits leaving at least min_segment values each side, the one minimising
// the summed squared deviations from the two sides' means (least-squares segmentation, which
// places a split at a level change better than the best rank-test p-value, since that favours
// balanced splits) is tested with MannWhitney. It is accepted when that p-value times the number
// of splits considered (Bonferroni, since the split was chosen by looking at the data) is below
// alpha and the medians on either side differ by at least min_rel_shift relative to the left
// median (any non-zero difference counts when that median is 0); then both halves are searched
// again. Returns the ascending indexes at which a new segment starts. O(n log n) per level.
std::vector<std::size_t> DetectChangePoints(const std::vector<double>& y, double alpha, double min_rel_shift,
                                            std::size_t min_segment = 3);

}  // namespace dlbench::stats
