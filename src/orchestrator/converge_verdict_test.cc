#include "orchestrator/converge_verdict.h"

#include <gtest/gtest.h>

#include "record/metrics.h"
#include "record/series.h"

namespace dlbench::orchestrator {
namespace {

record::CellRecord ConvergeCell(bool reached) {
  record::CellRecord rec;
  record::SetMetric(rec, record::metric::kTargetReached, reached ? 1 : 0);
  record::SetMetric(rec, record::metric::kBestEvalAccuracy, 0.87314);
  record::SetMetric(rec, record::metric::kBestEvalLoss, 0.4);
  record::SetMetric(rec, record::metric::kTrainEpochs, 3);
  rec.extras["info"]["converge"] = {
      {"target", "accuracy >= 0.99"}, {"end", "max_epochs"}, {"best_accuracy_step", 600}};
  return rec;
}

TEST(ConvergeVerdictTest, AReachedTargetIsValidAndAMissedOneSaysWhyWithTheBest) {
  record::CellRecord reached = ConvergeCell(true);
  ApplyConvergeVerdict(reached);
  EXPECT_EQ(reached.verdict, record::Verdict::kValid);
  EXPECT_TRUE(reached.verdict_reasons.empty());

  record::CellRecord missed = ConvergeCell(false);
  missed.verdict_reasons.push_back("throttled: the GPU slowed its clocks");
  ApplyConvergeVerdict(missed);
  EXPECT_EQ(missed.verdict, record::Verdict::kNotReached);
  ASSERT_EQ(missed.verdict_reasons.size(), 2u);
  EXPECT_EQ(missed.verdict_reasons[0],
            "not_reached: accuracy >= 0.99 not reached; training ended at max_epochs after 3.00 epochs; best "
            "accuracy 0.8731 at step 600, best loss 0.4000");
  EXPECT_EQ(missed.verdict_reasons[1], "throttled: the GPU slowed its clocks");

  record::CellRecord silent;  // a runner that never said
  ApplyConvergeVerdict(silent);
  EXPECT_EQ(silent.verdict, record::Verdict::kNotReached);
  EXPECT_EQ(silent.verdict_reasons[0], "not_reached: the runner reported no convergence result");
}

TEST(ConvergeVerdictTest, CurvesBecomeSeriesAndMalformedOnesAreDropped) {
  record::CellRecord rec = ConvergeCell(true);
  nlohmann::json& curves = rec.extras["info"]["converge"]["curves"];
  curves[std::string(record::series::kTrainLoss)] = {
      {"t_ns", {10, 20}}, {"value", {2.3, 1.9}}, {"per_point", 1}};
  curves[std::string(record::series::kEvalAccuracy)] = {{"t_ns", {25}}, {"value", {0.5}}, {"per_point", 1}};
  curves[std::string(record::series::kEvalLoss)] = {{"t_ns", {25, 30}}, {"value", {0.5}}};  // lengths differ
  curves["train.secret"] = {{"t_ns", {1}}, {"value", {1}}};
  AbsorbConvergeCurves(rec);
  ASSERT_EQ(rec.series.size(), 3u);
  EXPECT_EQ(rec.series[0].series, record::series::kEvalAccuracy);
  EXPECT_EQ(rec.series[0].t_ns, 25);
  EXPECT_EQ(rec.series[1].series, record::series::kTrainLoss);
  EXPECT_EQ(rec.series[2].value, 1.9);
  EXPECT_FALSE(rec.extras["info"]["converge"].contains("curves"));
  EXPECT_EQ(rec.extras["info"]["converge"]["curve_points"][std::string(record::series::kTrainLoss)]["points"],
            2);
  ASSERT_EQ(rec.extras["warnings"].size(), 2u);
}

TEST(ConvergeVerdictTest, StepsEndedByCountsTheStepsBeforeAPoint) {
  std::vector<record::StepRecord> steps(3);
  steps[0] = {0, 10};
  steps[1] = {10, 20};
  steps[2] = {25, 30};
  EXPECT_EQ(record::StepsEndedBy(steps, 5), 0);
  EXPECT_EQ(record::StepsEndedBy(steps, 10), 1);
  EXPECT_EQ(record::StepsEndedBy(steps, 22), 2);
  EXPECT_EQ(record::StepsEndedBy(steps, 99), 3);
  EXPECT_EQ(record::StepsEndedBy({}, 99), 0);
}

}  // namespace
}  // namespace dlbench::orchestrator
