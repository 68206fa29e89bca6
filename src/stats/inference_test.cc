#include "stats/inference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "stats/random.h"

namespace dlbench::stats {
namespace {

TEST(MannWhitneyTest, SeparatedSamples) {
  // a = 1 2 3 below b = 4 5 6: ranks of a 1+2+3 = 6, U = 6 - 3*4/2 = 0; mu = 4.5;
  // sigma^2 = 9 * 7 / 12 = 5.25; z = -(4.5 - 0.5) / 2.2913 = -1.74574; p = 0.0808556
  // (SciPy mannwhitneyu(..., method="asymptotic")).
  const MannWhitneyResult r = MannWhitney({1, 2, 3}, {4, 5, 6});
  EXPECT_EQ(r.u, 0.0);
  EXPECT_NEAR(r.z, -1.7457431218879391, 1e-12);
  EXPECT_NEAR(r.p_value, 0.0808555983700523, 1e-12);
  // Swapping the samples mirrors U (na nb - U) and z.
  const MannWhitneyResult swapped = MannWhitney({4, 5, 6}, {1, 2, 3});
  EXPECT_EQ(swapped.u, 9.0);
  EXPECT_NEAR(swapped.z, 1.7457431218879391, 1e-12);
}

TEST(MannWhitneyTest, TiesUseMidRanksAndCorrectedVariance) {
  // Pooled 1(a) 2(a) 2(a) 2(b) 3(b) 4(b): the three 2s share rank 3. R_a = 1 + 3 + 3 = 7, U = 1.
  // Tie term 3^3 - 3 = 24; sigma^2 = 9/12 (7 - 24/30) = 4.65; z = -(3.5 - 0.5) / sqrt(4.65).
  const MannWhitneyResult r = MannWhitney({1, 2, 2}, {2, 3, 4});
  EXPECT_EQ(r.u, 1.0);
  EXPECT_NEAR(r.z, -1.3912166872805047, 1e-12);
  EXPECT_NEAR(r.p_value, 0.16415972847851523, 1e-12);
}

TEST(MannWhitneyTest, DegenerateInputs) {
  const MannWhitneyResult empty = MannWhitney({}, {1, 2});
  EXPECT_EQ(empty.p_value, 1.0);
  EXPECT_EQ(empty.z, 0.0);
  const MannWhitneyResult all_tied = MannWhitney({5, 5}, {5, 5, 5});
  EXPECT_EQ(all_tied.u, 3.0);  // every rank is 3: R_a = 6, U = 6 - 3
  EXPECT_EQ(all_tied.p_value, 1.0);
  const MannWhitneyResult single = MannWhitney({1.2e10 + 1}, {1.2e10 + 2});
  EXPECT_EQ(single.u, 0.0);
  EXPECT_EQ(single.p_value, 1.0);  // |U - mu| = 0.5 is eaten by the continuity correction
}

TEST(HodgesLehmannTest, HandComputedShiftAndInterval) {
  // b_j - a_i = 10 + (j - i), j - i in -4..4 with counts 1 2 3 4 5 4 3 2 1 (25 differences):
  // median 10. Level 0.9: z = 1.644854, sigma = sqrt(25 * 11 / 12) = 4.7871,
  // C = floor(12.5 - 7.8741) = 4 -> [D(4), D(22)] = [8, 12].
  for (double offset : {0.0, 1.2e10}) {
    const ShiftEstimate s =
        HodgesLehmannShift({offset + 0, offset + 1, offset + 2, offset + 3, offset + 4},
                           {offset + 10, offset + 11, offset + 12, offset + 13, offset + 14}, 0.9);
    EXPECT_EQ(s.estimate, 10.0);
    EXPECT_EQ(s.ci.low, 8.0);
    EXPECT_EQ(s.ci.high, 12.0);
  }
}

TEST(HodgesLehmannTest, SmallSamplesGetTheFullRange) {
  // 3 x 3: C = floor(4.5 - 1.96 * sqrt(5.25)) = floor(0.009) = 0 -> 1: [min, max] of 1..5.
  const ShiftEstimate s = HodgesLehmannShift({1, 2, 3}, {4, 5, 6}, 0.95);
  EXPECT_EQ(s.estimate, 3.0);
  EXPECT_EQ(s.ci.low, 1.0);
  EXPECT_EQ(s.ci.high, 5.0);
  EXPECT_TRUE(std::isnan(HodgesLehmannShift({}, {1}, 0.95).estimate));
}

TEST(HodgesLehmannTest, LargeSamplesAreThinnedAndStillRight) {
  Random random(5);
  std::vector<double> a;
  std::vector<double> b;
  for (int i = 0; i < 4000; ++i) {
    a.push_back(100 + random.Normal());
    b.push_back(103 + random.Normal());
  }
  const ShiftEstimate s = HodgesLehmannShift(a, b, 0.95);
  EXPECT_NEAR(s.estimate, 3.0, 0.2);
  EXPECT_LT(s.ci.low, 3.0);
  EXPECT_GT(s.ci.high, 3.0);
}

std::vector<double> Ar1Series(Random& random, std::size_t n, double mean, double phi, double noise) {
  std::vector<double> x;
  double e = 0;
  for (std::size_t i = 0; i < n; ++i) {
    e = phi * e + noise * random.Normal();
    x.push_back(mean + e);
  }
  return x;
}

TEST(BootstrapRatioTest, DeterministicForASeed) {
  Random random(1);
  const std::vector<double> a = Ar1Series(random, 300, 100, 0.5, 2);
  const std::vector<double> b = Ar1Series(random, 300, 101, 0.5, 2);
  const RatioEstimate first = BootstrapRatioOfMeans(a, b, 0.95, 500, 42);
  const RatioEstimate again = BootstrapRatioOfMeans(a, b, 0.95, 500, 42);
  const RatioEstimate other = BootstrapRatioOfMeans(a, b, 0.95, 500, 43);
  EXPECT_EQ(first.ci.low, again.ci.low);
  EXPECT_EQ(first.ci.high, again.ci.high);
  EXPECT_EQ(first.p_value, again.p_value);
  EXPECT_NE(first.ci.low, other.ci.low);
  EXPECT_EQ(first.ratio, other.ratio);  // the point estimate does not depend on the seed
}

TEST(BootstrapRatioTest, CoversTheTruthAndDetectsADifference) {
  Random random(2);
  // Step times with autocorrelation under a 1.2e10 offset-free scale; b is 10% slower.
  const std::vector<double> a = Ar1Series(random, 1000, 1e6, 0.6, 2e4);
  const std::vector<double> b = Ar1Series(random, 1000, 1.1e6, 0.6, 2e4);
  const RatioEstimate slower = BootstrapRatioOfMeans(a, b, 0.95, 2000, 9);
  EXPECT_NEAR(slower.ratio, 1.1, 0.01);
  EXPECT_LT(slower.ci.low, 1.1);
  EXPECT_GT(slower.ci.high, 1.1);
  EXPECT_LT(slower.p_value, 0.01);  // 1 is far outside: p = 2 / 2001

  const std::vector<double> c = Ar1Series(random, 1000, 1e6, 0.6, 2e4);
  const RatioEstimate same = BootstrapRatioOfMeans(a, c, 0.95, 2000, 9);
  EXPECT_LT(same.ci.low, 1.0);
  EXPECT_GT(same.ci.high, 1.0);
  EXPECT_GT(same.p_value, 0.05);
}

TEST(BootstrapRatioTest, DegenerateInputs) {
  EXPECT_TRUE(std::isnan(BootstrapRatioOfMeans({}, {1, 2}, 0.95, 100, 1).ratio));
  EXPECT_TRUE(std::isnan(BootstrapRatioOfMeans({0, 0}, {1, 2}, 0.95, 100, 1).ratio));
  const RatioEstimate no_iterations = BootstrapRatioOfMeans({1, 3}, {4, 8}, 0.95, 0, 1);
  EXPECT_EQ(no_iterations.ratio, 3.0);  // 6 / 2
  EXPECT_TRUE(std::isnan(no_iterations.ci.low));
  EXPECT_EQ(no_iterations.p_value, 1.0);
  // One value each: every replicate is the same ratio 2, the interval collapses onto it.
  const RatioEstimate single = BootstrapRatioOfMeans({5}, {10}, 0.95, 100, 1);
  EXPECT_EQ(single.ci.low, 2.0);
  EXPECT_EQ(single.ci.high, 2.0);
  EXPECT_NEAR(single.p_value, 2.0 / 101.0, 1e-15);
}

TEST(BenjaminiHochbergTest, TextbookExample) {
  // m = 8, ascending p: m p / rank = .008 .032 .104 .082 .0672 .08 .084571 .205;
  // running minimum from the largest rank: .008 .032 .0672 .0672 .0672 .08 .084571 .205.
  const std::vector<double> p = {0.039, 0.001, 0.041, 0.008, 0.042, 0.06, 0.074, 0.205};
  const std::vector<double> q = BenjaminiHochberg(p);
  const std::vector<double> expected = {0.0672, 0.008, 0.0672, 0.032, 0.0672, 0.08, 0.074 * 8 / 7, 0.205};
  ASSERT_EQ(q.size(), expected.size());
  for (std::size_t i = 0; i < q.size(); ++i) EXPECT_NEAR(q[i], expected[i], 1e-12) << i;
}

TEST(BenjaminiHochbergTest, DegenerateInputs) {
  EXPECT_TRUE(BenjaminiHochberg({}).empty());
  EXPECT_EQ(BenjaminiHochberg({0.3}), std::vector<double>{0.3});
  // m = 2 (the NaN is kept and not counted): rank 2: 0.9 * 2 / 2 = 0.9; rank 1: 0.6 * 2 / 1 = 1.2,
  // above the running minimum 0.9, so both become 0.9.
  const std::vector<double> q = BenjaminiHochberg({0.9, NAN, 0.6});
  EXPECT_EQ(q[0], 0.9);
  EXPECT_TRUE(std::isnan(q[1]));
  EXPECT_EQ(q[2], 0.9);
}

TEST(RatioOfMeansTIntervalTest, HandComputedWelchLogRatio) {
  // a = {9, 10, 11}: mean 10, variance 1; b = {18, 20, 22}: mean 20, variance 4. Relative variances
  // of the means: 1/(3*100) = 4/(3*400) = 1/300 each, so se = sqrt(2/300), Welch dof = 4, and with
  // t(0.975, 4) = 2.7764451: ratio 2, interval 2 exp(-+2.7764451 se) = [1.5943265, 2.5088964]; the
  // two-sided p of ln 2 / se = 8.489 at dof 4 is 0.00105566 (closed-form cdf for dof 4).
  const RatioEstimate r = RatioOfMeansTInterval({9, 10, 11}, {18, 20, 22}, 0.95);
  EXPECT_DOUBLE_EQ(r.ratio, 2.0);
  EXPECT_NEAR(r.ci.low, 1.594326495215889, 1e-9);
  EXPECT_NEAR(r.ci.high, 2.5088963973206484, 1e-9);
  EXPECT_NEAR(r.p_value, 0.0010556587326413513, 1e-8);
}

TEST(RatioOfMeansTIntervalTest, DegenerateInputs) {
  // Fewer than two values on a side, or a non-positive mean: no estimate.
  EXPECT_TRUE(std::isnan(RatioOfMeansTInterval({1}, {1, 2}, 0.95).ratio));
  EXPECT_TRUE(std::isnan(RatioOfMeansTInterval({}, {}, 0.95).ratio));
  EXPECT_TRUE(std::isnan(RatioOfMeansTInterval({-1, 1}, {1, 2}, 0.95).ratio));
  // No spread at all: a point interval; equal means are p = 1, different ones p = 0.
  const RatioEstimate same = RatioOfMeansTInterval({5, 5}, {5, 5, 5}, 0.95);
  EXPECT_EQ(same.ratio, 1.0);
  EXPECT_EQ(same.ci.low, 1.0);
  EXPECT_EQ(same.ci.high, 1.0);
  EXPECT_EQ(same.p_value, 1.0);
  EXPECT_EQ(RatioOfMeansTInterval({5, 5}, {10, 10}, 0.95).p_value, 0.0);
  // Large offsets: the relative spread, not the level, sets the width.
  const RatioEstimate big =
      RatioOfMeansTInterval({1e12 + 9e9, 1e12 + 1e10, 1e12 + 1.1e10}, {9.081e12, 9.09e12, 9.099e12}, 0.95);
  EXPECT_NEAR(big.ratio, 9.0, 1e-9);
  EXPECT_LT(big.ci.low, 9.0);
  EXPECT_GT(big.ci.high, 9.0);
}

}  // namespace
}  // namespace dlbench::stats
