#include "stats/boundary_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

namespace dlbench::stats {
namespace {

// What fits: every value up to `boundary` (0: nothing).
auto FitsUpTo(std::int64_t boundary, int* calls = nullptr) {
  return [boundary, calls](std::int64_t v) {
    if (calls != nullptr) ++*calls;
    return v <= boundary;
  };
}

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
// bracket stays 5..8 (first failing 8, not 6), and the search ends there. Even a `passed` with it
// counts for nothing.
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

// A cell whose memory is base + per_value x v, and that fits while its real need is within
// `limit`. It reports `reported` x its real peak: 1 is the truth; below 1 a runner that under-reports
// (an allocator's rounding and workspaces the peak does not count), so the line over-predicts.
auto AffineMemory(double base, double per_value, double limit, double reported = 1.0) {
  return [=](std::int64_t v) {
    const double need = base + per_value * static_cast<double>(v);
    ProbeAnswer a;
    a.passed = need <= limit;
    if (a.passed) a.peak_bytes = need * reported;
    return a;
  };
}

std::vector<std::int64_t> Values(const BoundarySearchResult& r) {
  std::vector<std::int64_t> values;
  for (const BoundaryProbe& p : r.probes) values.push_back(p.value);
  return values;
}

// Hand-computed (the null runner's model of docs/memory.md): 1 GiB + 256 MiB a sample under 4 GiB.
// Batch 1 and 2 fit (1.25 and 1.5 GiB); their line reaches 4 GiB at 2 + 2.5 GiB / 256 MiB = 12, so
// 12 is probed (fits, exactly 4 GiB), then 13 (does not): 4 probes where bisection takes 8
// (1, 2, 4, 8, 16, 12, 14, 13).
TEST(BoundarySearchTest, PeaksOnALineJumpToTheBoundaryAndCheckEachSide) {
  constexpr double kGiB = 1 << 30;
  BoundarySearchSettings s;
  s.max_value = 16;
  s.memory_limit_bytes = 4 * kGiB;
  const BoundarySearchResult r = SearchBoundary(s, AffineMemory(kGiB, kGiB / 4, 4 * kGiB));
  EXPECT_EQ(Values(r), (std::vector<std::int64_t>{1, 2, 12, 13}));
  EXPECT_FALSE(r.probes[1].guided);
  EXPECT_TRUE(r.probes[2].guided);
  EXPECT_TRUE(r.probes[3].guided);
  EXPECT_EQ(r.end, BoundarySearchEnd::kConverged);
  EXPECT_EQ(r.largest_passing, 12);
  EXPECT_EQ(r.smallest_failing, 13);
  s.memory_limit_bytes.reset();
  EXPECT_EQ(Values(SearchBoundary(s, AffineMemory(kGiB, kGiB / 4, 4 * kGiB))),
            (std::vector<std::int64_t>{1, 2, 4, 8, 16, 12, 14, 13}));
}

// Peaks reported at 90% of the need: the line says 2 + (4 GiB - 1.35 GiB) / 0.225 GiB = 13 (floor of
// 13.78), which does not fit; then 12 (max(1, 1% of 13) below) fits and the bracket is closed.
TEST(BoundarySearchTest, ALineThatOverPredictsIsWalkedBack) {
  constexpr double kGiB = 1 << 30;
  BoundarySearchSettings s;
  s.max_value = 16;
  s.memory_limit_bytes = 4 * kGiB;
  const BoundarySearchResult r = SearchBoundary(s, AffineMemory(kGiB, kGiB / 4, 4 * kGiB, 0.9));
  EXPECT_EQ(Values(r), (std::vector<std::int64_t>{1, 2, 13, 12}));
  EXPECT_EQ(r.largest_passing, 12);
  EXPECT_EQ(r.smallest_failing, 13);
}

// The guided search's answer is bisection's for every boundary, however wrong its line (peaks
// reported from 30% to 150% of the truth, or none), within the bound plan states for it.
TEST(BoundarySearchTest, GuidedEqualsBisectionForEveryBoundaryAndReportedPeak) {
  BoundarySearchSettings s;
  s.min_value = 1;
  s.max_value = 300;
  s.max_probes = 64;
  s.memory_limit_bytes = 1000.0;
  const std::size_t bound = MaxBoundaryProbes(s);
  BoundarySearchSettings plain = s;
  plain.memory_limit_bytes.reset();
  // Bisection: 1, 2, ..., 256, 300 is 10 doubling probes, the widest bracket (128 .. 256) 7 more.
  // Guided: the same 10, a bracket as wide as 1 .. 300 (9 bisections), and 5 guesses.
  EXPECT_EQ(MaxBoundaryProbes(plain), 17u);
  EXPECT_EQ(bound, 24u);
  for (double per_value : {3.0, 7.5, 40.0, 333.0}) {
    for (double reported : {0.3, 0.9, 1.0, 1.1, 1.5}) {
      const auto model = AffineMemory(100.0, per_value, 1000.0, reported);
      const BoundarySearchResult guided = SearchBoundary(s, model);
      const BoundarySearchResult bisected =
          SearchBoundary(plain, [&](std::int64_t v) { return model(v).passed; });
      EXPECT_EQ(guided.end, bisected.end) << per_value << " " << reported;
      EXPECT_EQ(guided.largest_passing, bisected.largest_passing) << per_value << " " << reported;
      EXPECT_EQ(guided.smallest_failing, bisected.smallest_failing) << per_value << " " << reported;
      EXPECT_LE(guided.probes.size(), bound) << per_value << " " << reported;
    }
  }
  // Every boundary in the range, the line exact: never more probes than bisection.
  for (std::int64_t boundary = 1; boundary < 300; ++boundary) {
    const auto model = AffineMemory(0.0, 1000.0 / static_cast<double>(boundary), 1000.0 + 1e-9);
    const BoundarySearchResult guided = SearchBoundary(s, model);
    const BoundarySearchResult bisected = SearchBoundary(plain, FitsUpTo(boundary));
    ASSERT_EQ(guided.largest_passing, bisected.largest_passing) << boundary;
    ASSERT_EQ(guided.smallest_failing, bisected.smallest_failing) << boundary;
    EXPECT_LE(guided.probes.size(), bisected.probes.size()) << boundary;
  }
}

// Without peaks (a runner that reports none) the guided settings probe as bisection does.
TEST(BoundarySearchTest, WithoutPeaksTheGuidedSearchIsBisection) {
  BoundarySearchSettings s;
  s.max_value = 64;
  s.memory_limit_bytes = 1e9;
  const BoundarySearchResult r = SearchBoundary(s, [](std::int64_t v) {
    return ProbeAnswer{v <= 5, std::nullopt};
  });
  EXPECT_EQ(Values(r), (std::vector<std::int64_t>{1, 2, 4, 8, 6, 5}));
}

// The cap bounds the guided search too, and every guess lies inside the bracket.
TEST(BoundarySearchTest, GuessesStayInTheBracketAndUnderTheCap) {
  BoundarySearchSettings s;
  s.max_value = 1 << 20;
  s.max_probes = 6;
  s.memory_limit_bytes = 1e12;
  const BoundarySearchResult r = SearchBoundary(s, AffineMemory(0, 1.0, 777777.0, 0.5));
  EXPECT_EQ(r.probes.size(), 6u);
  EXPECT_EQ(r.end, BoundarySearchEnd::kProbeCap);
  for (const BoundaryProbe& p : r.probes) {
    EXPECT_GE(p.value, 1);
    EXPECT_LE(p.value, 1 << 20);
  }
}

// A line 5% low over a wide range (1 GiB + 100 MiB a sample under 40 GiB: 399 fits, 400 does not;
// peaks reported at 95%): 8 and 16 fit (1.692 and 2.434 GiB reported), and their line says
// 16 + floor((40 - 2.434) GiB / 0.09277 GiB) = 420, which fails; then 1% of 420 (4) below: 416
// fails. 420 was more than 8 x 16 (kFarGuess), so after two misses one bisection step: 216 fits.
// The line through 16 and 216 is the same line (the peaks are on it): 420, clamped to 2 x 4 below
// the failure at 416: 408 fails; 4 x 4 below: 392 fits; the same line again, clamped at 16 below
// the failure, would be 393, adjacent to the fit (within the resolution: a guess that can only
// confirm 392), so bisection of 392..408 probes 400, 396, 398, 399. 11 probes where bisection takes
// 15 (8, 16, ..., 512, then 8 bisections of 256..512); 12 before the within-resolution rule (393 was
// probed), 11 also without the bisection step after two far misses.
TEST(BoundarySearchTest, AWideLineFivePercentLowIsWalkedBackByPercents) {
  constexpr double kGiB = 1 << 30;
  BoundarySearchSettings s;
  s.min_value = 8;
  s.max_value = 4096;
  s.memory_limit_bytes = 40 * kGiB;
  const auto model = AffineMemory(kGiB, kGiB * 100 / 1024, 40 * kGiB, 0.95);
  const BoundarySearchResult r = SearchBoundary(s, model);
  EXPECT_EQ(r.largest_passing, 399);
  EXPECT_EQ(r.smallest_failing, 400);
  EXPECT_EQ(Values(r), (std::vector<std::int64_t>{8, 16, 420, 416, 216, 408, 392, 400, 396, 398, 399}));
  EXPECT_FALSE(r.probes[4].guided);
  EXPECT_FALSE(r.probes[7].guided);
  BoundarySearchSettings plain = s;
  plain.memory_limit_bytes.reset();
  const BoundarySearchResult bisected =
      SearchBoundary(plain, [&](std::int64_t v) { return model(v).passed; });
  EXPECT_EQ(bisected.largest_passing, 399);
  EXPECT_EQ(bisected.probes.size(), 15u);
}

// BERT-base training in bf16 on an H100's whole device (session 23, docs/evidence/
// h100-s23-memory-caps-2026-12-06.log): the peak is flat at small batches (2.31 GiB at 8, 2.50 at 16)
// and twice as steep at large ones (62.40 GiB at 1,386, 77.62 at 1,728), so the line through 8 and 16
// said 3,207 where the boundary was about 1,760; stepping back by percents spent the five guesses at
// 3,175 .. 2,757 and the search took 14 probes. Modelled as the larger of the two lines under
// 79.6 GiB (1,772 fits, 1,773 does not), hand-computed: the line through 8 and 16 (0.02375 GiB a
// sample) says 16 + floor(77.1 / 0.02375) = 3,262: fails; 1% of it (32) below: 3,230 fails. 3,262
// was more than 8 x 16, so one bisection step: 1,623 fits (72.95 GiB). The line through 16 and 1,623
// (0.04384 GiB a sample) says 1,774: fails; the third miss steps back 4 x 17 = 68: 1,706 fits; the
// same line stepped back again gives 1,707, within 2% of 1,706, so bisection: 1,740 fits, and
// 1,740..1,774 is within 2%. 8 probes where bisection takes 14, both brackets around 1,772 (before
// the within-resolution rule, 9: 1,707 was probed; the H100 run of session 24 probed 1,704, 1,705).
TEST(BoundarySearchTest, ALineCarriedFarFromSmallProbesGetsABisectionStepAfterTwoMisses) {
  constexpr double kGiB = 1 << 30;
  const auto peak = [](std::int64_t b) {
    const double v = static_cast<double>(b);
    return std::max(2.31 + 0.02375 * (v - 8), 62.40 + 0.0445 * (v - 1386)) * kGiB;
  };
  const auto model = [&](std::int64_t b) {
    ProbeAnswer a;
    a.passed = peak(b) <= 79.6 * kGiB;
    if (a.passed) a.peak_bytes = peak(b);
    return a;
  };
  BoundarySearchSettings s;
  s.min_value = 8;
  s.max_value = 4096;
  s.max_probes = 14;
  s.resolution = 0.02;
  s.memory_limit_bytes = 79.6 * kGiB;
  const BoundarySearchResult r = SearchBoundary(s, model);
  // After 1,706 fits, the line stepped back from 1,774 would guess 1,707, within the resolution of
  // 1,706: a bisection step (1,740) instead, which resolves the bracket (an H100 ran 1,704, 1,705).
  EXPECT_EQ(Values(r), (std::vector<std::int64_t>{8, 16, 3262, 3230, 1623, 1774, 1706, 1740}));
  EXPECT_FALSE(r.probes[7].guided);
  EXPECT_FALSE(r.probes[4].guided);
  EXPECT_EQ(r.end, BoundarySearchEnd::kResolved);
  EXPECT_EQ(r.largest_passing, 1740);
  EXPECT_EQ(r.smallest_failing, 1774);
  BoundarySearchSettings plain = s;
  plain.memory_limit_bytes.reset();
  const BoundarySearchResult bisected =
      SearchBoundary(plain, [&](std::int64_t v) { return model(v).passed; });
  EXPECT_EQ(Values(bisected), (std::vector<std::int64_t>{8, 16, 32, 64, 128, 256, 512, 1024, 2048, 1536, 1792,
                                                         1664, 1728, 1760}));
  EXPECT_GT(bisected.probes.size(), r.probes.size());
}

// Peaks flat at small values and steep at large ones (a kink at 10% to 90% of the range, the steep
// part 1.5 to 8 times the flat one) and peaks rounded to a coarse grain: the search that takes a
// far anchor and bisects after two far misses still ends on bisection's exact answer (resolution
// 0) for every boundary, within the bound plan states.
TEST(BoundarySearchTest, KinkedAndRoundedPeaksStillGiveBisectionsAnswerWithinTheBound) {
  BoundarySearchSettings s;
  s.min_value = 8;
  s.max_value = 4096;
  s.max_probes = 64;
  s.memory_limit_bytes = 1e6;
  const std::size_t bound = MaxBoundaryProbes(s);
  BoundarySearchSettings plain = s;
  plain.memory_limit_bytes.reset();
  for (double kink : {0.1, 0.5, 0.9}) {
    for (double steep : {1.5, 3.0, 8.0}) {
      for (double grain : {1.0, 5e4}) {
        for (std::int64_t boundary = 9; boundary < 4096; boundary += 97) {
          // The peak reaches 1e6 at `boundary`: a flat line below kink x boundary, `steep` times
          // steeper above it, rounded up to `grain` (at most the limit while it fits).
          const double knee = kink * static_cast<double>(boundary);
          const double flat = 1e6 / (knee + steep * (static_cast<double>(boundary) - knee));
          const auto model = [&](std::int64_t v) {
            const double x = static_cast<double>(v);
            const double need = x <= knee ? flat * x : flat * knee + steep * flat * (x - knee);
            ProbeAnswer a;
            a.passed = v <= boundary;
            if (a.passed) a.peak_bytes = std::min(1e6, std::ceil(need / grain) * grain);
            return a;
          };
          const BoundarySearchResult guided = SearchBoundary(s, model);
          const BoundarySearchResult bisected = SearchBoundary(plain, FitsUpTo(boundary));
          ASSERT_EQ(guided.largest_passing, bisected.largest_passing)
              << kink << " " << steep << " " << boundary;
          ASSERT_EQ(guided.smallest_failing, bisected.smallest_failing)
              << kink << " " << steep << " " << boundary;
          EXPECT_LE(guided.probes.size(), bound) << kink << " " << steep << " " << boundary;
        }
      }
    }
  }
}

// Seeds: the fits of the same cell's search under a 3 GiB cap (batch 2 and 8, 1.5 and 3 GiB; the
// model of PeaksOnALineJumpToTheBoundaryAndCheckEachSide). Their line meets 4 GiB at
// 8 + floor(1 GiB / 0.25 GiB) = 12, which fits; the line through 12 and the seed 2 says 12 again, so
// 13 (lo + 1) is next and fails: 2 probes, where the search without seeds takes 4 (1, 2, 12, 13).
TEST(BoundarySearchTest, SeedsFromAnotherCapStartAtTheirLine) {
  constexpr double kGiB = 1 << 30;
  BoundarySearchSettings s;
  s.max_value = 16;
  s.memory_limit_bytes = 4 * kGiB;
  s.seeded = true;
  s.seeds = {{2, 1.5 * kGiB}, {8, 3 * kGiB}};
  const BoundarySearchResult r = SearchBoundary(s, AffineMemory(kGiB, kGiB / 4, 4 * kGiB));
  EXPECT_EQ(Values(r), (std::vector<std::int64_t>{12, 13}));
  EXPECT_TRUE(r.probes[0].guided);
  EXPECT_TRUE(r.probes[0].from_seeds);
  EXPECT_TRUE(r.probes[1].guided);
  EXPECT_FALSE(r.probes[1].from_seeds);
  EXPECT_EQ(r.end, BoundarySearchEnd::kConverged);
  EXPECT_EQ(r.largest_passing, 12);
  EXPECT_EQ(r.smallest_failing, 13);
  // Seeds are used only with a limit to aim at; `seeded` without seeds searches as before.
  s.seeds.clear();
  EXPECT_EQ(Values(SearchBoundary(s, AffineMemory(kGiB, kGiB / 4, 4 * kGiB))),
            (std::vector<std::int64_t>{1, 2, 12, 13}));
}

// Seeds whose peaks under-report by 10% (1.35 and 2.7 GiB at 2 and 8) say 8 + floor(1.3 / 0.225) =
// 13, which does not fit (4.25 GiB). The largest seed below it, 8, comes next (it fits), then the
// line through 8 and 2 (13 again) stepped back max(1, 1% of 13) = 1 from the failure: 12 fits, and
// 12 and 13 close the bracket in 3 probes.
TEST(BoundarySearchTest, ASeedGuessThatMissesFallsBackToTheLargestSeedBelowIt) {
  constexpr double kGiB = 1 << 30;
  BoundarySearchSettings s;
  s.max_value = 16;
  s.memory_limit_bytes = 4 * kGiB;
  s.seeded = true;
  s.seeds = {{2, 1.35 * kGiB}, {8, 2.7 * kGiB}};
  const BoundarySearchResult r = SearchBoundary(s, AffineMemory(kGiB, kGiB / 4, 4 * kGiB, 0.9));
  EXPECT_EQ(Values(r), (std::vector<std::int64_t>{13, 8, 12}));
  EXPECT_TRUE(r.probes[1].from_seeds);
  EXPECT_FALSE(r.probes[1].guided);
  EXPECT_FALSE(r.probes[2].from_seeds);
  EXPECT_EQ(r.largest_passing, 12);
  EXPECT_EQ(r.smallest_failing, 13);
}

// Seeds that say the maximum: one probe there, and it fits (max_fits), as an inference search that
// fits the bound under a smaller cap fits it under a larger one. Seeds far too high, where nothing
// fits: the guess, the seed below it and min_value each fail (none_fits), one probe over the bound
// without seeds at most.
TEST(BoundarySearchTest, SeedsAtTheMaximumOrWhereNothingFits) {
  BoundarySearchSettings s;
  s.min_value = 8;
  s.max_value = 4096;
  s.memory_limit_bytes = 1000.0;
  s.seeded = true;
  s.seeds = {{8, 10.0}, {16, 11.0}, {4096, 500.0}};
  BoundarySearchResult r = SearchBoundary(s, AffineMemory(0.0, 0.1, 1000.0));
  EXPECT_EQ(Values(r), (std::vector<std::int64_t>{4096}));
  EXPECT_EQ(r.end, BoundarySearchEnd::kMaxFits);
  r = SearchBoundary(s, [](std::int64_t) { return ProbeAnswer{false, std::nullopt}; });
  EXPECT_EQ(Values(r), (std::vector<std::int64_t>{4096, 16, 8}));
  EXPECT_EQ(r.end, BoundarySearchEnd::kNoneFits);
  EXPECT_FALSE(r.largest_passing);
  EXPECT_EQ(r.smallest_failing, 8);
}

// Whatever the seeds say (a line too steep or too flat, under- or over-reported, from a model with
// another base), the seeded search's answer is bisection's for every boundary, within the bound plan
// states for a seeded search (the guided bound plus one).
TEST(BoundarySearchTest, SeededEqualsBisectionForEveryBoundaryAndAnySeeds) {
  BoundarySearchSettings s;
  s.min_value = 1;
  s.max_value = 300;
  s.max_probes = 64;
  s.memory_limit_bytes = 1000.0;
  BoundarySearchSettings guided = s;
  s.seeded = true;
  const std::size_t bound = MaxBoundaryProbes(s);
  EXPECT_EQ(bound, MaxBoundaryProbes(guided) + 1);
  BoundarySearchSettings plain = s;
  plain.memory_limit_bytes.reset();
  plain.seeded = false;
  std::size_t seeded_probes = 0;
  std::size_t guided_probes = 0;
  for (std::int64_t boundary = 1; boundary < 300; boundary += 7) {
    const double per_value = 900.0 / static_cast<double>(boundary);
    const auto model = AffineMemory(100.0, per_value, 1000.0 + 1e-9);
    for (double seed_slope : {0.5, 0.9, 1.0, 1.1, 3.0}) {
      for (double seed_base : {0.0, 100.0, 400.0}) {
        s.seeds.clear();
        for (std::int64_t v : {std::int64_t{2}, boundary / 3 + 1, boundary / 2 + 1}) {
          s.seeds.push_back({v, seed_base + seed_slope * per_value * static_cast<double>(v)});
        }
        const BoundarySearchResult seeded = SearchBoundary(s, model);
        const BoundarySearchResult bisected =
            SearchBoundary(plain, [&](std::int64_t v) { return model(v).passed; });
        ASSERT_EQ(seeded.largest_passing, bisected.largest_passing)
            << boundary << " " << seed_slope << " " << seed_base;
        ASSERT_EQ(seeded.smallest_failing, bisected.smallest_failing)
            << boundary << " " << seed_slope << " " << seed_base;
        EXPECT_LE(seeded.probes.size(), bound) << boundary << " " << seed_slope << " " << seed_base;
        if (seed_slope == 1.0 && seed_base == 100.0) {
          seeded_probes += seeded.probes.size();
          guided_probes += SearchBoundary(guided, model).probes.size();
        }
      }
    }
  }
  // Exact seeds: fewer probes in all than the guided search from min_value.
  EXPECT_LT(seeded_probes, guided_probes);
}

// Peaks that reach the cap before the batch does, as the caching allocator's reserved peak does
// under a fraction (it holds cache above what is allocated, and near the cap frees it and retries
// before it fails). On an H100 under 40 GiB (session 26), ResNet-50 training fit at 850, 907, 915,
// 930 and 938 as guesses, each line saying a little above the last fit, then doubling and
// bisection: 14 probes. The model: 1 GiB + 40 MiB a sample, fitting to 998; a fit reports 5% over
// its need, at most 99.9% of the cap. With boundary_resolution 0.02 the guesses step at least 2%
// above the largest fit, so that a failure there ends the search: 6 probes (8, 16, 949, 967, 986,
// 1005 `oom`), 986 within 2% below the boundary; without the step, 14 (949, 950, ..., 953 creep up,
// then doubling to 1906 and bisection: the probe cap ends it).
TEST(BoundarySearchTest, PeaksThatReachTheCapFirstDoNotCreepUpByTheGuesses) {
  constexpr double kMiB = 1 << 20;
  constexpr double kCap = 40.0 * 1024 * kMiB;
  const auto need = [](std::int64_t v) { return 1024 * kMiB + 40 * kMiB * static_cast<double>(v); };
  const auto model = [&](std::int64_t v) {
    ProbeAnswer a;
    a.passed = need(v) <= kCap;
    if (a.passed) a.peak_bytes = std::min(0.999 * kCap, 1.05 * need(v));
    return a;
  };
  BoundarySearchSettings s;
  s.min_value = 8;
  s.max_value = 4096;
  s.max_probes = 14;
  s.memory_limit_bytes = kCap;
  s.resolution = 0.02;
  const BoundarySearchResult r = SearchBoundary(s, model);
  EXPECT_EQ(Values(r), (std::vector<std::int64_t>{8, 16, 949, 967, 986, 1005}));
  EXPECT_EQ(r.end, BoundarySearchEnd::kResolved);
  EXPECT_EQ(r.largest_passing, 986);
  EXPECT_EQ(r.smallest_failing, 1005);
}

// A probe that says its process could hold less than the cap (the device less its CUDA context)
// lowers what the guesses aim at: the model of PeaksOnALineJumpToTheBoundaryAndCheckEachSide under
// a nominal 4 GiB of which 3.5 GiB can be had: the line meets 3.5 GiB at 10 (fits), then 11. Aimed
// at 4 GiB, 12 and 11 fail and the walk back lands at 9 before 10 (6 probes).
TEST(BoundarySearchTest, AProbesLimitBelowTheCapIsWhatTheGuessesAimAt) {
  constexpr double kGiB = 1 << 30;
  BoundarySearchSettings s;
  s.max_value = 16;
  s.memory_limit_bytes = 4 * kGiB;
  const auto affine = AffineMemory(kGiB, kGiB / 4, 3.5 * kGiB);
  const auto said = [&](std::int64_t v) {
    ProbeAnswer a = affine(v);
    a.limit_bytes = 3.5 * kGiB;
    return a;
  };
  EXPECT_EQ(Values(SearchBoundary(s, said)), (std::vector<std::int64_t>{1, 2, 10, 11}));
  EXPECT_EQ(Values(SearchBoundary(s, affine)), (std::vector<std::int64_t>{1, 2, 12, 11, 9, 10}));
}

TEST(SeedGuessTest, TheLineThroughTheSeedsClampedToTheRange) {
  // 16 + floor((1000 - 160) / 10) = 100; the second point is 8 (at most half of 16).
  EXPECT_EQ(SeedGuess({{8, 80.0}, {12, 500.0}, {16, 160.0}}, 1, 4096, 1000.0), 100);
  EXPECT_EQ(SeedGuess({{8, 80.0}, {16, 160.0}}, 1, 50, 1000.0), 50);
  EXPECT_EQ(SeedGuess({{8, 80.0}, {16, 160.0}}, 120, 4096, 1000.0), 120);
  // One seed, one value twice, a flat or falling line: no guess.
  EXPECT_FALSE(SeedGuess({{8, 80.0}}, 1, 4096, 1000.0));
  EXPECT_FALSE(SeedGuess({{8, 80.0}, {8, 90.0}}, 1, 4096, 1000.0));
  EXPECT_FALSE(SeedGuess({{8, 80.0}, {16, 80.0}}, 1, 4096, 1000.0));
  EXPECT_FALSE(SeedGuess({{8, 80.0}, {16, 70.0}}, 1, 4096, 1000.0));
}

TEST(PredictBoundaryTest, ClampsToTheBracketAndNeedsARisingLine) {
  const std::vector<BoundaryProbe> probes = {{10, true, false}, {20, true, false}, {40, false, false}};
  const std::vector<std::optional<double>> peaks = {100.0, 200.0, std::nullopt};
  // 20 + (1000 - 200) / 10 = 100, clamped to the bracket's 39.
  EXPECT_EQ(PredictBoundary(probes, peaks, 20, 39, 1000.0), 39);
  // 20 + (250 - 200) / 10 = 25.
  EXPECT_EQ(PredictBoundary(probes, peaks, 20, 39, 250.0), 25);
  // Below lo: lo + 1.
  EXPECT_EQ(PredictBoundary(probes, peaks, 20, 39, 50.0), 21);
  // A closed bracket, one peak, a flat line: nothing to predict.
  EXPECT_FALSE(PredictBoundary(probes, peaks, 20, 20, 1000.0));
  EXPECT_FALSE(PredictBoundary(probes, {100.0, std::nullopt, std::nullopt}, 20, 39, 1000.0));
  EXPECT_FALSE(PredictBoundary(probes, {100.0, 100.0, std::nullopt}, 20, 39, 1000.0));
}

// The line's second point is the largest fit at most half the largest fit: 10 (peak 100) and 104
// (1000), not 100 (also 1000, a flat line): 104 + floor((2000 - 1000) / (900 / 94)) = 104 + 104 = 208.
// As on an H100 (session 23): SSD-MobileNet training in fp32 fit at 465 and 475 with peaks 77.84 and
// 77.95 GiB, 0.011 GiB a sample between them where 16 to 475 says 0.163; their line said 627, the
// boundary was 475, and the search walked back for 8 more probes.
// Without a fit at most half the largest, the next largest: 100 and 104 with peaks 1000 and 1040
// say 104 + floor(960 / 10) = 200.
TEST(PredictBoundaryTest, TheSecondPointIsAFitAtMostHalfTheLargest) {
  const std::vector<BoundaryProbe> probes = {{10, true, false}, {100, true, false}, {104, true, false}};
  EXPECT_EQ(PredictBoundary(probes, {100.0, 1000.0, 1000.0}, 104, 1000, 2000.0), 208);
  EXPECT_EQ(PredictBoundary(probes, {std::nullopt, 1000.0, 1040.0}, 104, 1000, 2000.0), 200);
  // A fit above lo (above a failure) is no point of the line: 10 and 100 say 100 + floor(1000 / 10).
  EXPECT_EQ(PredictBoundary(probes, {100.0, 1000.0, 1000.0}, 100, 1000, 2000.0), 200);
  // Seeds are points too: with only 104 of this search's own, a seed at 50 (peak 500) gives the
  // second point: 104 + floor(1000 / 10) = 204. A seed of the same value as a fit never replaces it.
  EXPECT_EQ(PredictBoundary(probes, {std::nullopt, std::nullopt, 1040.0}, 104, 1000, 2040.0, {{50, 500.0}}),
            204);
  EXPECT_EQ(PredictBoundary(probes, {std::nullopt, std::nullopt, 1040.0}, 104, 1000, 2040.0,
                            {{50, 500.0}, {104, 9999.0}}),
            204);
}

}  // namespace
}  // namespace dlbench::stats
