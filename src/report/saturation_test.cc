#include "report/saturation.h"

#include <gtest/gtest.h>

namespace dlbench::report {
namespace {

TEST(FindSaturation, DegenerateInputs) {
  EXPECT_TRUE(FindSaturation({}).curve.empty());
  EXPECT_FALSE(FindSaturation({}).best_batch.has_value());

  const Saturation one = FindSaturation({{8, 100}});
  ASSERT_EQ(one.curve.size(), 1u);
  EXPECT_FALSE(one.saturation_batch.has_value());
  EXPECT_FALSE(one.drop_batch.has_value());
  EXPECT_EQ(*one.best_batch, 8);

  // Non-positive and non-finite points are left out.
  const Saturation junk = FindSaturation({{0, 100}, {8, -1}, {16, 0}, {-4, 10}});
  EXPECT_TRUE(junk.curve.empty());
}

TEST(FindSaturation, StillRisingCurveHasNoSaturation) {
  // Doubling gains: +80%, +50%, +20%: every step pays at 5%.
  const Saturation s = FindSaturation({{1, 100}, {2, 180}, {4, 270}, {8, 324}});
  EXPECT_FALSE(s.saturation_batch.has_value());
  EXPECT_FALSE(s.drop_batch.has_value());
  EXPECT_EQ(*s.best_batch, 8);
  EXPECT_DOUBLE_EQ(s.best_samples_per_s, 324);
}

TEST(FindSaturation, SaturatesWhereDoublingStopsPaying) {
  // 8 -> 16 gains 4%, 16 -> 32 gains 1%: saturated from 8 on.
  const Saturation s = FindSaturation({{2, 100}, {4, 190}, {8, 300}, {16, 312}, {32, 315.12}});
  ASSERT_TRUE(s.saturation_batch.has_value());
  EXPECT_EQ(*s.saturation_batch, 8);
  EXPECT_FALSE(s.drop_batch.has_value());
}

TEST(FindSaturation, DropIsTheFirstBatchBelowItsPredecessor) {
  const Saturation s = FindSaturation({{16, 400}, {32, 500}, {64, 505}, {128, 450}, {256, 300}});
  ASSERT_TRUE(s.drop_batch.has_value());
  EXPECT_EQ(*s.drop_batch, 128);
  ASSERT_TRUE(s.saturation_batch.has_value());
  EXPECT_EQ(*s.saturation_batch, 32);
  EXPECT_EQ(*s.best_batch, 64);
}

TEST(FindSaturation, SmallDipWithinToleranceIsNotADrop) {
  const Saturation s = FindSaturation({{32, 500}, {64, 495}});  // -1%, tolerance 2%
  EXPECT_FALSE(s.drop_batch.has_value());
  SaturationOptions strict;
  strict.drop_tolerance = 0;
  EXPECT_EQ(*FindSaturation({{32, 500}, {64, 495}}, strict).drop_batch, 64);
}

TEST(FindSaturation, MidCurveDipFollowedByGainsIsNotSaturation) {
  // 4 -> 8 gains 2%, then 8 -> 16 gains 40%: the curve still pays at its end.
  const Saturation s = FindSaturation({{4, 100}, {8, 102}, {16, 142.8}});
  EXPECT_FALSE(s.saturation_batch.has_value());
}

TEST(FindSaturation, NonDoublingStepsAreNormalisedPerDoubling) {
  // 8 -> 32 is two doublings; 1.08x overall is ~3.9% per doubling: does not pay at 5%.
  const Saturation flat = FindSaturation({{8, 100}, {32, 108}});
  ASSERT_TRUE(flat.saturation_batch.has_value());
  EXPECT_EQ(*flat.saturation_batch, 8);
  // 1.12x over two doublings is ~5.8% per doubling: pays.
  EXPECT_FALSE(FindSaturation({{8, 100}, {32, 112}}).saturation_batch.has_value());
}

TEST(FindSaturation, RepeatedBatchSizesAreAveragedAndSorted) {
  const Saturation s = FindSaturation({{16, 210}, {8, 100}, {16, 190}});
  ASSERT_EQ(s.curve.size(), 2u);
  EXPECT_EQ(s.curve[0].batch_size, 8);
  EXPECT_DOUBLE_EQ(s.curve[1].samples_per_s, 200);
}

TEST(FindSaturation, LargeValuesKeepPrecision) {
  const Saturation s = FindSaturation({{1e6, 1.2e10}, {2e6, 1.2e10 + 1}});
  ASSERT_TRUE(s.saturation_batch.has_value());
  EXPECT_EQ(*s.saturation_batch, 1e6);
}

}  // namespace
}  // namespace dlbench::report
