// The measurement policy of a load cell (docs/load.md, "When a load cell stops"): the queries a
// cell's figures are computed over, decided once, as MeasurePolicy decides a step cell's window.
//
// LoadGen runs a test until it has both its minimum query count and its minimum duration
// (loadgen.cc, the issue loop's min_query_count and min_duration checks) and then judges early
// stopping (results.cc). dlbench stops a cell at the first query at which
//   queries >= max(min_steps, min_queries, the early-stopping minimum of its claim),
//   the queries so far span min_time_s (first scheduled to the latest completion), and
//   a server's bound passes early stopping (queries >= h(t) + t, t of them over the bound),
// or at a ceiling: max_steps queries, or max_time_s from the first query's scheduled time to the
// latest's. The rule is checked at every query, in id order, so the measured queries are the same
// however the runner's QUERIES frames split them (a run in virtual time is exact). There is no
// warm-up cut: the runner has run every batch size before READY (docs/load.md), and LoadGen
// measures every query of a performance run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/matrix.h"
#include "measure/policy.h"
#include "record/query.h"
#include "stats/early_stopping.h"

namespace dlbench::measure {

// What a load cell claims (its effective load settings).
struct LoadClaim {
  bool percentile_claim = true;               // false for offline, which claims only a rate
  std::optional<double> latency_bound_ns;     // the server's bound
  stats::EarlyStoppingParams early_stopping;  // percentile and confidence
  std::int64_t min_queries = 1;               // the cell's own min_queries
  // Only the ceilings stop the cell: a peak search (target_qps: max) sizes its own probes.
  bool ceilings_only = false;
};

// The least number of queries the cell's figures need: max(min_steps, min_queries, and with a
// percentile claim stats::MinQueriesForClaim).
std::int64_t LoadQueryFloor(const config::MeasureSettings& settings, const LoadClaim& claim);

class LoadPolicy {
 public:
  LoadPolicy(const config::MeasureSettings& settings, const LoadClaim& claim);

  // Appends rank 0's records in query-id order. O(1) amortised per record.
  void Add(const record::QueryRecord* records, std::size_t count);
  // STOP now, once the rule above held at some query ("early_stopping", "min_queries" when the
  // cell claims no bound, "max_steps", "max_time").
  Decision Evaluate() const;

  // Queries of the measured window: the prefix up to the query at which the rule held, or every
  // query added when it never held.
  std::int64_t MeasuredQueries() const;
  std::int64_t queries_seen() const { return seen_; }
  std::int64_t floor() const { return floor_; }  // LoadQueryFloor of the settings and claim
  const std::optional<Decision>& decided() const { return decided_; }

 private:
  bool EarlyStoppingMet(std::int64_t queries, std::int64_t over);

  config::MeasureSettings settings_;
  LoadClaim claim_;
  std::int64_t floor_ = 1;
  std::int64_t seen_ = 0;
  std::int64_t over_ = 0;
  std::int64_t first_scheduled_ns_ = 0;
  std::int64_t last_completed_ns_ = 0;
  // h(t) + t for the last t computed: since it grows with t, a run below it for an older t is below
  // it for the current t too, so it is recomputed only when a run reaches it.
  std::int64_t cached_needed_ = 0;
  std::optional<Decision> decided_;
  std::int64_t decided_queries_ = 0;
};

}  // namespace dlbench::measure
