// Two-sample comparisons (is B slower than A, and by how much) and multiple-testing control.
// Pure functions in double; docs/history.md says how comparisons use them.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "stats/descriptive.h"

namespace dlbench::stats {

// Above this many values a sample is thinned to this many, evenly spaced in its original order,
// before the O(na nb) pairwise work of HodgesLehmannShift.
inline constexpr std::size_t kPairwiseMaxPerSample = 1500;

// Mann-Whitney U (Wilcoxon rank-sum) test.
// u: U of sample a, sum of a's mid-ranks in the pooled sample - na (na + 1) / 2 (0 when every a
// is below every b). z: (U - na nb / 2) moved 0.5 towards zero (continuity correction, as SciPy's
// default asymptotic method) over sigma, with sigma^2 = na nb / 12 ((n + 1) - sum(t^3 - t) /
// (n (n - 1))) corrected for ties. p_value: two-sided, 2 (1 - Phi(|z|)).
// Either sample empty, or every value tied (sigma == 0) -> z 0, p 1.
struct MannWhitneyResult {
  double u = 0;
  double z = 0;
  double p_value = 1;
};
MannWhitneyResult MannWhitney(const std::vector<double>& a, const std::vector<double>& b);

// Hodges-Lehmann estimate of the shift from a to b, the median of all b_j - a_i, with the
// distribution-free interval of Moses (Hollander and Wolfe, 3rd ed., 4.3): with the N = na nb
// differences sorted, D(C) .. D(N + 1 - C) (1-based), C = floor(N / 2 - z_{(1+level)/2}
// sqrt(na nb (na + nb + 1) / 12)) and at least 1 (then the interval is the full range of the
// differences). The normal approximation ignores ties. Samples larger than
// kPairwiseMaxPerSample are thinned first (the interval then reflects the smaller samples, so
// it is conservative). Either sample empty -> NaN estimate and interval.
struct ShiftEstimate {
  double estimate = NAN;
  Interval ci;
};
ShiftEstimate HodgesLehmannShift(const std::vector<double>& a, const std::vector<double>& b, double level);

// mean(b) / mean(a) with a percentile bootstrap interval. Each sample is resampled on its own by
// the moving-block bootstrap (Kuensch 1989): blocks of L = max(1, round(n^(1/3))) consecutive
// values starting at uniformly drawn positions are concatenated up to n values, which keeps the
// short-range autocorrelation of step times that an i.i.d. bootstrap would destroy.
// ci: the (1-level)/2 and (1+level)/2 type 7 quantiles of the `iterations` replicate ratios.
// p_value: two-sided for ratio == 1, 2 min(#{r* <= 1} + 1, #{r* >= 1} + 1) / (B + 1), at most 1.
// Seeded with stats::Random, so results are identical across platforms and runs. Cost is
// O(iterations n / L) (block sums come from prefix sums).
// Either sample empty or mean(a) == 0 -> NaN ratio; iterations < 1 or level outside (0, 1) ->
// the ratio with NaN interval and p 1.
struct RatioEstimate {
  double ratio = NAN;
  Interval ci;
  double p_value = 1;
};
RatioEstimate BootstrapRatioOfMeans(const std::vector<double>& a, const std::vector<double>& b, double level,
                                    int iterations, std::uint64_t seed);

// The ratio mean(b) / mean(a) of two small samples of independent values (one per process: a
// cell's repetitions), with a t-interval on the log ratio by the delta method: with n, m, s^2 of
// each side, v_a = s_a^2 / (n_a m_a^2) and v_b likewise, log r +- t_{(1+level)/2, df} sqrt(v_a + v_b),
// df by Welch-Satterthwaite: (v_a + v_b)^2 / (v_a^2 / (n_a - 1) + v_b^2 / (n_b - 1)). p_value:
// two-sided t-test of log r == 0 with the same df. Fewer than 2 values on a side, a mean <= 0 ->
// NaN ratio; both variances 0 -> the ratio with a zero-width interval and p 0 (or 1 when r == 1).
RatioEstimate RatioOfMeansTInterval(const std::vector<double>& a, const std::vector<double>& b, double level);

// Benjamini-Hochberg (1995) adjusted p-values (q-values), in the input's order:
// q_(i) = min_{j >= i} min(1, m p_(j) / j) over the ascending p-values. NaN entries stay NaN and
// are not counted in m.
std::vector<double> BenjaminiHochberg(const std::vector<double>& p_values);

}  // namespace dlbench::stats
