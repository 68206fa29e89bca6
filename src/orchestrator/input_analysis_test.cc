// The orchestrator's input-bound verdict on hand-made records: the figures it stores and the
// reasons it gives none.
#include "orchestrator/input_analysis.h"

#include <gtest/gtest.h>

#include "record/metrics.h"
#include "record/outcome.h"
#include "record/series.h"

namespace dlbench::orchestrator {
namespace {

namespace metric = record::metric;

// Ten 10 ms steps, each waiting 6 ms for its batch and computing 4 ms; 400 samples/s; the GPU
// draws a constant 100 W over the whole cell and was 40% busy; 10 J in the window.
record::CellRecord WaitingCell() {
  record::CellRecord cell;
  cell.cell_id = "c#r0";
  cell.label = "host cell";
  cell.outcome = record::Outcome::kOk;
  for (int i = 0; i < 10; ++i) {
    record::StepRow row;
    row.record.start_ns = i * 10'000'000LL;
    row.record.end_ns = row.record.start_ns + 10'000'000LL;
    row.record.data_wait_ns = 6'000'000;
    row.record.compute_ns = 4'000'000;
    row.record.present = record::kHasDataWait | record::kHasCompute;
    cell.steps.push_back(row);
  }
  cell.window = record::MeasuredWindow{0, 10};
  record::SetMetric(cell, metric::kSamplesPerS, 400);
  record::SetMetric(cell, metric::kGpuUtilMeanPct, 40);
  record::SetMetric(cell, metric::kEnergyTotalJ, 10);
  record::SetMetric(cell, metric::kDataWorkerCpuUtilPct, 95);  // its one worker is saturated
  cell.series.push_back({0, "gpu0." + std::string(record::series::kPowerW), 100});
  cell.series.push_back({100'000'000LL, "gpu0." + std::string(record::series::kPowerW), 100});
  cell.effective = {{"data_workers", 1}, {"usable_cores", 2}, {"prefetch", 2}};
  return cell;
}

record::CellRecord Control(double samples_per_s) {
  record::CellRecord control;
  control.cell_id = "d#r0";
  control.label = "device cell";
  control.outcome = record::Outcome::kOk;
  record::SetMetric(control, metric::kSamplesPerS, samples_per_s);
  return control;
}

TEST(InputAnalysisTest, AWaitingCellIsInputBoundWithItsFigures) {
  record::CellRecord cell = WaitingCell();
  const record::CellRecord control = Control(1000);
  AddInputVerdict(cell, &control, control.cell_id);
  const auto& v = cell.extras.at(record::kInputVerdictExtrasKey);
  EXPECT_EQ(v.at("bound"), "input-bound") << v.dump();
  EXPECT_EQ(v.at("control_cell"), "d#r0");
  EXPECT_EQ(v.at("control_label"), "device cell");
  EXPECT_FALSE(v.at("reasons").empty());
  ASSERT_FALSE(v.at("advice").empty());
  EXPECT_NE(v.at("advice")[0].get<std::string>().find("data_workers"), std::string::npos) << v.dump();
  EXPECT_DOUBLE_EQ(*record::MetricValue(cell, metric::kInputControlSpeedup), 2.5);
  EXPECT_NEAR(*record::MetricValue(cell, metric::kInputSlowdownPct), 60.0, 1e-9);
  EXPECT_NEAR(*record::MetricValue(cell, metric::kInputWaitSharePct), 60.0, 1e-9);
  EXPECT_NEAR(*record::MetricValue(cell, metric::kInputCopySharePct), 0.0, 1e-9);
  EXPECT_NEAR(*record::MetricValue(cell, metric::kInputComputeSharePct), 40.0, 1e-9);
  EXPECT_NEAR(*record::MetricValue(cell, metric::kInputGpuIdleSharePct), 60.0, 1e-9);
  // 10 waits of 6 ms at 100 W: 6 J of the window's 10.
  EXPECT_NEAR(*record::MetricValue(cell, metric::kInputWaitingEnergyJ), 6.0, 1e-9);
  EXPECT_NEAR(*record::MetricValue(cell, metric::kInputWaitingEnergySharePct), 60.0, 1e-9);
}

TEST(InputAnalysisTest, ACellAsFastAsItsControlIsComputeBound) {
  record::CellRecord cell = WaitingCell();
  const record::CellRecord control = Control(404);  // 1% faster: within the 5% rule
  AddInputVerdict(cell, &control, control.cell_id);
  EXPECT_EQ(cell.extras.at(record::kInputVerdictExtrasKey).at("bound"), "compute-bound");
  EXPECT_TRUE(cell.extras.at(record::kInputVerdictExtrasKey).at("advice").empty());
}

TEST(InputAnalysisTest, OnlyTheMeasuredWindowCounts) {
  record::CellRecord cell = WaitingCell();
  for (int i = 0; i < 5; ++i) cell.steps[i].record.data_wait_ns = 0;  // warm-up without waits
  cell.window = record::MeasuredWindow{5, 5};
  const record::CellRecord control = Control(1000);
  AddInputVerdict(cell, &control, control.cell_id);
  EXPECT_NEAR(*record::MetricValue(cell, metric::kInputWaitSharePct), 60.0, 1e-9);
  EXPECT_NEAR(*record::MetricValue(cell, metric::kInputWaitingEnergyJ), 3.0, 1e-9);
}

record::CellRecord PipelineTwin(double samples_per_s) {
  record::CellRecord twin;
  twin.cell_id = "p#r0";
  twin.label = "pipeline cell";
  twin.outcome = record::Outcome::kOk;
  record::SetMetric(twin, metric::kSamplesPerS, samples_per_s);
  return twin;
}

TEST(InputAnalysisTest, ThePipelineOnlyTwinsRateDecidesTheAdvice) {
  {
    // The twin delivers 1200/s alone, the model takes 1000, the cell gets 400; its one worker was
    // busy half the time: it keeps up, so a deeper queue is the first thing to try.
    record::CellRecord cell = WaitingCell();
    record::SetMetric(cell, metric::kDataWorkerBusyPct, 50);
    const record::CellRecord control = Control(1000);
    const record::CellRecord twin = PipelineTwin(1200);
    AddInputVerdict(cell, &control, control.cell_id, &twin, twin.cell_id);
    const auto& v = cell.extras.at(record::kInputVerdictExtrasKey);
    EXPECT_EQ(v.at("bound"), "input-bound") << v.dump();
    EXPECT_EQ(v.at("pipeline_cell"), "p#r0");
    EXPECT_EQ(v.at("pipeline_label"), "pipeline cell");
    EXPECT_DOUBLE_EQ(v.at("pipeline_samples_per_s").get<double>(), 1200);
    ASSERT_FALSE(v.at("advice").empty());
    EXPECT_EQ(v.at("advice")[0].get<std::string>().rfind("more prefetch (2 now): the pipeline keeps up", 0),
              0U)
        << v.dump();
  }
  {
    // 300/s alone: 1 worker x 1000 / 300 -> 4 workers, more than the 2 usable cores.
    record::CellRecord cell = WaitingCell();
    const record::CellRecord control = Control(1000);
    const record::CellRecord twin = PipelineTwin(300);
    AddInputVerdict(cell, &control, control.cell_id, &twin, twin.cell_id);
    const auto& v = cell.extras.at(record::kInputVerdictExtrasKey);
    ASSERT_EQ(v.at("advice").size(), 1U) << v.dump();
    EXPECT_EQ(v.at("advice")[0],
              "cache: true, or a cheaper decode (smaller images, decoding on the GPU): at 300 samples/s per "
              "worker the model's 1000 needs about 4 workers, more than the 2 cores the runner may use");
  }
}

TEST(InputAnalysisTest, AnUnusableTwinIsAReasonAndTheVerdictStands) {
  const record::CellRecord control = Control(1000);
  {
    record::CellRecord cell = WaitingCell();
    AddInputVerdict(cell, &control, control.cell_id, nullptr, "p#r0");
    const auto& v = cell.extras.at(record::kInputVerdictExtrasKey);
    EXPECT_EQ(v.at("bound"), "input-bound");
    EXPECT_FALSE(v.contains("pipeline_samples_per_s"));
    EXPECT_NE(
        v.at("reasons").back().get<std::string>().find(
            "its pipeline_only twin p#r0 did not run in this invocation: the pipeline's own rate is unknown"),
        std::string::npos)
        << v.dump();
  }
  {
    record::CellRecord cell = WaitingCell();
    record::CellRecord twin = PipelineTwin(1200);
    twin.outcome = record::Outcome::kError;
    AddInputVerdict(cell, &control, control.cell_id, &twin, twin.cell_id);
    const auto& v = cell.extras.at(record::kInputVerdictExtrasKey);
    EXPECT_NE(v.at("reasons").back().get<std::string>().find("pipeline cell ended error"), std::string::npos)
        << v.dump();
    // Without the twin the advice is the workers' (their CPU is saturated), as before.
    EXPECT_NE(v.at("advice")[0].get<std::string>().find("more data_workers"), std::string::npos) << v.dump();
  }
  {
    record::CellRecord cell = WaitingCell();
    record::CellRecord twin = PipelineTwin(0);
    AddInputVerdict(cell, &control, control.cell_id, &twin, twin.cell_id);
    EXPECT_NE(cell.extras.at(record::kInputVerdictExtrasKey)
                  .at("reasons")
                  .back()
                  .get<std::string>()
                  .find("has no samples_per_s"),
              std::string::npos);
  }
}

TEST(InputAnalysisTest, NoConclusionIsStatedWithItsReason) {
  {
    record::CellRecord cell = WaitingCell();
    AddInputVerdict(cell, nullptr, "d#r0");
    const auto& v = cell.extras.at(record::kInputVerdictExtrasKey);
    EXPECT_TRUE(v.at("bound").is_null());
    EXPECT_NE(v.at("why_none").get<std::string>().find("did not run"), std::string::npos) << v.dump();
    EXPECT_FALSE(record::MetricValue(cell, metric::kInputControlSpeedup));
  }
  {
    record::CellRecord cell = WaitingCell();
    record::CellRecord control = Control(1000);
    control.outcome = record::Outcome::kTimeout;
    AddInputVerdict(cell, &control, control.cell_id);
    const auto& v = cell.extras.at(record::kInputVerdictExtrasKey);
    EXPECT_TRUE(v.at("bound").is_null());
    EXPECT_NE(v.at("why_none").get<std::string>().find("device cell ended timeout"), std::string::npos)
        << v.dump();
  }
  {
    record::CellRecord cell = WaitingCell();
    record::CellRecord control = Control(1000);
    control.metrics.clear();
    AddInputVerdict(cell, &control, control.cell_id);
    EXPECT_NE(cell.extras.at(record::kInputVerdictExtrasKey)
                  .at("why_none")
                  .get<std::string>()
                  .find("its control has no"),
              std::string::npos);
  }
  {
    record::CellRecord cell = WaitingCell();
    cell.outcome = record::Outcome::kError;
    const record::CellRecord control = Control(1000);
    AddInputVerdict(cell, &control, control.cell_id);
    EXPECT_FALSE(cell.extras.contains(record::kInputVerdictExtrasKey)) << "a failed cell is left as it ended";
  }
}

}  // namespace
}  // namespace dlbench::orchestrator
