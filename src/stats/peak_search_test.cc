#include "stats/peak_search.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dlbench::stats {
namespace {

// A system whose p99 is 1 ms below 1000/s and 50 ms above: the peak is 1000/s.
Probe Step(double rate) {
  Probe p;
  p.latency = rate <= 1000.0 ? 1.0 : 50.0;
  p.issue_kept_up = true;
  return p;
}

PeakSearchSettings Bound10(double start) {
  PeakSearchSettings s;
  s.latency_bound = 10.0;
  s.start_rate_per_s = start;
  s.rel_tolerance = 0.01;
  s.max_probes = 40;
  return s;
}

TEST(PeakSearchTest, BracketsUpwardsThenBisects) {
  const PeakSearchResult r = SearchPeak(Bound10(100), Step);
  EXPECT_EQ(r.end, PeakSearchEnd::kConverged);
  ASSERT_TRUE(r.peak_per_s && r.lowest_failing_per_s);
  // Bracketing: 100, 200, 400, 800 pass; 1600 fails.
  ASSERT_GE(r.probes.size(), 5u);
  EXPECT_EQ(r.probes[0].rate_per_s, 100.0);
  EXPECT_EQ(r.probes[3].rate_per_s, 800.0);
  EXPECT_EQ(r.probes[4].rate_per_s, 1600.0);
  EXPECT_FALSE(r.probes[4].passed);
  // Bisection on the geometric mean: the first midpoint is sqrt(800 * 1600).
  EXPECT_DOUBLE_EQ(r.probes[5].rate_per_s, std::sqrt(800.0 * 1600.0));
  EXPECT_LE(*r.peak_per_s, 1000.0);
  EXPECT_GT(*r.lowest_failing_per_s, 1000.0);
  EXPECT_LE(*r.lowest_failing_per_s / *r.peak_per_s - 1.0, 0.01);
  // The bracket is proven by probes: the peak passed and the failing end failed.
  bool peak_probed = false, fail_probed = false;
  for (const Probe& p : r.probes) {
    if (p.rate_per_s == *r.peak_per_s) peak_probed = p.passed;
    if (p.rate_per_s == *r.lowest_failing_per_s) fail_probed = !p.passed;
  }
  EXPECT_TRUE(peak_probed);
  EXPECT_TRUE(fail_probed);
}

TEST(PeakSearchTest, BracketsDownwardsWhenTheStartFails) {
  const PeakSearchResult r = SearchPeak(Bound10(5000), Step);
  EXPECT_EQ(r.end, PeakSearchEnd::kConverged);
  EXPECT_EQ(r.probes[0].rate_per_s, 5000.0);
  EXPECT_EQ(r.probes[1].rate_per_s, 2500.0);
  EXPECT_EQ(r.probes[2].rate_per_s, 1250.0);
  EXPECT_EQ(r.probes[3].rate_per_s, 625.0);
  EXPECT_TRUE(r.probes[3].passed);
  EXPECT_LE(*r.peak_per_s, 1000.0);
  EXPECT_GT(*r.lowest_failing_per_s, 1000.0);
}

TEST(PeakSearchTest, AnIssueRateShortfallFailsAProbe) {
  auto probe = [](double rate) {
    Probe p;
    p.latency = 1.0;                // always within the bound...
    p.issue_kept_up = rate <= 300;  // ...but the generator cannot issue above 300/s
    return p;
  };
  const PeakSearchResult r = SearchPeak(Bound10(100), probe);
  EXPECT_EQ(r.end, PeakSearchEnd::kConverged);
  EXPECT_LE(*r.peak_per_s, 300.0);
  EXPECT_GT(*r.lowest_failing_per_s, 300.0);
}

TEST(PeakSearchTest, ProbeCapStopsWithTheBracketKnownSoFar) {
  PeakSearchSettings s = Bound10(100);
  s.max_probes = 6;  // 5 to bracket, 1 to bisect
  const PeakSearchResult r = SearchPeak(s, Step);
  EXPECT_EQ(r.end, PeakSearchEnd::kProbeCap);
  EXPECT_EQ(r.probes.size(), 6u);
  // The sixth probe, sqrt(800 * 1600) = 1131/s, failed: the bracket is [800, 1131].
  EXPECT_EQ(*r.peak_per_s, 800.0);
  EXPECT_DOUBLE_EQ(*r.lowest_failing_per_s, std::sqrt(800.0 * 1600.0));
}

TEST(PeakSearchTest, EndsAtTheRateLimits) {
  PeakSearchSettings s = Bound10(100);
  s.max_rate_per_s = 500;
  const PeakSearchResult capped = SearchPeak(s, Step);
  EXPECT_EQ(capped.end, PeakSearchEnd::kRateCap);
  EXPECT_EQ(*capped.peak_per_s, 500.0);
  EXPECT_FALSE(capped.lowest_failing_per_s.has_value());
  EXPECT_EQ(capped.probes.back().rate_per_s, 500.0);

  PeakSearchSettings low = Bound10(100);
  low.min_rate_per_s = 20;
  const PeakSearchResult none = SearchPeak(low, [](double) {
    Probe p;
    p.latency = 99.0;
    p.issue_kept_up = true;
    return p;
  });
  EXPECT_EQ(none.end, PeakSearchEnd::kNoPassingRate);
  EXPECT_FALSE(none.peak_per_s.has_value());
  EXPECT_EQ(none.probes.back().rate_per_s, 20.0);
  EXPECT_EQ(none.probes.size(), 4u);  // 100, 50, 25, 20
}

TEST(PeakSearchTest, OneProbeBudget) {
  PeakSearchSettings s = Bound10(100);
  s.max_probes = 1;
  const PeakSearchResult r = SearchPeak(s, Step);
  EXPECT_EQ(r.end, PeakSearchEnd::kProbeCap);
  EXPECT_EQ(r.probes.size(), 1u);
  EXPECT_EQ(*r.peak_per_s, 100.0);  // a one-sided bound: at least 100/s passes
  EXPECT_FALSE(r.lowest_failing_per_s.has_value());
}

TEST(PeakSearchTest, StopEndsTheSearchWithTheBracketSoFar) {
  int probes = 0;
  const PeakSearchResult r = SearchPeak(
      Bound10(100),
      [&](double rate) {
        ++probes;
        return Step(rate);
      },
      [&] { return probes >= 3; });
  EXPECT_EQ(r.end, PeakSearchEnd::kStopped);
  EXPECT_EQ(r.probes.size(), 3u);
  EXPECT_EQ(*r.peak_per_s, 400.0);
  EXPECT_FALSE(r.lowest_failing_per_s.has_value());
  EXPECT_STREQ(PeakSearchEndName(r.end), "stopped");
}

// A probe the search's end cut short proves nothing: counted as a failure, the cut 1131/s would
// be the bracket's failing end instead of 1600/s (and a cut just above the peak would make the
// search read converged).
TEST(PeakSearchTest, AProbeCutByTheSearchsEndIsKeptButNotInTheBracket) {
  PeakSearchSettings s = Bound10(100);
  s.rel_tolerance = 0.05;
  bool stop = false;
  const PeakSearchResult r = SearchPeak(
      s,
      [&](double rate) {
        Probe p = Step(rate);
        // The first bisection probe, between 800 and 1600: 1131/s, cut by the end.
        if (rate > 1100 && rate < 1200) {
          p.latency = 1.0;
          p.early_stopping_met = false;
          p.cut = true;
          stop = true;
        }
        return p;
      },
      [&] { return stop; });
  EXPECT_EQ(r.end, PeakSearchEnd::kStopped);
  ASSERT_EQ(r.probes.size(), 6u);  // 100, 200, 400, 800, 1600, then the cut 1131
  EXPECT_NEAR(r.probes.back().rate_per_s, std::sqrt(800.0 * 1600.0), 1e-9);
  EXPECT_FALSE(r.probes.back().passed);
  EXPECT_EQ(*r.peak_per_s, 800.0);
  EXPECT_EQ(*r.lowest_failing_per_s, 1600.0);
}

TEST(PeakSearchTest, AProbeWithoutEnoughQueriesForItsClaimFails) {
  PeakSearchSettings s = Bound10(100);
  s.max_probes = 1;
  const PeakSearchResult r = SearchPeak(s, [](double) {
    Probe p;
    p.latency = 1.0;
    p.issue_kept_up = true;
    p.early_stopping_met = false;
    return p;
  });
  EXPECT_FALSE(r.probes[0].passed);
  EXPECT_FALSE(r.peak_per_s.has_value());
}

TEST(PeakSearchTest, LatencyEqualToTheBoundPasses) {
  PeakSearchSettings s = Bound10(100);
  s.max_probes = 1;
  const PeakSearchResult r = SearchPeak(s, [](double) {
    Probe p;
    p.latency = 10.0;
    p.issue_kept_up = true;
    return p;
  });
  EXPECT_TRUE(r.probes[0].passed);
}

// The bracket the orchestrator recomputes from stored probes: the same rule as the search's.
TEST(PeakSearchTest, TheBracketKeepsOnlyWhatTheProbesProve) {
  PeakBracket b;
  b.Add(100, true);
  b.Add(200, true);
  EXPECT_EQ(*b.lo, 200);
  EXPECT_FALSE(b.hi);
  b.Add(400, false);
  b.Add(283, false);
  EXPECT_EQ(*b.lo, 200);
  EXPECT_EQ(*b.hi, 283);
  EXPECT_FALSE(b.Within(0.05));
  b.Add(300, true);  // above the lowest failure: proves nothing
  EXPECT_EQ(*b.lo, 200);
  b.Add(150, false);  // a failure below the peak so far: the pass above it is dropped
  EXPECT_FALSE(b.lo);
  EXPECT_EQ(*b.hi, 150);
  b.Add(145, true);
  EXPECT_TRUE(b.Within(0.05));  // 150 / 145 - 1 = 3.4%
  EXPECT_FALSE(b.Within(0.03));
}

}  // namespace
}  // namespace dlbench::stats
