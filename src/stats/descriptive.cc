#include "stats/descriptive.h"

#include <algorithm>
#include <utility>

namespace dlbench::stats {

Moments ComputeMoments(const std::vector<double>& x) {
  Moments m;
  m.n = x.size();
  if (x.empty()) return m;
  // Shifting by x[0] removes the offset before any sum is formed; the deviations are then small
  // and their sums exact for the step-time series this is made for.
  const double shift = x[0];
  double sum = 0;
  for (double v : x) sum += v - shift;
  const double n = static_cast<double>(x.size());
  const double mean_shifted = sum / n;
  m.mean = shift + mean_shifted;
  if (x.size() < 2) return m;
  // Second pass with the compensation term of Chan, Golub and LeVeque (1983): it cancels the
  // rounding error left in mean_shifted.
  double sum_sq = 0;
  double sum_dev = 0;
  for (double v : x) {
    const double d = (v - shift) - mean_shifted;
    sum_sq += d * d;
    sum_dev += d;
  }
  m.variance = std::max(0.0, (sum_sq - sum_dev * sum_dev / n) / (n - 1));
  m.stddev = std::sqrt(m.variance);
  return m;
}

double QuantileSorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty() || !(q >= 0.0 && q <= 1.0)) return NAN;
  const double h = static_cast<double>(sorted.size() - 1) * q;
  const std::size_t lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= sorted.size()) return sorted.back();
  const double frac = h - static_cast<double>(lo);
  // Written as a + f (b - a): exact when a == b and when f == 0, whatever the offset.
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

double Quantile(std::vector<double> x, double q) {
  std::sort(x.begin(), x.end());
  return QuantileSorted(x, q);
}

double Median(std::vector<double> x) { return Quantile(std::move(x), 0.5); }

std::vector<double> Quantiles(std::vector<double> x, const std::vector<double>& qs) {
  std::sort(x.begin(), x.end());
  std::vector<double> out;
  out.reserve(qs.size());
  for (double q : qs) out.push_back(QuantileSorted(x, q));
  return out;
}

std::vector<double> ThinEvenly(const std::vector<double>& x, std::size_t limit) {
  if (x.size() <= limit) return x;
  if (limit < 2) return std::vector<double>(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(limit));
  std::vector<double> out(limit);
  for (std::size_t i = 0; i < limit; ++i) out[i] = x[i * (x.size() - 1) / (limit - 1)];
  return out;
}

}  // namespace dlbench::stats
