#include "stats/olympic.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "stats/descriptive.h"

namespace dlbench::stats {

OlympicScore OlympicMean(const std::vector<std::optional<double>>& times) {
  OlympicScore s;
  s.runs = times.size();
  std::vector<double> converged;
  for (const auto& t : times)
    if (t) converged.push_back(*t);
  s.converged = converged.size();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (converged.empty()) {
    s.min = s.max = s.stddev = nan;
  } else {
    const auto [lo, hi] = std::minmax_element(converged.begin(), converged.end());
    s.min = *lo;
    s.max = *hi;
    s.stddev = converged.size() >= 2 ? ComputeMoments(converged).stddev : nan;
  }
  if (s.runs < 3) {
    s.no_score = "an olympic mean needs at least 3 runs";
    return s;
  }
  const std::size_t failed = s.runs - s.converged;
  if (failed > 1) {
    s.no_score = std::to_string(failed) + " of " + std::to_string(s.runs) +
                 " runs did not reach the target (at most 1 may)";
    return s;
  }
  std::sort(converged.begin(), converged.end());
  // The failed run, if any, is the slowest and is the one dropped at the top.
  const std::size_t keep_end = failed == 1 ? converged.size() : converged.size() - 1;
  double sum = 0;
  for (std::size_t i = 1; i < keep_end; ++i) sum += converged[i];
  s.mean = sum / static_cast<double>(keep_end - 1);
  return s;
}

}  // namespace dlbench::stats
