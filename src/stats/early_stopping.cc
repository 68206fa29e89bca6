#include "stats/early_stopping.h"

#include <algorithm>
#include <boost/math/special_functions/beta.hpp>
#include <cmath>

#include "common/error.h"

namespace dlbench::stats {

bool ValidEarlyStoppingParams(const EarlyStoppingParams& params) {
  const double x = params.percentile - params.tolerance;
  return params.percentile > 0 && params.percentile < 1 && params.confidence > 0 && params.confidence < 1 &&
         params.tolerance >= 0 && x > 0 && x < 1;
}

double EarlyStoppingOdds(std::int64_t h, std::int64_t t, const EarlyStoppingParams& params) {
  DLBENCH_CHECK(ValidEarlyStoppingParams(params), "early-stopping parameters out of range");
  DLBENCH_CHECK(h >= 1 && t >= 0, "early-stopping odds need h >= 1 and t >= 0");
  // Boost's regularized incomplete beta is accurate over the whole range LoadGen's ₂F₁ series
  // covers (and converges where that series needs 200,000 terms).
  return boost::math::ibeta(static_cast<double>(h), static_cast<double>(t) + 1.0,
                            params.percentile - params.tolerance);
}

std::int64_t MinPassingQueries(std::int64_t t, const EarlyStoppingParams& params) {
  const double limit = 1.0 - params.confidence;
  auto passes = [&](std::int64_t h) { return EarlyStoppingOdds(h, t, params) < limit; };
  // The odds fall as h grows (more successes with the same failures), so the passing h form a
  // ray [h*, inf): double up to a passing h, then bisect (lo fails, hi passes).
  if (passes(1)) return 1;
  std::int64_t lo = 1;
  std::int64_t hi = 2;
  while (!passes(hi)) {
    lo = hi;
    DLBENCH_CHECK(hi < (std::int64_t{1} << 52), "early-stopping query count beyond 2^52");
    hi *= 2;
  }
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (passes(mid) ? hi : lo) = mid;
  }
  return hi;
}

BoundedEarlyStopping EarlyStoppingWithBound(std::int64_t queries, std::int64_t overlatency,
                                            const EarlyStoppingParams& params) {
  DLBENCH_CHECK(overlatency >= 0 && queries >= overlatency, "over-latency count outside [0, queries]");
  BoundedEarlyStopping r;
  r.queries_needed = MinPassingQueries(overlatency, params) + overlatency;
  r.met = queries >= r.queries_needed;
  r.more_queries = std::max<std::int64_t>(0, r.queries_needed - queries);
  return r;
}

EarlyStoppingEstimate EstimatePercentileBound(std::vector<double> latencies,
                                              const EarlyStoppingParams& params) {
  EarlyStoppingEstimate r;
  const auto q = static_cast<std::int64_t>(latencies.size());
  r.min_queries = MinPassingQueries(1, params) + 1;
  if (q < r.min_queries) return r;
  // LoadGen walks t = 2, 3, ... until h(t) + t exceeds q; h(t) + t grows strictly with t, so the
  // largest t with h(t) + t <= q is found by bisection over [1, q] instead (lo fits, hi does not).
  std::int64_t lo = 1;
  std::int64_t hi = q;
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (MinPassingQueries(mid, params) + mid <= q ? lo : hi) = mid;
  }
  const std::int64_t t = lo;
  std::nth_element(latencies.begin(), latencies.begin() + (q - t), latencies.end());
  r.met = true;
  r.discarded = t - 1;
  r.latency = latencies[static_cast<std::size_t>(q - t)];
  return r;
}

std::int64_t MinQueriesForClaim(const EarlyStoppingParams& params, bool has_bound) {
  return has_bound ? MinPassingQueries(0, params) : MinPassingQueries(1, params) + 1;
}

}  // namespace dlbench::stats
