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

}  // namespace
}  // namespace dlbench::stats
