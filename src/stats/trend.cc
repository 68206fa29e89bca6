#include "stats/trend.h"

#include <algorithm>
#include <functional>

#include "common/error.h"
#include "stats/distributions.h"
#include "stats/inference.h"

namespace dlbench::stats {
namespace {

// sum over groups of t equal values of t (t - 1) (2t + 5): the tie term of Kendall's variance.
double KendallTieTerm(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  double term = 0;
  for (std::size_t i = 0; i < x.size();) {
    std::size_t j = i;
    while (j < x.size() && x[j] == x[i]) ++j;
    const double t = static_cast<double>(j - i);
    term += t * (t - 1) * (2 * t + 5);
    i = j;
  }
  return term;
}

double KendallVariance(std::size_t count, double tie_term) {
  const double n = static_cast<double>(count);
  return (n * (n - 1) * (2 * n + 5) - tie_term) / 18.0;
}

std::vector<double> Slice(const std::vector<double>& y, std::size_t begin, std::size_t end) {
  return std::vector<double>(y.begin() + static_cast<std::ptrdiff_t>(begin),
                             y.begin() + static_cast<std::ptrdiff_t>(end));
}

}  // namespace

MannKendallResult MannKendall(const std::vector<double>& y_in) {
  MannKendallResult result;
  const std::vector<double> y = ThinEvenly(y_in, kMannKendallMaxValues);
  long long s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    for (std::size_t j = i + 1; j < y.size(); ++j) s += (y[j] > y[i]) - (y[j] < y[i]);
  }
  result.s = static_cast<double>(s);
  const double variance = KendallVariance(y.size(), KendallTieTerm(y));
  if (!(variance > 0) || s == 0) return result;
  const double corrected = s > 0 ? result.s - 1 : result.s + 1;
  result.z = corrected / std::sqrt(variance);
  result.p_value = std::min(1.0, 2.0 * NormalCdf(-std::fabs(result.z)));
  return result;
}

TheilSenResult TheilSen(const std::vector<double>& x_in, const std::vector<double>& y_in, double level) {
  DLBENCH_CHECK(x_in.size() == y_in.size(), "TheilSen needs x and y of the same length");
  TheilSenResult result;
  const std::vector<double> x = ThinEvenly(x_in, kTheilSenMaxPoints);
  const std::vector<double> y = ThinEvenly(y_in, kTheilSenMaxPoints);
  result.n = x.size();
  std::vector<double> slopes;
  if (x.size() >= 2) slopes.reserve(x.size() * (x.size() - 1) / 2);
  for (std::size_t i = 0; i < x.size(); ++i) {
    for (std::size_t j = i + 1; j < x.size(); ++j) {
      if (x[j] != x[i]) slopes.push_back((y[j] - y[i]) / (x[j] - x[i]));
    }
  }
  if (slopes.empty()) return result;
  std::sort(slopes.begin(), slopes.end());
  result.slope = QuantileSorted(slopes, 0.5);
  result.intercept = Median(y) - result.slope * Median(x);
  if (!(level > 0.0 && level < 1.0)) return result;
  const double sigma =
      std::sqrt(std::max(0.0, KendallVariance(x.size(), KendallTieTerm(x) + KendallTieTerm(y))));
  const double z = NormalQuantile(0.5 + level / 2.0);
  const double count = static_cast<double>(slopes.size());
  const double last = count - 1;
  const double low_index = std::clamp(std::round((count - z * sigma) / 2.0) - 1.0, 0.0, last);
  const double high_index = std::clamp(std::round((count + z * sigma) / 2.0), 0.0, last);
  result.slope_ci.low = slopes[static_cast<std::size_t>(low_index)];
  result.slope_ci.high = slopes[static_cast<std::size_t>(high_index)];
  return result;
}

std::vector<std::size_t> DetectChangePoints(const std::vector<double>& y, double alpha, double min_rel_shift,
                                            std::size_t min_segment) {
  std::vector<std::size_t> points;
  const std::size_t side = std::max<std::size_t>(1, min_segment);
  std::function<void(std::size_t, std::size_t)> search = [&](std::size_t begin, std::size_t end) {
    if (end - begin < 2 * side) return;
    // Prefix sums of values shifted by the segment's first one keep the squared-deviation cost
    // exact enough under large offsets.
    const double shift = y[begin];
    std::vector<double> sum(end - begin + 1, 0.0);
    std::vector<double> sum_sq(end - begin + 1, 0.0);
    for (std::size_t i = begin; i < end; ++i) {
      const double v = y[i] - shift;
      sum[i - begin + 1] = sum[i - begin] + v;
      sum_sq[i - begin + 1] = sum_sq[i - begin] + v * v;
    }
    const auto cost = [&](std::size_t from, std::size_t to) {  // offsets within the segment
      const double n = static_cast<double>(to - from);
      const double s = sum[to] - sum[from];
      return (sum_sq[to] - sum_sq[from]) - s * s / n;
    };
    const std::size_t length = end - begin;
    std::size_t best = side;
    double best_cost = INFINITY;
    for (std::size_t k = side; k <= length - side; ++k) {
      const double c = cost(0, k) + cost(k, length);
      if (c < best_cost) {
        best_cost = c;
        best = k;
      }
    }
    const std::size_t split = begin + best;
    const double splits_considered = static_cast<double>(length - 2 * side + 1);
    const std::vector<double> left = Slice(y, begin, split);
    const std::vector<double> right = Slice(y, split, end);
    if (!(MannWhitney(left, right).p_value * splits_considered < alpha)) return;
    const double left_median = Median(left);
    const double shift_of_medians = std::fabs(Median(right) - left_median);
    const bool large_enough =
        left_median == 0 ? shift_of_medians > 0 : shift_of_medians / std::fabs(left_median) >= min_rel_shift;
    if (!large_enough) return;
    points.push_back(split);
    search(begin, split);
    search(split, end);
  };
  search(0, y.size());
  std::sort(points.begin(), points.end());
  return points;
}

}  // namespace dlbench::stats
