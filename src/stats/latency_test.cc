#include "stats/latency.h"

#include <gtest/gtest.h>

#include <numeric>

namespace dlbench::stats {
namespace {

TEST(LatencyTest, LoadGenIndexRuleOnHandValues) {
  // n = 10: p50 -> index 5 (the 6th value), p90 -> 9, p99 -> floor(9.9) = 9.
  const std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(LoadGenPercentileSorted(v, 0.50), 6.0);
  EXPECT_EQ(LoadGenPercentileSorted(v, 0.90), 10.0);
  EXPECT_EQ(LoadGenPercentileSorted(v, 0.99), 10.0);
  EXPECT_EQ(LoadGenPercentileSorted(v, 0.0), 1.0);
  // n = 4: p50 -> index 2 (no interpolation: type 7 would give 2.5).
  EXPECT_EQ(LoadGenPercentileSorted({1, 2, 3, 4}, 0.5), 3.0);
}

TEST(LatencyTest, DegenerateInputs) {
  EXPECT_TRUE(std::isnan(LoadGenPercentileSorted({}, 0.5)));
  EXPECT_TRUE(std::isnan(LoadGenPercentileSorted({1.0}, 1.0)));
  EXPECT_TRUE(std::isnan(LoadGenPercentileSorted({1.0}, -0.1)));
  EXPECT_TRUE(std::isnan(LoadGenPercentileSorted({1.0}, NAN)));
  EXPECT_EQ(LoadGenPercentileSorted({7.0}, 0.999), 7.0);
  const LatencySummary empty = SummarizeLatencies({});
  EXPECT_EQ(empty.count, 0u);
  EXPECT_TRUE(std::isnan(empty.p99));
  EXPECT_TRUE(std::isnan(empty.mean));
  const LatencySummary one = SummarizeLatencies({42.0});
  EXPECT_EQ(one.min, 42.0);
  EXPECT_EQ(one.p999, 42.0);
  EXPECT_EQ(one.mean, 42.0);
  const LatencySummary two = SummarizeLatencies({3.0, 1.0});
  EXPECT_EQ(two.p50, 3.0);  // index floor(2 * 0.5) = 1
  EXPECT_EQ(two.mean, 2.0);
}

TEST(LatencyTest, SummaryOfOneThousandWithALargeOffset) {
  std::vector<double> v(1000);
  for (int i = 0; i < 1000; ++i) v[i] = 1.2e10 + (999 - i);  // descending: the summary sorts
  const LatencySummary s = SummarizeLatencies(v);
  EXPECT_EQ(s.count, 1000u);
  EXPECT_EQ(s.min, 1.2e10);
  EXPECT_EQ(s.max, 1.2e10 + 999);
  EXPECT_EQ(s.mean, 1.2e10 + 499.5);
  EXPECT_EQ(s.p50, 1.2e10 + 500);
  EXPECT_EQ(s.p90, 1.2e10 + 900);
  EXPECT_EQ(s.p95, 1.2e10 + 950);
  EXPECT_EQ(s.p97, 1.2e10 + 970);
  EXPECT_EQ(s.p99, 1.2e10 + 990);
  EXPECT_EQ(s.p999, 1.2e10 + 999);
}

TEST(LatencyTest, RateUsesNMinusOneOverTheRange) {
  // 11 events over 1 s: 10/s.
  EXPECT_DOUBLE_EQ(RatePerSecond(11, 5'000'000'000, 6'000'000'000), 10.0);
  EXPECT_TRUE(std::isnan(RatePerSecond(1, 0, 10)));
  EXPECT_TRUE(std::isnan(RatePerSecond(0, 0, 10)));
  EXPECT_TRUE(std::isnan(RatePerSecond(5, 10, 10)));
}

TEST(LatencyTest, IssueRateCheck) {
  // Scheduled every 1 ms for 1001 queries (1000/s).
  std::vector<std::int64_t> scheduled(1001), on_time(1001), late(1001);
  for (int i = 0; i <= 1000; ++i) {
    scheduled[i] = 1'000'000'000'000LL + i * 1'000'000LL;
    on_time[i] = scheduled[i] + 3'000;      // a constant 3 us lateness keeps the rate
    late[i] = scheduled[i] + i * 20'000LL;  // falls 20 us further behind each query: 1000/1.02 per s
  }
  const IssueRateCheck ok = CheckIssueRate(scheduled, on_time, 0.01);
  EXPECT_DOUBLE_EQ(ok.scheduled_per_s, 1000.0);
  EXPECT_DOUBLE_EQ(ok.achieved_per_s, 1000.0);
  EXPECT_TRUE(ok.kept_up);
  const IssueRateCheck behind = CheckIssueRate(scheduled, late, 0.01);
  EXPECT_NEAR(behind.achieved_per_s, 1000.0 / 1.02, 1e-9);
  EXPECT_FALSE(behind.kept_up);
  EXPECT_TRUE(CheckIssueRate(scheduled, late, 0.05).kept_up);
  const IssueRateCheck none = CheckIssueRate({}, {}, 0.01);
  EXPECT_FALSE(none.kept_up);
  EXPECT_TRUE(std::isnan(none.scheduled_per_s));
  EXPECT_FALSE(CheckIssueRate({5}, {5}, 0.01).kept_up);
}

}  // namespace
}  // namespace dlbench::stats
