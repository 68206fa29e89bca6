// Whether a measured window is stable, and if not how it moved: a trend test and a level-shift
// test over the window's batch means (issue 17; docs/measurement.md "Stability").
//
// Raw step times are autocorrelated and number in the hundreds of thousands, so a test on them
// calls every tiny drift significant. Both tests run on the means of contiguous batches (the same
// idea as the batch-means interval), and a movement must also be large: at least
// min_rel_change of the window's mean across the window, so a statistically clear but harmless
// 0.1% drift is not reported.
#pragma once

#include <cstddef>
#include <vector>

namespace dlbench::stats {

// Pettitt's (1979) non-parametric change-point test. With U_t = sum_{i<=t} sum_{j>t}
// sign(y_j - y_i) for t = 0..n-2, K = max_t |U_t| at t*, the change is between t* and t* + 1
// (change_index = t* + 1, the first index of the second segment) and the two-sided p-value is
// approximated by 2 exp(-6 K^2 / (n^3 + n^2)), capped at 1. Fewer than 2 values: change_index 0,
// k 0, p 1. O(n^2); callers pass batch means (tens of values).
struct PettittResult {
  std::size_t change_index = 0;
  double k = 0;
  double p_value = 1;
};
PettittResult Pettitt(const std::vector<double>& y);

struct StabilitySettings {
  std::size_t batches = 50;      // the window is cut into this many contiguous batches
  std::size_t min_batches = 10;  // fewer (fewer than 5 steps a batch): too short to judge
  double alpha = 0.01;           // each test's significance level
  double min_rel_change = 0.02;  // smallest movement reported, relative to the window's mean
};

enum class Stability {
  kStable,
  kDrifting,  // a steady trend: slope_rel_per_s, first and last tenth's means
  kShifted,   // a level change: at shift_step, from level_before to level_after
  kTooShort,  // fewer than min_batches batches of at least 5 steps
};

struct StabilityResult {
  Stability kind = Stability::kTooShort;
  std::size_t batches = 0;
  double mean = 0;     // of all values
  double trend_p = 1;  // Mann-Kendall over the batch means
  double shift_p = 1;  // Pettitt over the batch means
  // Drift: the Theil-Sen slope of the batch means against their mid-times, as a fraction of the
  // mean per second, and the means of the first and last tenth of the values.
  double slope_rel_per_s = 0;
  double first_tenth_mean = 0;
  double last_tenth_mean = 0;
  // Shift: the index (into values) where the second level begins, and the two levels' means.
  std::size_t shift_step = 0;
  double level_before = 0;
  double level_after = 0;
};

// values[i] is step i's measurement (its time, say), times_s[i] its start in seconds on any
// origin (same size, ascending). A movement is significant when its test's p < alpha and its
// size (the drift across the window's duration, or the level difference) is at least
// min_rel_change of the mean. When either is, the one whose model (a line, or two levels split
// at Pettitt's point) leaves the smaller squared residual over the batch means is reported.
StabilityResult AssessStability(const std::vector<double>& values, const std::vector<double>& times_s,
                                const StabilitySettings& settings);

}  // namespace dlbench::stats
