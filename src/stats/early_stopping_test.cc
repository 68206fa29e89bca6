// Early stopping against values recomputed exactly from the binomial CDF (Python, math.comb:
// the smallest h with P(X <= t; h + t, 1 - p) < 0.01), the table in
// shared/notes/libtorch-loadgen-nvml-facts.md §1.3, and LoadGen's own figures (64 queries for
// single stream, 662 = mlperf.conf's MultiStream.min_query_count, 459 for a clean server run).
#include "stats/early_stopping.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace dlbench::stats {
namespace {

EarlyStoppingParams P(double percentile) {
  EarlyStoppingParams p;
  p.percentile = percentile;
  return p;
}

TEST(EarlyStoppingTest, OddsAreTheBinomialCdf) {
  // t = 0: the odds of h successes in a row, 0.9^h.
  EXPECT_NEAR(EarlyStoppingOdds(44, 0, P(0.90)), std::pow(0.9, 44), 1e-15);
  EXPECT_NEAR(EarlyStoppingOdds(43, 0, P(0.90)), std::pow(0.9, 43), 1e-15);
  // t = 1, h = 2: P(X <= 1; n = 3, q = 0.1) = 0.9^3 + 3 * 0.1 * 0.9^2 = 0.972.
  EXPECT_NEAR(EarlyStoppingOdds(2, 1, P(0.90)), 0.972, 1e-14);
  // A tolerance lowers the success probability: p - d = 0.8, h = 3, t = 0 -> 0.512.
  EarlyStoppingParams d = P(0.90);
  d.tolerance = 0.1;
  EXPECT_NEAR(EarlyStoppingOdds(3, 0, d), 0.512, 1e-14);
}

TEST(EarlyStoppingTest, MinPassingQueriesMatchesTheExactTable) {
  struct Row {
    double p;
    std::int64_t t;
    std::int64_t h;
  };
  const Row rows[] = {{0.90, 0, 44},  {0.90, 1, 63},  {0.90, 2, 79},  {0.90, 5, 122},  {0.90, 10, 187},
                      {0.99, 0, 459}, {0.99, 1, 661}, {0.99, 2, 836}, {0.99, 5, 1302}, {0.99, 10, 2000}};
  for (const Row& row : rows) {
    EXPECT_EQ(MinPassingQueries(row.t, P(row.p)), row.h) << "p " << row.p << " t " << row.t;
  }
}

TEST(EarlyStoppingTest, LowConfidencePassesWithOneQuery) {
  EarlyStoppingParams p = P(0.5);
  p.confidence = 0.4;  // odds(1, 0) = 0.5 < 0.6
  EXPECT_EQ(MinPassingQueries(0, p), 1);
}

TEST(EarlyStoppingTest, BoundedRuleCountsQueriesStillNeeded) {
  auto clean = EarlyStoppingWithBound(459, 0, P(0.99));
  EXPECT_TRUE(clean.met);
  EXPECT_EQ(clean.queries_needed, 459);
  EXPECT_EQ(clean.more_queries, 0);
  auto short_by_one = EarlyStoppingWithBound(458, 0, P(0.99));
  EXPECT_FALSE(short_by_one.met);
  EXPECT_EQ(short_by_one.more_queries, 1);
  // Two over the bound need h(2) + 2 = 838 queries.
  auto two_late = EarlyStoppingWithBound(700, 2, P(0.99));
  EXPECT_FALSE(two_late.met);
  EXPECT_EQ(two_late.queries_needed, 838);
  EXPECT_EQ(two_late.more_queries, 138);
  EXPECT_TRUE(EarlyStoppingWithBound(838, 2, P(0.99)).met);
}

std::vector<double> OneToN(std::size_t n) {
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), 1.0);
  return v;
}

TEST(EarlyStoppingTest, EstimateNeedsSixtyFourQueriesAtP90) {
  auto too_few = EstimatePercentileBound(OneToN(63), P(0.90));
  EXPECT_FALSE(too_few.met);
  EXPECT_EQ(too_few.min_queries, 64);
  EXPECT_FALSE(too_few.latency.has_value());
  // 64 queries: t = 1, the estimate is the largest latency.
  auto floor = EstimatePercentileBound(OneToN(64), P(0.90));
  ASSERT_TRUE(floor.met);
  EXPECT_EQ(floor.discarded, 0);
  EXPECT_EQ(*floor.latency, 64.0);
}

TEST(EarlyStoppingTest, EstimateDiscardsTheHighestAsTheRunGrows) {
  // h(2) + 2 = 81: with 80 queries t stays 1, with 81 it is 2 (second largest).
  EXPECT_EQ(*EstimatePercentileBound(OneToN(80), P(0.90)).latency, 80.0);
  auto at81 = EstimatePercentileBound(OneToN(81), P(0.90));
  EXPECT_EQ(at81.discarded, 1);
  EXPECT_EQ(*at81.latency, 80.0);
  // h(10) + 10 = 197 and h(11) + 11 > 197 -> t = 10: the 10th largest of 1..197 is 188.
  auto at197 = EstimatePercentileBound(OneToN(197), P(0.90));
  EXPECT_EQ(at197.discarded, 9);
  EXPECT_EQ(*at197.latency, 188.0);
  // p99 at 662 queries (MultiStream's min_query_count): t = 1, the maximum.
  auto ms = EstimatePercentileBound(OneToN(662), P(0.99));
  ASSERT_TRUE(ms.met);
  EXPECT_EQ(*ms.latency, 662.0);
  EXPECT_FALSE(EstimatePercentileBound(OneToN(661), P(0.99)).met);
}

TEST(EarlyStoppingTest, EstimateIgnoresInputOrderAndKeepsLargeOffsets) {
  std::vector<double> v;
  for (int i = 0; i < 81; ++i) v.push_back(1.2e10 + ((i * 37) % 81));  // a permutation of 0..80
  auto e = EstimatePercentileBound(v, P(0.90));
  ASSERT_TRUE(e.met);
  EXPECT_EQ(*e.latency, 1.2e10 + 79);
}

TEST(EarlyStoppingTest, DegenerateInputs) {
  EXPECT_FALSE(EstimatePercentileBound({}, P(0.90)).met);
  EXPECT_FALSE(EstimatePercentileBound({5.0}, P(0.90)).met);
  EXPECT_FALSE(EstimatePercentileBound({5.0, 6.0}, P(0.90)).met);
  EXPECT_FALSE(EarlyStoppingWithBound(0, 0, P(0.99)).met);
  EXPECT_FALSE(ValidEarlyStoppingParams(P(1.0)));
  EXPECT_FALSE(ValidEarlyStoppingParams(P(0.0)));
  EarlyStoppingParams bad = P(0.9);
  bad.tolerance = 0.9;
  EXPECT_FALSE(ValidEarlyStoppingParams(bad));
  bad = P(0.9);
  bad.confidence = 1.0;
  EXPECT_FALSE(ValidEarlyStoppingParams(bad));
}

TEST(EarlyStoppingTest, MinQueriesForClaim) {
  EXPECT_EQ(MinQueriesForClaim(P(0.90), false), 64);
  EXPECT_EQ(MinQueriesForClaim(P(0.99), false), 662);
  EXPECT_EQ(MinQueriesForClaim(P(0.99), true), 459);
}

}  // namespace
}  // namespace dlbench::stats
