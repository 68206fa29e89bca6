#include "stats/boundary_search.h"

#include <gtest/gtest.h>

#include <cstdint>

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
