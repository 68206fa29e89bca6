// The boundary search without a guide: doubling and bisection, its answer against brute force,
// the resolution, inconclusive probes, stops and the probe bound (docs/memory.md "Boundary search").
#include "stats/boundary_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "stats/boundary_search_test_util.h"

namespace dlbench::stats {
namespace {

using namespace boundary_test;  // the probe models the boundary search's tests share

// The search's answer is the brute-force one for every boundary in a range, within the probe
// bound plan states, and its last pass and first failure are adjacent.
TEST(BoundarySearchTest, EqualsBruteForceForEveryBoundary) {
  BoundarySearchSettings s;
  s.min_value = 1;
  s.max_value = 300;
  s.max_probes = 64;
  const std::size_t bound = MaxBoundaryProbes(s);
  for (std::int64_t boundary = 1; boundary < 300; ++boundary) {
    std::int64_t brute = 0;
    for (std::int64_t v = 1; v <= 300 && FitsUpTo(boundary)(v); ++v) brute = v;
    const BoundarySearchResult r = SearchBoundary(s, FitsUpTo(boundary));
    ASSERT_EQ(r.end, BoundarySearchEnd::kConverged) << boundary;
    EXPECT_EQ(r.largest_passing, brute) << boundary;
    EXPECT_EQ(r.smallest_failing, brute + 1) << boundary;
    EXPECT_LE(r.probes.size(), bound) << boundary;
  }
}

// boundary_resolution: for every boundary the answer is a value that fits, at most the resolution
// below the boundary (hi - lo <= max(1, floor(lo x r))), never more probes than the exact search,
// and fewer over the range; the end says which rule closed it.
TEST(BoundarySearchTest, AResolutionStopsBisectionWithinItsFractionInFewerProbes) {
  BoundarySearchSettings exact;
  exact.min_value = 8;
  exact.max_value = 4096;
  exact.max_probes = 64;
  BoundarySearchSettings coarse = exact;
  coarse.resolution = 0.02;
  std::size_t exact_probes = 0, coarse_probes = 0;
  for (std::int64_t boundary = 8; boundary < 4096; boundary += 7) {
    const BoundarySearchResult e = SearchBoundary(exact, FitsUpTo(boundary));
    const BoundarySearchResult c = SearchBoundary(coarse, FitsUpTo(boundary));
    ASSERT_TRUE(c.largest_passing && c.smallest_failing) << boundary;
    const std::int64_t lo = *c.largest_passing, hi = *c.smallest_failing;
    EXPECT_LE(lo, boundary) << boundary;
    EXPECT_GT(hi, boundary) << boundary;
    EXPECT_LE(hi - lo, std::max<std::int64_t>(1, static_cast<std::int64_t>(lo * 0.02))) << boundary;
    EXPECT_EQ(c.end, hi - lo == 1 ? BoundarySearchEnd::kConverged : BoundarySearchEnd::kResolved) << boundary;
    EXPECT_LE(c.probes.size(), e.probes.size()) << boundary;
    exact_probes += e.probes.size();
    coarse_probes += c.probes.size();
  }
  EXPECT_LT(coarse_probes * 10, exact_probes * 8) << coarse_probes << " vs " << exact_probes;
  // Hand-computed: boundary 1000 from 8 doubles to 1024 (fails), then bisects 768, 896, 960, 992
  // (all fit): 1024 - 992 = 32 > floor(992 x 0.02) = 19, so 1008 (fails): 16 <= 19, resolved.
  const BoundarySearchResult r = SearchBoundary(coarse, FitsUpTo(1000));
  std::vector<std::int64_t> values;
  for (const BoundaryProbe& p : r.probes) values.push_back(p.value);
  EXPECT_EQ(values,
            (std::vector<std::int64_t>{8, 16, 32, 64, 128, 256, 512, 1024, 768, 896, 960, 992, 1008}));
  EXPECT_EQ(r.end, BoundarySearchEnd::kResolved);
  EXPECT_EQ(r.largest_passing, 992);
  EXPECT_EQ(r.smallest_failing, 1008);
  EXPECT_STREQ(BoundarySearchEndName(r.end), "resolved");
}

// Hand-computed: boundary 5 probes 1, 2, 4, 8 (fails), then 6 (fails), 5 (passes).
TEST(BoundarySearchTest, DoublesThenBisects) {
  const BoundarySearchResult r = SearchBoundary({}, FitsUpTo(5));
  std::vector<std::int64_t> values;
  for (const BoundaryProbe& p : r.probes) values.push_back(p.value);
  EXPECT_EQ(values, (std::vector<std::int64_t>{1, 2, 4, 8, 6, 5}));
  EXPECT_EQ(r.largest_passing, 5);
  EXPECT_EQ(r.smallest_failing, 6);
}

TEST(BoundarySearchTest, NothingFitsEndsAfterOneProbe) {
  int calls = 0;
  const BoundarySearchResult r = SearchBoundary({}, FitsUpTo(0, &calls));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(r.end, BoundarySearchEnd::kNoneFits);
  EXPECT_FALSE(r.largest_passing);
  EXPECT_EQ(r.smallest_failing, 1);
}

// A first probe that ends neither fitting nor out of memory (an error) says nothing: the search
// ends probe_failed, not none_fits, with no bracket at all.
TEST(BoundarySearchTest, AnInconclusiveFirstProbeEndsProbeFailedNotNoneFits) {
  int calls = 0;
  const BoundarySearchResult r =
      SearchBoundary({}, std::function<ProbeAnswer(std::int64_t)>([&](std::int64_t) {
                       ++calls;
                       ProbeAnswer a;
                       a.inconclusive = true;
                       return a;
                     }));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(r.end, BoundarySearchEnd::kProbeFailed);
  EXPECT_STREQ(BoundarySearchEndName(r.end), "probe_failed");
  EXPECT_FALSE(r.largest_passing);
  EXPECT_FALSE(r.smallest_failing);
  ASSERT_EQ(r.probes.size(), 1u);
  EXPECT_TRUE(r.probes[0].inconclusive);
  EXPECT_FALSE(r.probes[0].passed);
}

// An inconclusive probe inside the bracket is not its failure: fits up to 5, 6 and 7 do not, and
// the probe at 6 ends otherwise (the ResNet-50 search whose probe crashed inside its bracket). The
// bracket stays 4..8 (the probes so far: 1, 2, 4 fit, 8 failed; first failing 8, not 6), and the
// search ends there. Even a `passed` with it counts for nothing.
TEST(BoundarySearchTest, AnInconclusiveProbeDoesNotNarrowTheBracket) {
  const BoundarySearchResult r =
      SearchBoundary({}, std::function<ProbeAnswer(std::int64_t)>([](std::int64_t v) {
                       ProbeAnswer a;
                       a.passed = v <= 5 || v == 6;
                       a.inconclusive = v == 6;
                       return a;
                     }));
  std::vector<std::int64_t> values;
  for (const BoundaryProbe& p : r.probes) values.push_back(p.value);
  EXPECT_EQ(values, (std::vector<std::int64_t>{1, 2, 4, 8, 6}));
  EXPECT_EQ(r.end, BoundarySearchEnd::kProbeFailed);
  EXPECT_EQ(r.largest_passing, 4);
  EXPECT_EQ(r.smallest_failing, 8);
  EXPECT_TRUE(r.probes.back().inconclusive);
  EXPECT_FALSE(r.probes.back().passed);
}

// An inconclusive probe that the caller also stops on (Ctrl-C) ends `stopped`.
TEST(BoundarySearchTest, AStopOnAnInconclusiveProbeEndsStopped) {
  std::int64_t last = 0;
  const BoundarySearchResult r =
      SearchBoundary({}, std::function<ProbeAnswer(std::int64_t)>([&](std::int64_t v) {
                       last = v;
                       ProbeAnswer a;
                       a.passed = true;
                       a.inconclusive = v == 4;
                       return a;
                     }),
                     [&] { return last == 4; });
  EXPECT_EQ(r.end, BoundarySearchEnd::kStopped);
  EXPECT_EQ(r.probes.size(), 3u);
  EXPECT_EQ(r.largest_passing, 2);
  EXPECT_FALSE(r.smallest_failing);
}

// Every probe passes: doubling stops at max_value (1, 2, 4, 8, 10), well within the cap.
TEST(BoundarySearchTest, EverythingFitsStopsAtTheMaximum) {
  BoundarySearchSettings s;
  s.max_value = 10;
  const BoundarySearchResult r = SearchBoundary(s, FitsUpTo(1 << 30));
  EXPECT_EQ(r.end, BoundarySearchEnd::kMaxFits);
  EXPECT_EQ(r.largest_passing, 10);
  EXPECT_FALSE(r.smallest_failing);
  EXPECT_EQ(r.probes.size(), 5u);
}

// The cap bounds the search whatever the probes say: every-pass and a boundary deep in a wide range.
TEST(BoundarySearchTest, ProbeCapBoundsEveryCase) {
  BoundarySearchSettings s;
  s.max_value = 1 << 20;
  s.max_probes = 7;
  for (std::int64_t boundary : {std::int64_t{0}, std::int64_t{1} << 30, std::int64_t{777777}}) {
    int calls = 0;
    const BoundarySearchResult r = SearchBoundary(s, FitsUpTo(boundary, &calls));
    EXPECT_LE(calls, 7) << boundary;
    EXPECT_EQ(r.probes.size(), static_cast<std::size_t>(calls));
    if (boundary != 0) {
      EXPECT_EQ(r.end, BoundarySearchEnd::kProbeCap) << boundary;
    }
  }
  EXPECT_EQ(MaxBoundaryProbes(s), 7u);
  s.max_probes = 100;
  // 1..2^20 by doubling is 21 probes; the widest bracket (2^19) takes 19 bisections.
  EXPECT_EQ(MaxBoundaryProbes(s), 40u);
}

TEST(BoundarySearchTest, StopEndsTheSearch) {
  int calls = 0;
  const BoundarySearchResult r = SearchBoundary({}, FitsUpTo(1000, &calls), [&] { return calls >= 2; });
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(r.end, BoundarySearchEnd::kStopped);
  EXPECT_EQ(r.largest_passing, 2);
}

}  // namespace
}  // namespace dlbench::stats
