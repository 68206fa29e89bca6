// A ddp cell's figures on hand-made step records (orchestrator/ddp_analysis.h): every value below
// is worked out by hand in the comments.
#include "orchestrator/ddp_analysis.h"

#include <gtest/gtest.h>

#include "record/metrics.h"
#include "record/outcome.h"

namespace dlbench::orchestrator {
namespace {

namespace metric = record::metric;
constexpr std::int64_t kMs = 1'000'000;

record::StepRecord Step(std::int64_t start_ms, std::int64_t end_ms, std::uint32_t samples,
                        std::optional<std::int64_t> comm_ms = std::nullopt) {
  record::StepRecord s;
  s.start_ns = start_ms * kMs;
  s.end_ns = end_ms * kMs;
  s.samples = samples;
  if (comm_ms) {
    s.comm_ns = *comm_ms * kMs;
    s.present |= record::kHasComm;
  }
  return s;
}

// Rank 0: three 10 ms steps from 0 ms, 2 samples each, 4 ms of all-reduce each (own 6 ms).
// Rank 1: three 10 ms steps from 5 ms, 2 samples each, 2 ms of all-reduce each (own 8 ms).
std::vector<record::StepRow> TwoRanks() {
  std::vector<record::StepRow> rows;
  rows.reserve(6);
  for (std::int64_t i = 0; i < 3; ++i) rows.push_back({0, Step(10 * i, 10 * i + 10, 2, 4)});
  for (std::int64_t i = 0; i < 3; ++i) rows.push_back({1, Step(5 + 10 * i, 15 + 10 * i, 2, 2)});
  return rows;
}

record::CellRecord DdpCell(const std::string& mode, int world_size) {
  record::CellRecord cell;
  cell.cell_id = "c#r0";
  cell.label = "mlp ws=" + std::to_string(world_size);
  cell.outcome = record::Outcome::kOk;
  cell.params = {{"model", "mlp"}, {"strategy", "ddp"}, {"world_size", world_size}, {"ddp_mode", mode}};
  cell.steps = TwoRanks();
  cell.window = record::MeasuredWindow{0, 3};
  record::SetMetric(cell, metric::kStepTimeMeanNs, 10.0 * kMs);
  return cell;
}

record::CellRecord Reference(const std::string& id, std::string_view name, double value) {
  record::CellRecord ref;
  ref.cell_id = id;
  ref.label = id + " label";
  ref.outcome = record::Outcome::kOk;
  record::SetMetric(ref, name, value);
  return ref;
}

TEST(DdpAnalysisTest, SamplesInSpanCountsTheShareOfEachStepInside) {
  const std::vector<record::StepRecord> steps = {Step(0, 10, 4), Step(10, 20, 4), Step(20, 30, 4),
                                                 Step(7, 7, 3), Step(30, 30, 5)};
  // [5, 25] ms: half of the first (2), all of the second (4), half of the third (2), the empty
  // step at 7 ms whole (3); the empty one at 30 ms is outside.
  EXPECT_DOUBLE_EQ(SamplesInSpan(steps, 5 * kMs, 25 * kMs), 11.0);
  EXPECT_DOUBLE_EQ(SamplesInSpan(steps, 40 * kMs, 50 * kMs), 0.0);
  EXPECT_DOUBLE_EQ(SamplesInSpan({}, 0, 1), 0.0);
}

TEST(DdpAnalysisTest, OwnStepTimeLeavesOutReportedCommunicationOnly) {
  EXPECT_DOUBLE_EQ(OwnStepNs(Step(0, 10, 1, 3)), 7.0 * kMs);
  record::StepRecord unflagged = Step(0, 10, 1);
  unflagged.comm_ns = 3 * kMs;  // no kHasComm bit: absent, not 3 ms
  EXPECT_DOUBLE_EQ(OwnStepNs(unflagged), 10.0 * kMs);
}

TEST(DdpAnalysisTest, RankFiguresUseRankZerosSpanForEveryRank) {
  // Span [0, 30] ms. Rank 0: 6 samples / 0.03 s = 200/s, 3 steps inside, own 6 ms.
  // Rank 1: 2 + 2 + half of [25, 35) = 5 samples / 0.03 s = 166.67/s, 2 steps inside, own 8 ms.
  const std::vector<RankFigures> ranks = RankFiguresInSpan(TwoRanks(), 0, 30 * kMs);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].rank, 0u);
  EXPECT_DOUBLE_EQ(ranks[0].samples_per_s, 200.0);
  EXPECT_EQ(ranks[0].steps_inside, 3);
  EXPECT_DOUBLE_EQ(*ranks[0].own_step_mean_ns, 6.0 * kMs);
  EXPECT_EQ(ranks[1].rank, 1u);
  EXPECT_NEAR(ranks[1].samples_per_s, 5 / 0.03, 1e-9);
  EXPECT_EQ(ranks[1].steps_inside, 2);
  EXPECT_DOUBLE_EQ(*ranks[1].own_step_mean_ns, 8.0 * kMs);

  // Rank 1 is 2 ms slower than rank 0: 2 / 6 = 33.3%.
  const std::optional<Straggler> s = FindStraggler(ranks);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->slowest_rank, 1u);
  EXPECT_EQ(s->fastest_rank, 0u);
  EXPECT_DOUBLE_EQ(s->lag_ns, 2.0 * kMs);
  EXPECT_NEAR(s->lag_pct, 100.0 / 3.0, 1e-9);
}

TEST(DdpAnalysisTest, NoStragglerWithoutTwoRanksAndTiesGoToTheLowerRank) {
  EXPECT_FALSE(FindStraggler({}));
  EXPECT_FALSE(FindStraggler({{0, 100, 3, 5.0}}));
  EXPECT_FALSE(FindStraggler({{0, 100, 3, 5.0}, {1, 0, 0, std::nullopt}})) << "rank 1 has no step inside";
  EXPECT_FALSE(FindStraggler({{0, 100, 3, 0.0}, {1, 100, 3, 0.0}})) << "no time to be slower than";
  const std::optional<Straggler> tie = FindStraggler({{2, 100, 3, 5.0}, {0, 100, 3, 5.0}, {1, 100, 3, 5.0}});
  ASSERT_TRUE(tie);
  EXPECT_EQ(tie->slowest_rank, 0u);
  EXPECT_EQ(tie->fastest_rank, 0u);
  EXPECT_DOUBLE_EQ(tie->lag_ns, 0.0);
}

TEST(DdpAnalysisTest, CommunicationShareMeanOverlapAndBusBandwidth) {
  // 3 x 4 ms of 3 x 10 ms.
  const std::vector<record::StepRecord> steps = {Step(0, 10, 1, 4), Step(10, 20, 1, 4), Step(20, 30, 1, 4),
                                                 Step(30, 40, 1)};
  EXPECT_DOUBLE_EQ(*CommShare(steps), 0.4) << "steps without comm_ns are not counted";
  EXPECT_DOUBLE_EQ(*CommMeanNs(steps), 4.0 * kMs);
  EXPECT_FALSE(CommShare({Step(0, 10, 1)}));
  EXPECT_FALSE(CommMeanNs({}));
  EXPECT_FALSE(CommShare({Step(5, 5, 1, 0)})) << "no time";

  EXPECT_DOUBLE_EQ(*OverlapFraction(3.0, 4.0), 0.25);
  EXPECT_DOUBLE_EQ(*OverlapFraction(5.0, 4.0), -0.25) << "not clamped";
  EXPECT_FALSE(OverlapFraction(1.0, 0.0));

  // nccl-tests: busbw = algbw x 2 (n - 1) / n.
  EXPECT_DOUBLE_EQ(AllReduceBusBandwidth(100.0, 1), 0.0);
  EXPECT_DOUBLE_EQ(AllReduceBusBandwidth(100.0, 2), 100.0);
  EXPECT_DOUBLE_EQ(AllReduceBusBandwidth(100.0, 4), 150.0);
  EXPECT_DOUBLE_EQ(AllReduceBusBandwidth(100.0, 8), 175.0);
}

TEST(DdpAnalysisTest, ASerialCellGetsItsOwnFigures) {
  record::CellRecord cell = DdpCell("serial", 2);
  AddDdpFigures(cell);
  // 200/s + 166.67/s over rank 0's [0, 30] ms.
  EXPECT_NEAR(*record::MetricValue(cell, metric::kDdpGlobalSamplesPerS), 200.0 + 5 / 0.03, 1e-9);
  EXPECT_EQ(*record::MetricValue(cell, metric::kDdpSlowestRank), 1.0);
  EXPECT_DOUBLE_EQ(*record::MetricValue(cell, metric::kDdpStragglerLagNs), 2.0 * kMs);
  EXPECT_DOUBLE_EQ(*record::MetricValue(cell, metric::kDdpAllreduceMeanNs), 4.0 * kMs);
  EXPECT_DOUBLE_EQ(*record::MetricValue(cell, metric::kDdpAllreduceSharePct), 40.0);
  const nlohmann::json& x = cell.extras.at(record::kDdpScalingExtrasKey);
  EXPECT_DOUBLE_EQ(x.at("span_s").get<double>(), 0.03);
  ASSERT_EQ(x.at("ranks").size(), 2u);
  EXPECT_EQ(x.at("ranks")[1].at("steps_inside"), 2);
}

TEST(DdpAnalysisTest, TheWindowDecidesTheSpan) {
  record::CellRecord cell = DdpCell("overlap", 2);
  cell.window = record::MeasuredWindow{1, 2};  // rank 0's [10, 30] ms
  AddDdpFigures(cell);
  // Rank 0: 4 samples / 0.02 s = 200/s. Rank 1: half of [5, 15) + [15, 25) + half of [25, 35) = 4
  // samples: 200/s.
  EXPECT_NEAR(*record::MetricValue(cell, metric::kDdpGlobalSamplesPerS), 400.0, 1e-9);
  EXPECT_FALSE(record::MetricValue(cell, metric::kDdpAllreduceSharePct))
      << "overlap has no separate all-reduce";
}

TEST(DdpAnalysisTest, ComparisonsWithTheRunsReferenceCells) {
  record::CellRecord cell = DdpCell("overlap", 2);
  AddDdpFigures(cell);
  const record::CellRecord single = Reference("one#r0", metric::kDdpGlobalSamplesPerS, 200.0);
  const record::CellRecord compute = Reference("co#r0", metric::kStepTimeMeanNs, 6.5 * kMs);
  const record::CellRecord serial = Reference("se#r0", metric::kDdpAllreduceMeanNs, 5.0 * kMs);
  AddDdpComparisons(cell, {"one#r0", &single, "co#r0", &compute, "se#r0", &serial});
  // Speedup (200 + 166.67) / 200 = 1.8333; efficiency 1.8333 / 2 = 91.67%.
  EXPECT_NEAR(*record::MetricValue(cell, metric::kDdpSpeedup), (200.0 + 5 / 0.03) / 200.0, 1e-12);
  EXPECT_NEAR(*record::MetricValue(cell, metric::kDdpScalingEfficiencyPct), (200.0 + 5 / 0.03) / 4.0, 1e-9);
  // Exposed 10 - 6.5 = 3.5 ms; overlap 1 - 3.5 / 5 = 30%.
  EXPECT_DOUBLE_EQ(*record::MetricValue(cell, metric::kDdpExposedCommNs), 3.5 * kMs);
  EXPECT_NEAR(*record::MetricValue(cell, metric::kDdpOverlapPct), 30.0, 1e-9);
  const nlohmann::json& x = cell.extras.at(record::kDdpScalingExtrasKey);
  EXPECT_EQ(x.at("efficiency").at("control_cell"), "one#r0");
  EXPECT_EQ(x.at("efficiency").at("control_label"), "one#r0 label");
  EXPECT_EQ(x.at("exposed").at("compute_only_cell"), "co#r0");
  EXPECT_EQ(x.at("overlap").at("serial_cell"), "se#r0");
  EXPECT_FALSE(x.at("efficiency").contains("why_none"));
}

TEST(DdpAnalysisTest, AWorldSizeOneControlWithOnlySamplesPerSecondIsUsed) {
  record::CellRecord cell = DdpCell("compute_only", 2);
  AddDdpFigures(cell);
  const record::CellRecord single = Reference("one#r0", metric::kSamplesPerS, 250.0);
  AddDdpComparisons(cell, {"one#r0", &single, "", nullptr, "", nullptr});
  EXPECT_NEAR(*record::MetricValue(cell, metric::kDdpSpeedup), (200.0 + 5 / 0.03) / 250.0, 1e-12);
  const nlohmann::json& x = cell.extras.at(record::kDdpScalingExtrasKey);
  EXPECT_FALSE(x.contains("exposed")) << "a compute-only cell is the reference, not compared";
  EXPECT_FALSE(record::MetricValue(cell, metric::kDdpExposedCommNs));
}

TEST(DdpAnalysisTest, SaysWhyWhenAReferenceIsMissingOrFailed) {
  record::CellRecord cell = DdpCell("overlap", 2);
  AddDdpFigures(cell);
  record::CellRecord crashed = Reference("co#r0", metric::kStepTimeMeanNs, 1.0);
  crashed.outcome = record::Outcome::kCrashed;
  AddDdpComparisons(cell, {"", nullptr, "co#r0", &crashed, "se#r0", nullptr});
  EXPECT_FALSE(record::MetricValue(cell, metric::kDdpScalingEfficiencyPct));
  EXPECT_FALSE(record::MetricValue(cell, metric::kDdpExposedCommNs));
  EXPECT_FALSE(record::MetricValue(cell, metric::kDdpOverlapPct));
  const nlohmann::json& x = cell.extras.at(record::kDdpScalingExtrasKey);
  const std::string efficiency = x.at("efficiency").at("why_none");
  EXPECT_NE(efficiency.find("the run has no world_size 1 cell"), std::string::npos) << efficiency;
  EXPECT_NE(efficiency.find("add 1 to the world_size axis"), std::string::npos) << efficiency;
  const std::string exposed = x.at("exposed").at("why_none");
  EXPECT_NE(exposed.find("ended crashed"), std::string::npos) << exposed;
  const std::string overlap = x.at("overlap").at("why_none");
  EXPECT_NE(overlap.find("did not run in this invocation"), std::string::npos) << overlap;
}

TEST(DdpAnalysisTest, LeavesCellsThatAreNotOkDdpCellsAlone) {
  record::CellRecord failed = DdpCell("serial", 2);
  failed.outcome = record::Outcome::kError;
  AddDdpFigures(failed);
  AddDdpComparisons(failed, {});
  EXPECT_FALSE(failed.extras.contains(record::kDdpScalingExtrasKey));
  record::CellRecord plain = DdpCell("serial", 2);
  plain.params["strategy"] = "none";
  AddDdpFigures(plain);
  EXPECT_FALSE(record::MetricValue(plain, metric::kDdpGlobalSamplesPerS));
  record::CellRecord no_window = DdpCell("serial", 2);
  no_window.window.reset();
  AddDdpFigures(no_window);
  EXPECT_FALSE(record::MetricValue(no_window, metric::kDdpGlobalSamplesPerS));
}

TEST(DdpAnalysisTest, AnAllreduceCellGetsNcclTestsBandwidths) {
  record::CellRecord cell = DdpCell("overlap", 4);
  cell.params["model"] = "allreduce";
  cell.params["allreduce_bytes"] = 1'000'000;
  record::SetMetric(cell, metric::kStepTimeMeanNs, 2.0 * kMs);
  AddDdpFigures(cell);
  AddDdpComparisons(cell, {});
  // 1e6 bytes / 2 ms = 5e8 bytes/s; x 2 x 3 / 4 = 7.5e8.
  EXPECT_DOUBLE_EQ(*record::MetricValue(cell, metric::kAllreduceAlgbwBytesPerS), 5e8);
  EXPECT_DOUBLE_EQ(*record::MetricValue(cell, metric::kAllreduceBusbwBytesPerS), 7.5e8);
  EXPECT_FALSE(record::MetricValue(cell, metric::kDdpGlobalSamplesPerS));
  EXPECT_FALSE(cell.extras.at(record::kDdpScalingExtrasKey).contains("efficiency"));
  // What the runner ran wins over the parameter.
  cell.effective = {{"allreduce", {{"bytes", 2'000'000}}}};
  AddDdpFigures(cell);
  EXPECT_DOUBLE_EQ(*record::MetricValue(cell, metric::kAllreduceAlgbwBytesPerS), 1e9);
}

}  // namespace
}  // namespace dlbench::orchestrator
