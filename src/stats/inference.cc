#include "stats/inference.h"

#include <algorithm>
#include <numeric>

#include "stats/distributions.h"
#include "stats/random.h"

namespace dlbench::stats {
namespace {

double TwoSidedNormalP(double z) { return std::min(1.0, 2.0 * NormalCdf(-std::fabs(z))); }

// Mean of x[0, n) as shift + mean of deviations; prefix[i] = sum of (x[j] - shift), j < i.
struct Prefix {
  double shift = 0;
  std::vector<double> sums;
};

Prefix MakePrefix(const std::vector<double>& x) {
  Prefix p;
  p.shift = ComputeMoments(x).mean;
  p.sums.resize(x.size() + 1);
  p.sums[0] = 0;
  for (std::size_t i = 0; i < x.size(); ++i) p.sums[i + 1] = p.sums[i] + (x[i] - p.shift);
  return p;
}

// One moving-block bootstrap replicate of the mean of a series of prefix.sums.size() - 1 values.
double ResampledMean(const Prefix& prefix, std::size_t block, Random& random) {
  const std::size_t n = prefix.sums.size() - 1;
  const std::uint64_t starts = n - block + 1;
  double sum = 0;
  std::size_t taken = 0;
  while (taken < n) {
    const std::size_t start = static_cast<std::size_t>(random.Below(starts));
    const std::size_t length = std::min(block, n - taken);
    sum += prefix.sums[start + length] - prefix.sums[start];
    taken += length;
  }
  return prefix.shift + sum / static_cast<double>(n);
}

}  // namespace

MannWhitneyResult MannWhitney(const std::vector<double>& a, const std::vector<double>& b) {
  MannWhitneyResult result;
  if (a.empty() || b.empty()) return result;
  struct Item {
    double value;
    bool from_a;
  };
  std::vector<Item> pooled;
  pooled.reserve(a.size() + b.size());
  for (double v : a) pooled.push_back({v, true});
  for (double v : b) pooled.push_back({v, false});
  std::sort(pooled.begin(), pooled.end(), [](const Item& l, const Item& r) { return l.value < r.value; });

  double rank_sum_a = 0;
  double tie_term = 0;  // sum over tie groups of t^3 - t
  for (std::size_t i = 0; i < pooled.size();) {
    std::size_t j = i;
    while (j < pooled.size() && pooled[j].value == pooled[i].value) ++j;
    const double t = static_cast<double>(j - i);
    const double mid_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    for (std::size_t k = i; k < j; ++k) {
      if (pooled[k].from_a) rank_sum_a += mid_rank;
    }
    tie_term += t * t * t - t;
    i = j;
  }
  const double na = static_cast<double>(a.size());
  const double nb = static_cast<double>(b.size());
  const double n = na + nb;
  result.u = rank_sum_a - na * (na + 1) / 2.0;
  const double mu = na * nb / 2.0;
  const double variance = na * nb / 12.0 * ((n + 1) - tie_term / (n * (n - 1)));
  if (!(variance > 0)) return result;
  const double distance = std::max(0.0, std::fabs(result.u - mu) - 0.5);
  result.z = std::copysign(distance, result.u - mu) / std::sqrt(variance);
  if (distance == 0) result.z = 0;
  result.p_value = TwoSidedNormalP(result.z);
  return result;
}

ShiftEstimate HodgesLehmannShift(const std::vector<double>& a_in, const std::vector<double>& b_in,
                                 double level) {
  ShiftEstimate result;
  if (a_in.empty() || b_in.empty()) return result;
  const std::vector<double> a = ThinEvenly(a_in, kPairwiseMaxPerSample);
  const std::vector<double> b = ThinEvenly(b_in, kPairwiseMaxPerSample);
  std::vector<double> diffs;
  diffs.reserve(a.size() * b.size());
  for (double bj : b) {
    for (double ai : a) diffs.push_back(bj - ai);
  }
  // Only four order statistics are needed, so selection (O(N) each) replaces a full sort.
  const auto order_statistic = [&diffs](std::size_t k) {  // 0-based
    std::nth_element(diffs.begin(), diffs.begin() + static_cast<std::ptrdiff_t>(k), diffs.end());
    return diffs[k];
  };
  const std::size_t count_pairs = diffs.size();
  const double upper_middle = order_statistic(count_pairs / 2);
  if (count_pairs % 2 == 1) {
    result.estimate = upper_middle;
  } else {
    const double lower_middle = order_statistic(count_pairs / 2 - 1);
    result.estimate = lower_middle + 0.5 * (upper_middle - lower_middle);  // the type 7 median
  }
  if (!(level > 0.0 && level < 1.0)) return result;
  const double na = static_cast<double>(a.size());
  const double nb = static_cast<double>(b.size());
  const double count = na * nb;
  const double z = NormalQuantile(0.5 + level / 2.0);
  const double c = std::floor(count / 2.0 - z * std::sqrt(na * nb * (na + nb + 1) / 12.0));
  const std::size_t c_index = static_cast<std::size_t>(std::max(1.0, c));  // 1-based
  result.ci.low = order_statistic(c_index - 1);
  result.ci.high = order_statistic(count_pairs - c_index);
  return result;
}

RatioEstimate BootstrapRatioOfMeans(const std::vector<double>& a, const std::vector<double>& b, double level,
                                    int iterations, std::uint64_t seed) {
  RatioEstimate result;
  if (a.empty() || b.empty()) return result;
  const double mean_a = ComputeMoments(a).mean;
  const double mean_b = ComputeMoments(b).mean;
  if (mean_a == 0) return result;
  result.ratio = mean_b / mean_a;
  if (iterations < 1 || !(level > 0.0 && level < 1.0)) return result;

  const auto block_length = [](std::size_t n) {
    const double l = std::round(std::cbrt(static_cast<double>(n)));
    return std::max<std::size_t>(1, std::min(n, static_cast<std::size_t>(l)));
  };
  const Prefix prefix_a = MakePrefix(a);
  const Prefix prefix_b = MakePrefix(b);
  const std::size_t block_a = block_length(a.size());
  const std::size_t block_b = block_length(b.size());
  Random random(seed);
  std::vector<double> ratios;
  ratios.reserve(static_cast<std::size_t>(iterations));
  for (int i = 0; i < iterations; ++i) {
    const double ra = ResampledMean(prefix_a, block_a, random);
    const double rb = ResampledMean(prefix_b, block_b, random);
    const double r = rb / ra;
    // A replicate whose resampled mean of a is 0 has no ratio; it is left out, not counted.
    if (std::isfinite(r)) ratios.push_back(r);
  }
  if (ratios.empty()) return result;
  std::sort(ratios.begin(), ratios.end());
  result.ci.low = QuantileSorted(ratios, (1.0 - level) / 2.0);
  result.ci.high = QuantileSorted(ratios, (1.0 + level) / 2.0);
  const auto at_most_one = std::upper_bound(ratios.begin(), ratios.end(), 1.0) - ratios.begin();
  const auto at_least_one = ratios.end() - std::lower_bound(ratios.begin(), ratios.end(), 1.0);
  const double replicates = static_cast<double>(ratios.size());
  const double tail = static_cast<double>(std::min(at_most_one, at_least_one)) + 1.0;
  result.p_value = std::min(1.0, 2.0 * tail / (replicates + 1.0));
  return result;
}

RatioEstimate RatioOfMeansTInterval(const std::vector<double>& a, const std::vector<double>& b,
                                    double level) {
  RatioEstimate out;
  const Moments ma = ComputeMoments(a), mb = ComputeMoments(b);
  if (ma.n < 2 || mb.n < 2 || !(ma.mean > 0) || !(mb.mean > 0)) return out;
  out.ratio = mb.mean / ma.mean;
  const double va = ma.variance / (static_cast<double>(ma.n) * ma.mean * ma.mean);
  const double vb = mb.variance / (static_cast<double>(mb.n) * mb.mean * mb.mean);
  const double log_ratio = std::log(out.ratio);
  if (va + vb == 0) {
    out.ci = {out.ratio, out.ratio};
    out.p_value = log_ratio == 0 ? 1.0 : 0.0;
    return out;
  }
  const double df = (va + vb) * (va + vb) /
                    (va * va / static_cast<double>(ma.n - 1) + vb * vb / static_cast<double>(mb.n - 1));
  const double se = std::sqrt(va + vb);
  const double t = StudentTQuantile((1 + level) / 2, df);
  out.ci = {std::exp(log_ratio - t * se), std::exp(log_ratio + t * se)};
  out.p_value = std::min(1.0, 2 * (1 - StudentTCdf(std::abs(log_ratio) / se, df)));
  return out;
}

std::vector<double> BenjaminiHochberg(const std::vector<double>& p_values) {
  std::vector<double> q(p_values.size(), NAN);
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < p_values.size(); ++i) {
    if (!std::isnan(p_values[i])) order.push_back(i);
  }
  std::sort(order.begin(), order.end(),
            [&](std::size_t l, std::size_t r) { return p_values[l] < p_values[r]; });
  const double m = static_cast<double>(order.size());
  double running_min = 1.0;
  for (std::size_t rank = order.size(); rank-- > 0;) {
    const double adjusted = p_values[order[rank]] * m / static_cast<double>(rank + 1);
    running_min = std::min(running_min, adjusted);
    q[order[rank]] = running_min;
  }
  return q;
}

}  // namespace dlbench::stats
