// The boundary search guided by peak memory: guesses where the line through the fits' peaks meets
// the cap, walked back on a miss, never changing bisection's answer (docs/memory.md "Fewer probes:
// boundary_guide: peak_memory").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "stats/boundary_search.h"
#include "stats/boundary_search_test_util.h"

namespace dlbench::stats {
namespace {

using namespace boundary_test;  // the probe models the boundary search's tests share

// Hand-computed (the null runner's model of docs/memory.md): 1 GiB + 256 MiB a sample under 4 GiB.
// Batch 1 and 2 fit (1.25 and 1.5 GiB); their line reaches 4 GiB at 2 + 2.5 GiB / 256 MiB = 12, so
// 12 is probed (fits, exactly 4 GiB), then 13 (does not): 4 probes where bisection takes 8
// (1, 2, 4, 8, 16, 12, 14, 13).
TEST(BoundarySearchTest, PeaksOnALineJumpToTheBoundaryAndCheckEachSide) {
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
// (0.04384 GiB a sample) says 1,774: fails; the third miss steps back 4 x 17 = 68: 1,706 fits at
// 76.64 GiB, 96% of the limit (saturated), so the line is not followed again (it would say 1,707,
// within 2% of 1,706): the gallop's first step, the tolerance (34), is half the bracket: 1,740 fits,
// and 1,740..1,774 is within 2%. 8 probes where bisection takes 14, both brackets around 1,772
// (before the within-resolution rule, 9: 1,707 was probed; the H100 run of session 24 probed 1,704,
// 1,705).
TEST(BoundarySearchTest, ALineCarriedFarFromSmallProbesGetsABisectionStepAfterTwoMisses) {
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
  const BoundarySearchSettings s = TableSettings(79.6 * kGiB);
  const BoundarySearchResult r = SearchBoundary(s, model);
  // After 1,706 fits saturated, the gallop's step (1,740, half the bracket) resolves it (an H100 ran
  // 1,704, 1,705).
  EXPECT_EQ(Values(r), (std::vector<std::int64_t>{8, 16, 3262, 3230, 1623, 1774, 1706, 1740}));
  EXPECT_TRUE(r.probes[7].guided);
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

// Peaks that reach the cap before the batch does, as the caching allocator's reserved peak does
// under a fraction (it holds cache above what is allocated, and near the cap frees it and retries
// before it fails). On an H100 under 40 GiB (session 26), ResNet-50 training fit at 850, 907, 915,
// 930 and 938 as guesses, each line saying a little above the last fit, then doubling and
// bisection: 14 probes. The model: 1 GiB + 40 MiB a sample, fitting to 998; a fit reports 5% over
// its need, at most 99.9% of the cap. The fit at 949 is saturated (kSaturatedShare), so the guesses
// gallop up from it by the tolerance (2%: 18), then twice the tolerance, and the failure is
// bisected: 6 probes (8, 16, 949, 967, 1005 `oom`, 986), 986 within 2% below the boundary; with
// each line's guess, 14 (949, 950, ..., 953 creep up, then doubling to 1906 and bisection: the
// probe cap ends it).
TEST(BoundarySearchTest, PeaksThatReachTheCapFirstDoNotCreepUpByTheGuesses) {
  constexpr double kMiB = 1 << 20;
  constexpr double kCap = 40.0 * 1024 * kMiB;
  const auto model = ReservedNearTheLimit(1024 * kMiB, 40 * kMiB, kCap, 1.05, 0.999);
  const BoundarySearchSettings s = TableSettings(kCap);
  const BoundarySearchResult r = SearchBoundary(s, model);
  EXPECT_EQ(Values(r), (std::vector<std::int64_t>{8, 16, 949, 967, 1005, 986}));
  EXPECT_EQ(r.end, BoundarySearchEnd::kResolved);
  EXPECT_EQ(r.largest_passing, 986);
  EXPECT_EQ(r.smallest_failing, 1005);
}

// ResNet-50 fp32 training under 16 GiB on an H100 (session 27, docs/evidence/
// h100-s27-memory-caps-2026-12-07.log): 8 and 16 fit (1.11 and 1.84 GiB reserved), their line said
// 170, which fit at 15.83 GiB (99% of the cap), and each later line said a little above the last fit:
// 173, 177, 180, 185 fit (97-99%), then doubling to 370 and bisection down to 190: 14 probes. The
// model: 0.38 GiB + 0.0822 GiB a sample (190 fits, 191 does not), reported 11% over its need, at most
// 99% of the cap. Hand-computed: 8 and 16 report 1.152 and 1.882 GiB, their line says
// 16 + floor(14.118 / 0.09125) = 170, which fits saturated (15.84 GiB); the guesses gallop by the
// tolerance (3), 6, 12: 173 and 179 fit, 191 does not; bisection: 185 fits, 188 fits, and
// 188..191 is within 2%: 8 probes. Following each line instead, as the H100 did: 14 (170, 173, 176,
// 179, 182, then doubling to 364 and bisection).
TEST(BoundarySearchTest, SaturatedPeaksGallopUpFromTheFitThenBisect) {
  constexpr double kCap = 16 * kGiB;
  const auto model = ReservedNearTheLimit(0.38 * kGiB, 0.0822 * kGiB, kCap, 1.11, 0.99);
  const BoundarySearchSettings s = TableSettings(kCap);
  const BoundarySearchResult r = SearchBoundary(s, model);
  EXPECT_EQ(Values(r), (std::vector<std::int64_t>{8, 16, 170, 173, 179, 191, 185, 188}));
  EXPECT_EQ(r.end, BoundarySearchEnd::kResolved);
  EXPECT_EQ(r.largest_passing, 188);
  EXPECT_EQ(r.smallest_failing, 191);
}

// BERT-base bf16 training under 16 GiB on an H100 (session 28, docs/evidence/
// h100-s28-memory-caps-2026-12-07.log): 8 and 16 fit at 2.12 and 2.21 GiB (weights and optimizer
// state are most of a small batch's memory), so their line said 574; it and the step back to 569
// failed, a bisection step fit at 292, the next line fit at 321 saturated (15.5 GiB), and with 569
// still the failure above, bisection went 445, 383, 352, 336, 328 (all `oom`), then 324: 12 probes
// for a boundary at 324-327. The model: 2.03 GiB + 0.011 GiB a sample up to 16, then 1.5 GiB +
// 0.044 GiB a sample (fits up to 327), reported as it is, at most 99% of the cap. A saturated fit
// says the boundary is close above it, so its gallop goes on under a failure far above, each step at
// most half the bracket: 8, 16, 574, 569, 292, 321 (saturated), then 327 (the tolerance, 6): it fits,
// and 339 (twice it) does not: [327, 339] is bisected once more (333 `oom`) and 327..333 is within 2%:
// 9 probes.
TEST(BoundarySearchTest, ASaturatedFitUnderAFarFailureGallopsUpFromTheFit) {
  constexpr double kCap = 16 * kGiB;
  const auto model = [](std::int64_t v) {
    const double x = static_cast<double>(v);
    const double need = v <= 16 ? 2.1172 + 0.024168 * x : 2.5041 + 0.04421 * (x - 16);
    ProbeAnswer a;
    a.passed = v <= 327;
    if (a.passed) a.peak_bytes = std::min(0.993 * kCap, need * kGiB);
    return a;
  };
  const BoundarySearchSettings s = TableSettings(kCap);
  const BoundarySearchResult r = SearchBoundary(s, model);
  EXPECT_EQ(Values(r), (std::vector<std::int64_t>{8, 16, 574, 569, 292, 321, 327, 339, 333}));
  EXPECT_EQ(r.end, BoundarySearchEnd::kResolved);
  EXPECT_EQ(r.largest_passing, 327);
  EXPECT_EQ(r.smallest_failing, 333);
}

// A peak that is no number of bytes (infinite, NaN, negative) is no peak: the line skips it and the
// answer is bisection's. Fits up to 50 (2 bytes a sample under 100); batch 2 reports `bad`.
TEST(BoundarySearchTest, APeakThatIsNoNumberIsNoPeak) {
  BoundarySearchSettings s;
  s.max_value = 64;
  s.memory_limit_bytes = 100;
  for (const double bad :
       {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(), -5.0}) {
    const BoundarySearchResult r = SearchBoundary(s, [&](std::int64_t v) {
      ProbeAnswer a;
      a.passed = v <= 50;
      if (a.passed) a.peak_bytes = v == 2 ? bad : 2.0 * static_cast<double>(v);
      return a;
    });
    EXPECT_EQ(r.largest_passing, 50) << bad;
    EXPECT_EQ(r.smallest_failing, 51) << bad;
    EXPECT_EQ(r.end, BoundarySearchEnd::kConverged) << bad;
    EXPECT_LE(r.probes.size(), MaxBoundaryProbes(s)) << bad;
  }
}

// A probe that says its process could hold less than the cap (the device less its CUDA context)
// lowers what the guesses aim at: the model of PeaksOnALineJumpToTheBoundaryAndCheckEachSide under
// a nominal 4 GiB of which 3.5 GiB can be had: the line meets 3.5 GiB at 10 (fits), then 11. Aimed
// at 4 GiB, 12 and 11 fail and the walk back lands at 9 before 10 (6 probes).
TEST(BoundarySearchTest, AProbesLimitBelowTheCapIsWhatTheGuessesAimAt) {
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
