// The load policy's stopping rule on hand-made query records: where it stops (the early-stopping
// counts of docs/load.md's table), that the point does not depend on how the records are split
// into frames, and the ceilings.
#include "measure/load_policy.h"

#include <gtest/gtest.h>

#include <vector>

namespace dlbench::measure {
namespace {

constexpr std::int64_t kStart = 1'200'000'000'000;

// `n` closed-loop queries of `latency_ns` each, back to back; latencies of the ids in `slow` are
// `slow_ns` instead.
std::vector<record::QueryRecord> BackToBack(std::size_t n, std::int64_t latency_ns,
                                            const std::vector<std::size_t>& slow = {},
                                            std::int64_t slow_ns = 0) {
  std::vector<record::QueryRecord> out(n);
  std::int64_t t = kStart;
  for (std::size_t i = 0; i < n; ++i) {
    const bool is_slow = std::find(slow.begin(), slow.end(), i) != slow.end();
    out[i].query_id = i;
    out[i].scheduled_ns = out[i].issued_ns = t;
    t += is_slow ? slow_ns : latency_ns;
    out[i].completed_ns = t;
    out[i].samples = 1;
  }
  return out;
}

config::MeasureSettings Fast() {
  config::MeasureSettings s;
  s.min_time_s = 0;
  s.max_time_s = 1e6;
  s.max_steps = 10'000'000;
  return s;
}

LoadClaim Server(double bound_ms) {
  LoadClaim c;
  c.latency_bound_ns = bound_ms * 1e6;
  c.early_stopping.percentile = 0.99;
  return c;
}

TEST(LoadPolicyTest, AServerUnderItsBoundStopsAtTheEarlyStoppingMinimum) {
  const auto records = BackToBack(2000, 1'000'000);
  LoadPolicy policy(Fast(), Server(10));
  EXPECT_EQ(policy.floor(), 459);  // h(0) at p = 0.99, c = 0.99
  policy.Add(records.data(), records.size());
  EXPECT_TRUE(policy.Evaluate().stop);
  EXPECT_EQ(policy.Evaluate().reason, "early_stopping");
  EXPECT_EQ(policy.MeasuredQueries(), 459);
  EXPECT_EQ(policy.queries_seen(), 2000);
}

TEST(LoadPolicyTest, QueriesOverTheBoundRaiseTheCountAndFramesDoNotMoveIt) {
  // One query over the bound: h(1) + 1 = 662 queries.
  const auto records = BackToBack(2000, 1'000'000, {3}, 20'000'000);
  for (std::size_t frame : {std::size_t{1}, std::size_t{7}, std::size_t{1024}, std::size_t{2000}}) {
    LoadPolicy policy(Fast(), Server(10));
    for (std::size_t i = 0; i < records.size(); i += frame) {
      policy.Add(records.data() + i, std::min(frame, records.size() - i));
    }
    EXPECT_EQ(policy.MeasuredQueries(), 662) << "frames of " << frame;
    EXPECT_EQ(policy.Evaluate().reason, "early_stopping");
  }
}

TEST(LoadPolicyTest, AnEstimateStopsAtItsMinimumAndTheMinimumDuration) {
  LoadClaim single;
  single.early_stopping.percentile = 0.90;
  const auto records = BackToBack(3000, 1'000'000);
  {
    LoadPolicy policy(Fast(), single);
    policy.Add(records.data(), records.size());
    EXPECT_EQ(policy.MeasuredQueries(), 64);  // h(1) + 1 at p = 0.90
    EXPECT_EQ(policy.Evaluate().reason, "min_queries");
  }
  {
    // min_time_s 1: the 1000th query of 1 ms completes 1 s after the first was scheduled.
    config::MeasureSettings s = Fast();
    s.min_time_s = 1.0;
    LoadPolicy policy(s, single);
    policy.Add(records.data(), records.size());
    EXPECT_EQ(policy.MeasuredQueries(), 1000);
  }
  {
    LoadClaim more = single;
    more.min_queries = 500;  // the cell's own floor, when larger
    LoadPolicy policy(Fast(), more);
    policy.Add(records.data(), records.size());
    EXPECT_EQ(policy.MeasuredQueries(), 500);
  }
}

TEST(LoadPolicyTest, AServerOverItsBoundRunsToItsCeiling) {
  const auto records = BackToBack(5000, 20'000'000);  // every query over a 10 ms bound
  config::MeasureSettings s = Fast();
  s.max_time_s = 30;  // query 1500 is scheduled 30 s after the first
  LoadPolicy policy(s, Server(10));
  policy.Add(records.data(), records.size());
  EXPECT_EQ(policy.Evaluate().reason, "max_time");
  EXPECT_EQ(policy.MeasuredQueries(), 1501);
  config::MeasureSettings few = Fast();
  few.max_steps = 800;
  LoadPolicy capped(few, Server(10));
  capped.Add(records.data(), records.size());
  EXPECT_EQ(capped.Evaluate().reason, "max_steps");
  EXPECT_EQ(capped.MeasuredQueries(), 800);
}

TEST(LoadPolicyTest, OfflineNeedsOnlyItsQueryFloorAndNoRecordNoDecision) {
  LoadClaim offline;
  offline.percentile_claim = false;
  config::MeasureSettings s = Fast();
  s.min_steps = 3;
  LoadPolicy policy(s, offline);
  EXPECT_EQ(policy.floor(), 3);
  EXPECT_FALSE(policy.Evaluate().stop);
  EXPECT_EQ(policy.MeasuredQueries(), 0);
  const auto records = BackToBack(5, 50'000'000);
  policy.Add(records.data(), 2);
  EXPECT_FALSE(policy.Evaluate().stop);
  policy.Add(records.data() + 2, 3);
  EXPECT_EQ(policy.MeasuredQueries(), 3);
}

}  // namespace
}  // namespace dlbench::measure
