#include "stats/descriptive.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace dlbench::stats {
namespace {

TEST(ComputeMomentsTest, HandComputedSample) {
  // mean = 40 / 8 = 5; squared deviations 9+1+1+1+0+0+4+16 = 32; variance = 32 / 7.
  const Moments m = ComputeMoments({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_EQ(m.n, 8u);
  EXPECT_DOUBLE_EQ(m.mean, 5.0);
  EXPECT_DOUBLE_EQ(m.variance, 32.0 / 7.0);
  EXPECT_DOUBLE_EQ(m.stddev, std::sqrt(32.0 / 7.0));
}

TEST(ComputeMomentsTest, ExactUnderLargeOffset) {
  // 1.2e10 + {1, 2, 3, 4}: mean offset + 2.5; deviations -1.5 -0.5 0.5 1.5, squares sum 5, var 5/3.
  // A naive sum-of-squares formula loses everything here (x^2 ~ 1.4e20, far beyond 2^53).
  const double offset = 1.2e10;
  const Moments m = ComputeMoments({offset + 1, offset + 2, offset + 3, offset + 4});
  EXPECT_EQ(m.mean, offset + 2.5);
  EXPECT_DOUBLE_EQ(m.variance, 5.0 / 3.0);
}

TEST(ComputeMomentsTest, DegenerateInputs) {
  const Moments empty = ComputeMoments({});
  EXPECT_EQ(empty.n, 0u);
  EXPECT_TRUE(std::isnan(empty.mean));
  EXPECT_TRUE(std::isnan(empty.variance));

  const Moments one = ComputeMoments({7.5});
  EXPECT_EQ(one.mean, 7.5);
  EXPECT_TRUE(std::isnan(one.variance));
  EXPECT_TRUE(std::isnan(one.stddev));

  // Two values 1 and 3: mean 2, variance ((1)^2 + (1)^2) / 1 = 2.
  const Moments two = ComputeMoments({1, 3});
  EXPECT_EQ(two.mean, 2.0);
  EXPECT_EQ(two.variance, 2.0);

  const Moments equal = ComputeMoments({1.2e10 + 3, 1.2e10 + 3, 1.2e10 + 3});
  EXPECT_EQ(equal.mean, 1.2e10 + 3);
  EXPECT_EQ(equal.variance, 0.0);
  EXPECT_EQ(equal.stddev, 0.0);
}

TEST(QuantileTest, Type7MatchesR) {
  // R: quantile(c(1, 2, 3, 4), c(0, .25, .5, .9, 1)) = 1, 1.75, 2.5, 3.7, 4.
  // h = 3q: 0.75 -> 1 + 0.75 (2 - 1); 1.5 -> 2 + 0.5; 2.7 -> 3 + 0.7.
  const std::vector<double> x = {4, 1, 3, 2};
  struct Case {
    double q;
    double expected;
  };
  for (const Case& c : {Case{0, 1}, Case{0.25, 1.75}, Case{0.5, 2.5}, Case{0.9, 3.7}, Case{1, 4}}) {
    EXPECT_DOUBLE_EQ(Quantile(x, c.q), c.expected) << "q=" << c.q;
  }
  EXPECT_DOUBLE_EQ(Median({5, 1, 3}), 3.0);
  EXPECT_DOUBLE_EQ(Median({5, 1, 3, 2}), 2.5);
  const std::vector<double> several = Quantiles(x, {0.5, 0.9});
  ASSERT_EQ(several.size(), 2u);
  EXPECT_DOUBLE_EQ(several[1], 3.7);
}

TEST(QuantileTest, LargeOffsetAndDegenerateInputs) {
  const double offset = 1.2e10;
  // h = 0.99 * 3 = 2.97 -> x[2] + 0.97 (x[3] - x[2]) = offset + 30 + 0.97 * 10.
  EXPECT_NEAR(Quantile({offset + 10, offset + 20, offset + 30, offset + 40}, 0.99) - offset, 39.7, 1e-5);
  EXPECT_TRUE(std::isnan(Quantile({}, 0.5)));
  EXPECT_TRUE(std::isnan(Median({})));
  EXPECT_EQ(Quantile({3}, 0.0), 3.0);
  EXPECT_EQ(Quantile({3}, 0.99), 3.0);
  EXPECT_EQ(Quantile({2, 2, 2}, 0.37), 2.0);
  EXPECT_TRUE(std::isnan(Quantile({1, 2}, -0.1)));
  EXPECT_TRUE(std::isnan(Quantile({1, 2}, 1.1)));
  EXPECT_TRUE(std::isnan(Quantile({1, 2}, NAN)));
}

TEST(ThinEvenlyTest, KeepsEndsAndSpacing) {
  // n = 10, limit 4: indexes floor(i * 9 / 3) = 0, 3, 6, 9.
  const std::vector<double> x = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(ThinEvenly(x, 4), (std::vector<double>{0, 3, 6, 9}));
  EXPECT_EQ(ThinEvenly(x, 20), x);
  EXPECT_EQ(ThinEvenly(x, 1), (std::vector<double>{0}));
  EXPECT_TRUE(ThinEvenly(x, 0).empty());
}

}  // namespace
}  // namespace dlbench::stats
