// LoadGen's early-stopping rule (mlcommons/inference loadgen/early_stopping.cc and results.cc,
// PerformanceSummary::EarlyStopping; the rules' appendix "Early Stopping Criterion"), as pure
// functions: how many queries a percentile claim needs at a confidence, and which latency a run
// of a given length supports as the percentile's upper bound. docs/load.md has the derivation.
//
// Each query is a Bernoulli trial: it meets the latency bound or it does not. With target
// percentile p, tolerance d and confidence c, a run of h + t queries of which t are over the
// bound supports the claim "P(latency <= bound) >= p - d" when a system that only just fails the
// claim (success probability exactly p - d) would show at most t failures in h + t queries with
// probability below 1 - c:
//     P(X <= t; n = h + t, 1 - (p - d)) = I_{p-d}(h, t + 1) < 1 - c
// (the binomial CDF as a regularized incomplete beta function). LoadGen uses c = 0.99, d = 0.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace dlbench::stats {

struct EarlyStoppingParams {
  double percentile = 0.90;  // p, in (0, 1): 0.90 single stream, 0.99 multi stream and server
  double confidence = 0.99;  // c, in (0, 1)
  double tolerance = 0.0;    // d, in [0, p)
};

// Whether p, c and d are in their ranges (every function below requires it).
bool ValidEarlyStoppingParams(const EarlyStoppingParams& params);

// I_{p-d}(h, t + 1): the probability that a system with success probability p - d has at most t
// failures in h + t queries (LoadGen's odds(h, t, p, d)). h >= 1, t >= 0.
double EarlyStoppingOdds(std::int64_t h, std::int64_t t, const EarlyStoppingParams& params);

// The smallest h >= 1 with EarlyStoppingOdds(h, t) < 1 - c (LoadGen's MinPassingQueriesFinder:
// the same strict inequality). t >= 0. At c = 0.99, d = 0: p = 0.90 gives h(0) = 44, h(1) = 63;
// p = 0.99 gives h(0) = 459, h(1) = 661.
std::int64_t MinPassingQueries(std::int64_t t, const EarlyStoppingParams& params);

// The server rule (a latency bound exists): a run of `queries` queries with `overlatency` of them
// over the bound passes early stopping when queries >= h(t) + t, t = overlatency.
struct BoundedEarlyStopping {
  bool met = false;
  std::int64_t queries_needed = 0;  // h(t) + t
  std::int64_t more_queries = 0;    // max(0, queries_needed - queries): "would need to run at least"
};
BoundedEarlyStopping EarlyStoppingWithBound(std::int64_t queries, std::int64_t overlatency,
                                            const EarlyStoppingParams& params);

// The single-stream and multi-stream rule (no bound; the run estimates one): with q queries,
// the largest t >= 1 with h(t) + t <= q; the estimate is the t-th largest latency
// (sorted ascending: sorted[q - t]), an upper bound of the p-quantile at confidence c.
// Not met (no estimate) when q < h(1) + 1.
struct EarlyStoppingEstimate {
  bool met = false;
  std::int64_t min_queries = 0;   // h(1) + 1: the least q that gives an estimate
  std::int64_t discarded = 0;     // t - 1: highest latencies the estimate lies below
  std::optional<double> latency;  // the estimate, in the latencies' unit
};
EarlyStoppingEstimate EstimatePercentileBound(std::vector<double> latencies,
                                              const EarlyStoppingParams& params);

// The least number of queries a run needs before its percentile claim can pass early stopping:
// h(1) + 1 when the run estimates the percentile (single/multi stream), h(0) when it checks a
// bound (server; every query under the bound). What `plan` prints per cell.
std::int64_t MinQueriesForClaim(const EarlyStoppingParams& params, bool has_bound);

}  // namespace dlbench::stats
