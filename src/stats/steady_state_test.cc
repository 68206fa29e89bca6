#include "stats/steady_state.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "stats/random.h"

namespace dlbench::stats {
namespace {

// `count` copies of each value in turn.
std::vector<double> Blocks(const std::vector<double>& values, std::size_t count, double offset = 0) {
  std::vector<double> x;
  for (double v : values) x.insert(x.end(), count, offset + v);
  return x;
}

TEST(BatchMeansCITest, HandComputedFourBatches) {
  // 40 values, default 20 batches capped at 40 / 10 = 4 batches of 10, means 1 2 3 4.
  // mean 2.5; s_B^2 = (2.25 + 0.25 + 0.25 + 2.25) / 3 = 5/3; se = sqrt(5/3 / 4) = sqrt(5/12);
  // t(0.975, 3) = 3.182446305 -> half-width 2.054260257.
  for (double offset : {0.0, 1.2e10}) {
    const std::optional<Interval> ci = BatchMeansCI(Blocks({1, 2, 3, 4}, 10, offset), 0.95);
    ASSERT_TRUE(ci.has_value());
    EXPECT_NEAR(ci->low - offset, 2.5 - 2.054260256760879, 1e-6) << offset;
    EXPECT_NEAR(ci->high - offset, 2.5 + 2.054260256760879, 1e-6) << offset;
  }
}

TEST(BatchMeansCITest, TwoBatchesAtTheMinimumLength) {
  // 20 values -> 2 batches of 10 with means 1 and 3: s_B = sqrt(2), se = 1, t(0.975, 1) = 12.7062.
  const std::optional<Interval> ci = BatchMeansCI(Blocks({1, 3}, 10), 0.95);
  ASSERT_TRUE(ci.has_value());
  EXPECT_NEAR(ci->low, 2 - 12.706204736174707, 1e-9);
  EXPECT_NEAR(ci->high, 2 + 12.706204736174707, 1e-9);
}

TEST(BatchMeansCITest, LeftoverValuesComeFromTheStart) {
  // 43 values: 4 batches of 10 over the last 40; the first 3 (value 100) are outside every batch
  // but in the centre: mean = (300 + 100) / 43. The batch spread is that of the 4-batch case.
  std::vector<double> x = {100, 100, 100};
  const std::vector<double> tail = Blocks({1, 2, 3, 4}, 10);
  x.insert(x.end(), tail.begin(), tail.end());
  const std::optional<Interval> ci = BatchMeansCI(x, 0.95);
  ASSERT_TRUE(ci.has_value());
  EXPECT_NEAR((ci->low + ci->high) / 2, 400.0 / 43.0, 1e-12);
  EXPECT_NEAR((ci->high - ci->low) / 2, 2.054260256760879, 1e-9);
}

TEST(BatchMeansCITest, DegenerateInputs) {
  EXPECT_FALSE(BatchMeansCI({}, 0.95).has_value());
  EXPECT_FALSE(BatchMeansCI({1.0}, 0.95).has_value());
  EXPECT_FALSE(BatchMeansCI({1.0, 2.0}, 0.95).has_value());
  EXPECT_FALSE(BatchMeansCI(Blocks({1}, 19), 0.95).has_value());
  EXPECT_FALSE(BatchMeansCI(Blocks({1}, 100), 1.0).has_value());
  EXPECT_FALSE(BatchMeansCI(Blocks({1}, 100), 0.95, 1).has_value());
  const std::optional<Interval> equal = BatchMeansCI(Blocks({1.2e10 + 7}, 100), 0.95);
  ASSERT_TRUE(equal.has_value());
  EXPECT_EQ(equal->low, 1.2e10 + 7);
  EXPECT_EQ(equal->high, 1.2e10 + 7);
}

TEST(BatchMeansCITest, NarrowsWithMoreData) {
  Random random(7);
  std::vector<double> x;
  for (int i = 0; i < 4000; ++i) x.push_back(100 + random.Normal());
  const std::vector<double> first_tenth(x.begin(), x.begin() + 400);
  const Interval wide = *BatchMeansCI(first_tenth, 0.95);
  const Interval narrow = *BatchMeansCI(x, 0.95);
  EXPECT_LT(narrow.high - narrow.low, wide.high - wide.low);
  EXPECT_LT(narrow.low, 100.0);
  EXPECT_GT(narrow.high, 100.0);
}

TEST(Mser5Test, HandComputedCut) {
  // Batch means of 5: Z = 10, 1, 1, 1 (4 batches); candidates d = 0..2.
  // d = 0: mean 3.25, sum of squares 45.5625 + 3 * 5.0625 = 60.75, / 4^2 = 3.80.
  // d = 1: tail 1, 1, 1 -> 0. d = 2: 0 as well; the smallest minimiser is d = 1 -> cut 5.
  const std::vector<double> x = Blocks({10, 1, 1, 1}, 5);
  EXPECT_EQ(Mser5Cut(x), std::optional<std::size_t>(5));
  EXPECT_EQ(Mser5Truncation(x, 0), 5u);
  EXPECT_EQ(Mser5Truncation(x, 2), 5u);
  EXPECT_EQ(Mser5Truncation(x, 8), 8u);
}

TEST(Mser5Test, CutLandsAtTheEndOfAWarmUpUnderOffset) {
  // 50 slow steps decaying from 3x to 1.2x, then 950 steady steps with noise of 1%.
  Random random(11);
  const double offset = 1.2e10;
  std::vector<double> x;
  for (int i = 0; i < 50; ++i) x.push_back(offset + 1e6 * (3.0 - 1.8 * i / 49.0));
  for (int i = 0; i < 950; ++i) x.push_back(offset + 1e6 * (1.0 + 0.01 * random.Normal()));
  // MSER may also drop a steady batch or two just after the transition: it does so whenever such a
  // batch mean lies more than about sqrt(2) standard deviations from the rest (p ~ 0.16 each).
  const std::size_t cut = Mser5Truncation(x, 2);
  EXPECT_GE(cut, 50u);
  EXPECT_LE(cut, 60u);
}

TEST(Mser5Test, SteadySeriesCutsAtTheMinimum) {
  // Period 5: every batch mean is equal, so MSER is 0 for every d and the first (d = 0) wins.
  std::vector<double> periodic;
  for (int i = 0; i < 200; ++i) periodic.push_back(1.0 + 0.1 * (i % 5));
  EXPECT_EQ(Mser5Cut(periodic), std::optional<std::size_t>(0));
  EXPECT_EQ(Mser5Truncation(periodic, 3), 3u);
  EXPECT_EQ(Mser5Truncation(std::vector<double>(100, 4.0), 2), 2u);
}

TEST(Mser5Test, DegenerateInputs) {
  EXPECT_FALSE(Mser5Cut({}).has_value());
  EXPECT_FALSE(Mser5Cut(Blocks({1, 2, 3}, 5)).has_value());  // 3 batches < kMser5MinBatches
  EXPECT_EQ(Mser5Truncation({}, 2), 0u);
  EXPECT_EQ(Mser5Truncation({5.0}, 2), 1u);
  EXPECT_EQ(Mser5Truncation({5.0, 6.0}, 2), 2u);
  EXPECT_EQ(Mser5Truncation({5.0, 6.0, 7.0}, 2), 2u);
}

}  // namespace
}  // namespace dlbench::stats
