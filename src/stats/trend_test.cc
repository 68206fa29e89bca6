#include "stats/trend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "stats/random.h"

namespace dlbench::stats {
namespace {

TEST(MannKendallTest, PerfectLine) {
  // n = 10 increasing: every one of the 45 pairs concordant, s = 45; var = 10*9*25/18 = 125;
  // z = 44 / sqrt(125) = 3.93548; p = 8.30307e-5.
  std::vector<double> y;
  for (int i = 0; i < 10; ++i) y.push_back(1.2e10 + 3.0 * i);
  const MannKendallResult r = MannKendall(y);
  EXPECT_EQ(r.s, 45.0);
  EXPECT_NEAR(r.z, 3.9354796403996297, 1e-12);
  EXPECT_NEAR(r.p_value, 8.303070332644999e-05, 1e-15);
  std::reverse(y.begin(), y.end());
  EXPECT_EQ(MannKendall(y).s, -45.0);
  EXPECT_NEAR(MannKendall(y).z, -3.9354796403996297, 1e-12);
}

TEST(MannKendallTest, TiesReduceTheVariance) {
  // y = 1 2 2 3: five concordant pairs, one tied -> s = 5; one group of t = 2:
  // var = (4*3*13 - 2*1*9) / 18 = 138/18; z = 4 / sqrt(7.6667) = 1.44463; p = 0.148562.
  const MannKendallResult r = MannKendall({1, 2, 2, 3});
  EXPECT_EQ(r.s, 5.0);
  EXPECT_NEAR(r.z, 1.4446302370292303, 1e-12);
  EXPECT_NEAR(r.p_value, 0.1485617748918687, 1e-12);
}

TEST(MannKendallTest, NoiseIsNotSignificant) {
  Random random(2024);
  std::vector<double> y;
  for (int i = 0; i < 300; ++i) y.push_back(random.Normal());
  EXPECT_GT(MannKendall(y).p_value, 0.05);
}

TEST(MannKendallTest, DegenerateInputs) {
  EXPECT_EQ(MannKendall({}).p_value, 1.0);
  EXPECT_EQ(MannKendall({3}).p_value, 1.0);
  // Two increasing values: s = 1, var = 2*1*9/18 = 1, z = (1 - 1) / 1 = 0.
  const MannKendallResult two = MannKendall({1, 2});
  EXPECT_EQ(two.s, 1.0);
  EXPECT_EQ(two.z, 0.0);
  EXPECT_EQ(two.p_value, 1.0);
  const MannKendallResult equal = MannKendall({4, 4, 4, 4});
  EXPECT_EQ(equal.s, 0.0);
  EXPECT_EQ(equal.p_value, 1.0);
}

TEST(MannKendallTest, LongSeriesAreThinned) {
  std::vector<double> y;
  for (int i = 0; i < 12000; ++i) y.push_back(i);
  const MannKendallResult r = MannKendall(y);
  EXPECT_EQ(r.s, 5000.0 * 4999.0 / 2.0);  // s of the 5000 thinned values
  EXPECT_LT(r.p_value, 1e-10);
}

TEST(TheilSenTest, PerfectLine) {
  std::vector<double> x;
  std::vector<double> y;
  for (int i = 0; i < 12; ++i) {
    x.push_back(i);
    y.push_back(1 + 2.0 * i);
  }
  const TheilSenResult r = TheilSen(x, y, 0.95);
  EXPECT_EQ(r.n, 12u);
  EXPECT_DOUBLE_EQ(r.slope, 2.0);
  EXPECT_DOUBLE_EQ(r.intercept, 1.0);
  EXPECT_DOUBLE_EQ(r.slope_ci.low, 2.0);
  EXPECT_DOUBLE_EQ(r.slope_ci.high, 2.0);
}

TEST(TheilSenTest, HandComputedSlopeAndInterval) {
  // x = 1..5, y = 1 3 2 5 4. The 10 slopes sorted: -1 -1 1/3 1/2 3/4 1 1 4/3 2 3; median
  // (3/4 + 1) / 2 = 0.875; intercept median(y) - 0.875 median(x) = 3 - 2.625 = 0.375.
  // Sen: sigma^2 = 5*4*15/18 = 16.667, z sigma = 8.0015; indexes round(0.9992) - 1 = 0 and
  // round(9.0008) = 9 -> [-1, 3].
  const TheilSenResult r = TheilSen({1, 2, 3, 4, 5}, {1, 3, 2, 5, 4}, 0.95);
  EXPECT_DOUBLE_EQ(r.slope, 0.875);
  EXPECT_DOUBLE_EQ(r.intercept, 0.375);
  EXPECT_EQ(r.slope_ci.low, -1.0);
  EXPECT_EQ(r.slope_ci.high, 3.0);
}

TEST(TheilSenTest, NoisyLineUnderOffsetAndTiedX) {
  Random random(3);
  std::vector<double> x;
  std::vector<double> y;
  for (int i = 0; i < 200; ++i) {
    const double t = 1e3 * static_cast<double>(i / 2);  // pairs of equal x: their slopes are skipped
    x.push_back(1.2e10 + t);
    y.push_back(500 + 0.004 * t + random.Normal());
  }
  const TheilSenResult r = TheilSen(x, y, 0.95);
  EXPECT_NEAR(r.slope, 0.004, 2e-4);
  EXPECT_LT(r.slope_ci.low, 0.004);
  EXPECT_GT(r.slope_ci.high, 0.004);
}

TEST(TheilSenTest, DegenerateInputs) {
  EXPECT_TRUE(std::isnan(TheilSen({}, {}, 0.95).slope));
  EXPECT_TRUE(std::isnan(TheilSen({1}, {2}, 0.95).slope));
  EXPECT_TRUE(std::isnan(TheilSen({3, 3, 3}, {1, 2, 3}, 0.95).slope));
  // Two points: one slope, (4 - 1) / (2 - 0) = 1.5; the interval is that slope.
  const TheilSenResult two = TheilSen({0, 2}, {1, 4}, 0.95);
  EXPECT_EQ(two.slope, 1.5);
  EXPECT_EQ(two.slope_ci.low, 1.5);
  EXPECT_EQ(two.slope_ci.high, 1.5);
}

TEST(DetectChangePointsTest, FindsAStepAtTen) {
  Random random(8);
  std::vector<double> y;
  for (int i = 0; i < 20; ++i) y.push_back((i < 10 ? 100.0 : 120.0) + random.Normal());
  EXPECT_EQ(DetectChangePoints(y, 0.05, 0.05), std::vector<std::size_t>{10});
}

TEST(DetectChangePointsTest, FindsTwoSteps) {
  Random random(9);
  std::vector<double> y;
  for (int i = 0; i < 30; ++i)
    y.push_back(100.0 + 20.0 * static_cast<double>(i / 10) + random.Normal());  // levels 100, 120, 140
  EXPECT_EQ(DetectChangePoints(y, 0.05, 0.05), (std::vector<std::size_t>{10, 20}));
}

TEST(DetectChangePointsTest, FlatNoiseAndSmallShiftsGiveNone) {
  Random random(10);
  std::vector<double> flat;
  for (int i = 0; i < 40; ++i) flat.push_back(100.0 + random.Normal());
  EXPECT_TRUE(DetectChangePoints(flat, 0.05, 0.02).empty());
  // A clean but tiny step (0.5%) is significant, yet below the 2% relevance threshold.
  std::vector<double> tiny;
  for (int i = 0; i < 20; ++i) tiny.push_back((i < 10 ? 100.0 : 100.5) + 0.01 * random.Normal());
  EXPECT_TRUE(DetectChangePoints(tiny, 0.05, 0.02).empty());
  EXPECT_EQ(DetectChangePoints(tiny, 0.05, 0.001), std::vector<std::size_t>{10});
}

TEST(DetectChangePointsTest, DegenerateInputs) {
  EXPECT_TRUE(DetectChangePoints({}, 0.05, 0.05).empty());
  EXPECT_TRUE(DetectChangePoints({1, 100}, 0.05, 0.05).empty());
  EXPECT_TRUE(DetectChangePoints(std::vector<double>(30, 5.0), 0.05, 0.05).empty());
}

}  // namespace
}  // namespace dlbench::stats
