#include "load/schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace dlbench::load {
namespace {

EffectiveLoadSettings Settings(Scenario scenario) {
  EffectiveLoadSettings s;
  s.scenario = scenario;
  s.target_qps = 1000;
  s.samples_per_query = scenario == Scenario::kMultiStream ? 8 : scenario == Scenario::kOffline ? 100 : 1;
  s.schedule_seed = 12345;
  s.sample_seed = 678;
  return s;
}

TEST(ScheduleTest, Mt19937_64IsTheStandardsGenerator) {
  // [rand.predef]: the 10000th output of a default-constructed mt19937_64. The schedule's
  // portability rests on this.
  std::mt19937_64 g;
  g.discard(9999);
  EXPECT_EQ(g(), 9981545732273789042ull);
}

TEST(ScheduleTest, ServerGapsAreTheInverseCdfOfTheSeededStream) {
  QuerySchedule schedule(Settings(Scenario::kServer), 64);
  std::mt19937_64 rng(12345);
  std::int64_t offset = 0;
  for (int i = 0; i < 5; ++i) {
    const ScheduledQuery q = schedule.Next();
    EXPECT_EQ(q.id, static_cast<std::uint64_t>(i));
    EXPECT_EQ(q.offset_ns, offset) << i;
    const double u = (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
    offset += std::llround(-std::log(u) / 1000.0 * 1e9);
  }
}

TEST(ScheduleTest, ServerArrivalsArePoissonAtTheTargetRate) {
  QuerySchedule schedule(Settings(Scenario::kServer), 64);
  constexpr int kN = 200'000;
  std::int64_t last = 0;
  double sum_sq = 0;
  for (int i = 0; i < kN; ++i) {
    const ScheduledQuery q = schedule.Next();
    const double gap = static_cast<double>(q.offset_ns - last) * 1e-6;  // ms
    if (i > 0) sum_sq += gap * gap;
    last = q.offset_ns;
  }
  // Exponential gaps of mean 1 ms: the mean's standard error over 2e5 gaps is 0.22%; a fixed
  // seed makes the figure exact, so the 1% margin is ~4.5 standard errors of slack, not luck.
  const double mean_ms = static_cast<double>(last) * 1e-6 / (kN - 1);
  EXPECT_NEAR(mean_ms, 1.0, 0.01);
  EXPECT_NEAR(sum_sq / (kN - 1), 2.0, 0.05);  // E[X^2] = 2 / rate^2 for an exponential
}

TEST(ScheduleTest, SameSeedsSameScheduleOtherSeedsAnother) {
  QuerySchedule a(Settings(Scenario::kServer), 64), b(Settings(Scenario::kServer), 64);
  EffectiveLoadSettings other = Settings(Scenario::kServer);
  other.schedule_seed = 12346;
  QuerySchedule c(other, 64);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const ScheduledQuery qa = a.Next(), qb = b.Next(), qc = c.Next();
    EXPECT_EQ(qa.offset_ns, qb.offset_ns);
    EXPECT_EQ(qa.first_sample, qb.first_sample);
    differs = differs || qa.offset_ns != qc.offset_ns;
    EXPECT_EQ(qa.first_sample, qc.first_sample);  // the sample stream has its own seed
  }
  EXPECT_TRUE(differs);
}

TEST(ScheduleTest, SamplesCoverTheLibraryUniformly) {
  QuerySchedule schedule(Settings(Scenario::kSingleStream), 10);
  std::vector<int> counts(10, 0);
  for (int i = 0; i < 100'000; ++i) {
    const ScheduledQuery q = schedule.Next();
    ASSERT_LT(q.first_sample, 10u);
    EXPECT_EQ(q.offset_ns, 0);
    ++counts[q.first_sample];
  }
  for (int c : counts) EXPECT_NEAR(c, 10'000, 500);  // 5 standard deviations of a binomial
}

TEST(ScheduleTest, MultiStreamIntervalsAndOfflineOrder) {
  EffectiveLoadSettings ms = Settings(Scenario::kMultiStream);
  ms.query_interval_ns = 50'000'000;
  QuerySchedule fixed(ms, 64);
  for (int i = 0; i < 4; ++i) {
    const ScheduledQuery q = fixed.Next();
    EXPECT_EQ(q.offset_ns, i * 50'000'000LL);
    EXPECT_EQ(q.samples, 8u);
  }
  QuerySchedule offline(Settings(Scenario::kOffline), 64);
  EXPECT_EQ(offline.Next().first_sample, 0u);
  EXPECT_EQ(offline.Next().first_sample, 36u);  // 100 % 64
  EXPECT_EQ(offline.Next().first_sample, 8u);   // 200 % 64
}

TEST(ScheduleTest, RestartKeepsIdsAndSamplesAndResetsOffsets) {
  QuerySchedule schedule(Settings(Scenario::kServer), 64);
  for (int i = 0; i < 10; ++i) schedule.Next();
  schedule.Restart(10.0);
  const ScheduledQuery q = schedule.Next();
  EXPECT_EQ(q.id, 10u);
  EXPECT_EQ(q.offset_ns, 0);
  const ScheduledQuery r = schedule.Next();
  EXPECT_GT(r.offset_ns, 0);
}

}  // namespace
}  // namespace dlbench::load
