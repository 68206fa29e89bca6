#include "stats/olympic.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dlbench::stats {
namespace {

TEST(OlympicMeanTest, DropsTheFastestAndTheSlowest) {
  // 5 runs: 10, 12, 13, 14, 30 -> mean of 12, 13, 14 = 13.
  const OlympicScore s = OlympicMean({13.0, 30.0, 10.0, 14.0, 12.0});
  ASSERT_TRUE(s.mean);
  EXPECT_DOUBLE_EQ(*s.mean, 13.0);
  EXPECT_EQ(s.runs, 5u);
  EXPECT_EQ(s.converged, 5u);
  EXPECT_EQ(s.min, 10.0);
  EXPECT_EQ(s.max, 30.0);
  // Sample stddev of {10, 12, 13, 14, 30}: mean 15.8, squares 33.64 + 14.44 + 7.84 + 3.24 + 201.64 =
  // 260.8, / 4 = 65.2.
  EXPECT_NEAR(s.stddev, std::sqrt(65.2), 1e-12);
  EXPECT_TRUE(s.no_score.empty());
}

TEST(OlympicMeanTest, OneRunThatDidNotConvergeIsTheDroppedSlowest) {
  const OlympicScore s = OlympicMean({13.0, std::nullopt, 10.0, 14.0, 12.0});
  ASSERT_TRUE(s.mean);
  EXPECT_DOUBLE_EQ(*s.mean, (12.0 + 13.0 + 14.0) / 3);
  EXPECT_EQ(s.converged, 4u);
  EXPECT_EQ(s.max, 14.0);
}

TEST(OlympicMeanTest, NoScoreWithTwoFailuresOrTooFewRuns) {
  const OlympicScore two = OlympicMean({13.0, std::nullopt, 10.0, std::nullopt, 12.0});
  EXPECT_FALSE(two.mean);
  EXPECT_EQ(two.no_score, "2 of 5 runs did not reach the target (at most 1 may)");
  const OlympicScore few = OlympicMean({1.0, 2.0});
  EXPECT_FALSE(few.mean);
  EXPECT_EQ(few.no_score, "an olympic mean needs at least 3 runs");
  EXPECT_EQ(few.min, 1.0);
  const OlympicScore none = OlympicMean({});
  EXPECT_FALSE(none.mean);
  EXPECT_TRUE(std::isnan(none.min));
  EXPECT_TRUE(std::isnan(none.stddev));
  const OlympicScore one = OlympicMean({5.0});
  EXPECT_TRUE(std::isnan(one.stddev));
  // Three runs keep the middle one; large offsets keep their precision.
  const OlympicScore three = OlympicMean({1.2e10 + 3, 1.2e10 + 1, 1.2e10 + 2});
  ASSERT_TRUE(three.mean);
  EXPECT_EQ(*three.mean, 1.2e10 + 2);
  const OlympicScore three_failed = OlympicMean({7.0, std::nullopt, 5.0});
  ASSERT_TRUE(three_failed.mean);
  EXPECT_EQ(*three_failed.mean, 7.0);
}

}  // namespace
}  // namespace dlbench::stats
