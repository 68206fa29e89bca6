#include "stats/distributions.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dlbench::stats {
namespace {

TEST(NormalTest, KnownValues) {
  // Reference values: R pnorm/qnorm, SciPy norm.cdf/ppf.
  EXPECT_DOUBLE_EQ(NormalCdf(0), 0.5);
  EXPECT_NEAR(NormalCdf(1.96), 0.9750021048517795, 1e-15);
  EXPECT_NEAR(NormalCdf(-1), 0.15865525393145707, 1e-15);
  EXPECT_NEAR(NormalCdf(-10), 7.6198530241604696e-24, 1e-36);  // the lower tail keeps precision
  EXPECT_NEAR(NormalQuantile(0.975), 1.959963984540054, 1e-12);
  EXPECT_NEAR(NormalQuantile(0.5), 0.0, 1e-15);
  EXPECT_NEAR(NormalQuantile(0.05), -1.6448536269514729, 1e-12);
}

TEST(NormalTest, EdgesOfTheDomain) {
  EXPECT_EQ(NormalCdf(INFINITY), 1.0);
  EXPECT_EQ(NormalCdf(-INFINITY), 0.0);
  EXPECT_TRUE(std::isnan(NormalCdf(NAN)));
  EXPECT_EQ(NormalQuantile(0), -INFINITY);
  EXPECT_EQ(NormalQuantile(1), INFINITY);
  EXPECT_TRUE(std::isnan(NormalQuantile(1.5)));
  EXPECT_TRUE(std::isnan(NormalQuantile(NAN)));
}

TEST(StudentTTest, KnownQuantiles) {
  // R qt(0.975, df): 12.706204736, 2.262157163, 2.093024054, 2.042272456; qt(0.95, 3) = 2.353363435.
  struct Case {
    double p;
    double dof;
    double expected;
  };
  for (const Case& c : {Case{0.975, 1, 12.706204736174707}, Case{0.975, 9, 2.2621571627409915},
                        Case{0.975, 19, 2.093024054408263}, Case{0.975, 30, 2.0422724563012373},
                        Case{0.95, 3, 2.3533634348018264}, Case{0.025, 9, -2.2621571627409915}}) {
    EXPECT_NEAR(StudentTQuantile(c.p, c.dof), c.expected, 1e-9) << "p=" << c.p << " dof=" << c.dof;
  }
  EXPECT_NEAR(StudentTQuantile(0.975, INFINITY), 1.959963984540054, 1e-12);
}

TEST(StudentTTest, OutOfDomainIsNaN) {
  EXPECT_TRUE(std::isnan(StudentTQuantile(0.975, 0)));
  EXPECT_TRUE(std::isnan(StudentTQuantile(0.975, -3)));
  EXPECT_TRUE(std::isnan(StudentTQuantile(2, 5)));
  EXPECT_TRUE(std::isnan(StudentTQuantile(0.5, NAN)));
  EXPECT_EQ(StudentTQuantile(1, 5), INFINITY);
}

TEST(StudentTTest, CdfKnownValues) {
  // Closed forms: dof 1 is Cauchy, cdf(1) = 3/4; dof 2: 1/2 + t / (2 sqrt(2 + t^2)); dof 4:
  // 1/2 + (3/8) u (1 - t^2 / (12 (1 + t^2/4))) with u = t / sqrt(1 + t^2/4). Upper tail at dof 7 by
  // Simpson integration of the density (2.5 -> 0.0204961).
  EXPECT_NEAR(StudentTCdf(1, 1), 0.75, 1e-12);
  EXPECT_NEAR(StudentTCdf(1, 2), 0.5 + 1 / (2 * std::sqrt(3.0)), 1e-12);
  EXPECT_NEAR(StudentTCdf(8.489, 4), 0.9994721029689216, 1e-10);
  EXPECT_NEAR(StudentTCdf(-2.5, 7), 0.02049610929286816, 1e-9);
  EXPECT_EQ(StudentTCdf(0, 3), 0.5);
  EXPECT_NEAR(StudentTCdf(1.959963984540054, INFINITY), 0.975, 1e-12);
  EXPECT_EQ(StudentTCdf(INFINITY, 3), 1.0);
  EXPECT_EQ(StudentTCdf(-INFINITY, 3), 0.0);
  EXPECT_TRUE(std::isnan(StudentTCdf(NAN, 3)));
  EXPECT_TRUE(std::isnan(StudentTCdf(1, 0)));
  // The quantile inverts the cdf.
  EXPECT_NEAR(StudentTCdf(StudentTQuantile(0.9, 5.5), 5.5), 0.9, 1e-12);
}

}  // namespace
}  // namespace dlbench::stats
