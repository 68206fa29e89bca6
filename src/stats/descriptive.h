// Descriptive statistics of a sample: moments and quantiles. Pure functions in double; no I/O.
// Step times arrive as CLOCK_MONOTONIC nanoseconds around 1e10..1e13 with spreads of a few
// nanoseconds, so every function here is written to stay exact under large offsets.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace dlbench::stats {

// A closed interval [low, high]; NaN bounds mean "not available".
struct Interval {
  double low = NAN;
  double high = NAN;
};

// n, mean and the sample variance (divisor n - 1) with its square root. n == 0: everything NaN;
// n == 1: mean is the value, variance and stddev NaN.
struct Moments {
  std::size_t n = 0;
  double mean = NAN;
  double variance = NAN;
  double stddev = NAN;
};

// Corrected two-pass algorithm on values shifted by the first one, so 1.2e10 + {1, 2, 3, 4}
// gives exactly mean 1.2e10 + 2.5 and variance 5/3. NaN in the input propagates.
Moments ComputeMoments(const std::vector<double>& x);

// Quantile of an ascending-sorted sample by linear interpolation between order statistics
// (Hyndman and Fan type 7, R's default and NumPy's "linear"): h = (n - 1) q,
// Q = x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h]).
// Empty input, q outside [0, 1] or NaN q -> NaN. One value -> that value for every q.
double QuantileSorted(const std::vector<double>& sorted, double q);

// Type 7 quantile of an unsorted sample (sorts its copy).
double Quantile(std::vector<double> x, double q);

// The type 7 median: the middle value, or the mean of the two middle values. Empty -> NaN.
double Median(std::vector<double> x);

// Several type 7 quantiles of one sample with one sort; result in the order of `qs`.
std::vector<double> Quantiles(std::vector<double> x, const std::vector<double>& qs);

// x itself when x.size() <= limit, otherwise `limit` values at the evenly spaced indexes
// floor(i (n - 1) / (limit - 1)) (first and last included; limit 1 -> the first value, 0 -> none).
// Used to bound the O(n^2) pairwise statistics deterministically.
std::vector<double> ThinEvenly(const std::vector<double>& x, std::size_t limit);

}  // namespace dlbench::stats
