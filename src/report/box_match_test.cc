#include "report/box_match.h"

#include <gtest/gtest.h>

namespace dlbench::report {
namespace {

Detection Box(std::int64_t image, double x1, double y1, double x2, double y2, double score,
              std::int64_t label) {
  return {image, x1, y1, x2, y2, score, label};
}

TEST(BoxIou, KnownRectangles) {
  // [0,2]x[0,2] and [1,3]x[0,2]: intersection 1x2 = 2, union 4 + 4 - 2 = 6.
  EXPECT_DOUBLE_EQ(BoxIou(Box(0, 0, 0, 2, 2, 1, 1), Box(0, 1, 0, 3, 2, 1, 1)), 2.0 / 6.0);
  // Identical: 1. Disjoint: 0. One inside the other: [0,4]^2 holds [1,3]^2: 4 / 16.
  EXPECT_DOUBLE_EQ(BoxIou(Box(0, 0, 0, 2, 2, 1, 1), Box(0, 0, 0, 2, 2, 1, 1)), 1.0);
  EXPECT_DOUBLE_EQ(BoxIou(Box(0, 0, 0, 1, 1, 1, 1), Box(0, 2, 2, 3, 3, 1, 1)), 0.0);
  EXPECT_DOUBLE_EQ(BoxIou(Box(0, 0, 0, 4, 4, 1, 1), Box(0, 1, 1, 3, 3, 1, 1)), 0.25);
  // Touching edges share no area; two empty boxes have an empty union.
  EXPECT_DOUBLE_EQ(BoxIou(Box(0, 0, 0, 1, 1, 1, 1), Box(0, 1, 0, 2, 1, 1, 1)), 0.0);
  EXPECT_DOUBLE_EQ(BoxIou(Box(0, 1, 1, 1, 1, 1, 1), Box(0, 1, 1, 1, 1, 1, 1)), 0.0);
}

TEST(MatchBoxes, MatchesSameClassAboveTheThresholdAndAveragesTheirIou) {
  // Image 0: reference A [0,0,2,2] class 1 against candidate [0,0,2,1.5] (IoU 3/4).
  // Image 1: reference B [0,0,10,10] class 2 against [1,0,11,10] (IoU 90/110 = 9/11).
  const std::vector<Detection> ref = {Box(0, 0, 0, 2, 2, 0.9, 1), Box(1, 0, 0, 10, 10, 0.8, 2)};
  const std::vector<Detection> cand = {Box(1, 1, 0, 11, 10, 0.7, 2), Box(0, 0, 0, 2, 1.5, 0.9, 1)};
  const BoxMatch m = MatchBoxes(ref, cand);
  EXPECT_EQ(m.reference_boxes, 2);
  EXPECT_EQ(m.candidate_boxes, 2);
  EXPECT_EQ(m.matched, 2);
  ASSERT_TRUE(m.match_share && m.mean_iou);
  EXPECT_DOUBLE_EQ(*m.match_share, 1.0);
  EXPECT_DOUBLE_EQ(*m.mean_iou, (0.75 + 9.0 / 11.0) / 2.0);
}

TEST(MatchBoxes, AMissingBoxAClassMismatchAndAnotherImageAreNotMatched) {
  const std::vector<Detection> ref = {
      Box(0, 0, 0, 2, 2, 0.9, 1),  // matched: the same box
      Box(0, 5, 5, 7, 7, 0.8, 1),  // missing: no candidate there
      Box(0, 0, 0, 4, 4, 0.7, 3),  // class mismatch: the candidate at the same place is class 2
      Box(1, 0, 0, 2, 2, 0.6, 1),  // image 1: the candidate with these coordinates is in image 2
  };
  const std::vector<Detection> cand = {Box(0, 0, 0, 2, 2, 0.5, 1), Box(0, 0, 0, 4, 4, 0.9, 2),
                                       Box(2, 0, 0, 2, 2, 0.6, 1)};
  const BoxMatch m = MatchBoxes(ref, cand);
  EXPECT_EQ(m.matched, 1);
  ASSERT_TRUE(m.match_share && m.mean_iou);
  EXPECT_DOUBLE_EQ(*m.match_share, 0.25);
  EXPECT_DOUBLE_EQ(*m.mean_iou, 1.0);
}

TEST(MatchBoxes, BelowTheThresholdIsUnmatchedAndLeavesTheCandidateFree) {
  // IoU 1/3 < 0.5: unmatched. At threshold 1/3 it matches (>= is inclusive).
  const std::vector<Detection> ref = {Box(0, 0, 0, 2, 2, 0.9, 1)};
  const std::vector<Detection> cand = {Box(0, 1, 0, 3, 2, 0.9, 1)};
  // [0,2]^2 and [1,3]x[0,2]: 2 / 6.
  EXPECT_EQ(MatchBoxes(ref, cand).matched, 0);
  EXPECT_FALSE(MatchBoxes(ref, cand).mean_iou.has_value());
  EXPECT_DOUBLE_EQ(*MatchBoxes(ref, cand).match_share, 0.0);
  EXPECT_EQ(MatchBoxes(ref, cand, 2.0 / 6.0).matched, 1);
}

TEST(MatchBoxes, GreedyByReferenceScoreTheHigherScoreTakesTheBestCandidateFirst) {
  // Two reference boxes want the same candidate C1 [0,0,2,2]; the other candidate C2 [0,0,2,1.2]
  // overlaps R_low [0,0,2,1] at 2/2.4 and R_high [0,0,2,2] at 2.4/4 = 0.6.
  // R_high (score 0.9) goes first: C1 (IoU 1). R_low then takes C2 (IoU 2 / 2.4 = 5/6).
  const std::vector<Detection> ref = {Box(0, 0, 0, 2, 1, 0.2, 1), Box(0, 0, 0, 2, 2, 0.9, 1)};
  const std::vector<Detection> cand = {Box(0, 0, 0, 2, 1.2, 0.5, 1), Box(0, 0, 0, 2, 2, 0.5, 1)};
  const BoxMatch m = MatchBoxes(ref, cand);
  EXPECT_EQ(m.matched, 2);
  EXPECT_DOUBLE_EQ(*m.mean_iou, (1.0 + 5.0 / 6.0) / 2.0);
  // One candidate only, C1: R_high takes it, R_low (C1 at IoU 0.5) finds it used.
  const BoxMatch one = MatchBoxes(ref, {cand[1]});
  EXPECT_EQ(one.matched, 1);
  EXPECT_DOUBLE_EQ(*one.mean_iou, 1.0);
}

TEST(MatchBoxes, NoBoxesAtAll) {
  const BoxMatch none = MatchBoxes({}, {});
  EXPECT_EQ(none.reference_boxes, 0);
  EXPECT_EQ(none.matched, 0);
  EXPECT_FALSE(none.match_share.has_value());
  EXPECT_FALSE(none.mean_iou.has_value());
  // Reference boxes and no candidate: none matched, share 0.
  const BoxMatch lost = MatchBoxes({Box(0, 0, 0, 1, 1, 0.5, 1)}, {});
  EXPECT_DOUBLE_EQ(*lost.match_share, 0.0);
  EXPECT_FALSE(lost.mean_iou.has_value());
}

TEST(ParseDetections, ReadsRowsAndRejectsMalformedOnes) {
  std::string error;
  auto rows = ParseDetections(nlohmann::json::parse("[[1, 0.5, 1, 2.5, 3, 0.75, 4]]"), error);
  ASSERT_TRUE(rows.has_value()) << error;
  ASSERT_EQ(rows->size(), 1U);
  EXPECT_EQ((*rows)[0].image, 1);
  EXPECT_DOUBLE_EQ((*rows)[0].x2, 2.5);
  EXPECT_EQ((*rows)[0].label, 4);
  EXPECT_FALSE(ParseDetections(nlohmann::json::parse("[[1, 2, 3]]"), error).has_value());
  EXPECT_EQ(error, "detection 0 is not seven finite numbers");
  EXPECT_FALSE(ParseDetections(nlohmann::json::parse("[[0, 0, 0, 1, 1, null, 1]]"), error).has_value());
  EXPECT_FALSE(ParseDetections(nlohmann::json::object(), error).has_value());
}

}  // namespace
}  // namespace dlbench::report
