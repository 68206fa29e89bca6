#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "record/metrics.h"
#include "record/outcome.h"
#include "record/records.h"
#include "record/series.h"

namespace dlbench::record {
namespace {

template <typename E, std::size_t N, typename Parse>
void ExpectRoundTrip(const E (&all)[N], Parse parse) {
  std::set<std::string_view> names;
  for (E value : all) {
    const std::string_view name = Name(value);
    EXPECT_NE(name, "?");
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
    auto back = parse(name);
    ASSERT_TRUE(back.has_value()) << name;
    EXPECT_EQ(*back, value) << name;
  }
  EXPECT_FALSE(parse("").has_value());
  EXPECT_FALSE(parse("OK").has_value());
}

TEST(Outcome, EveryNameRoundTripsAndIsUnique) {
  ExpectRoundTrip(kAllOutcomes, ParseOutcome);
  ExpectRoundTrip(kAllVerdicts, ParseVerdict);
  ExpectRoundTrip(kAllRunStatuses, ParseRunStatus);
  ExpectRoundTrip(kAllRunnerErrorKinds, ParseRunnerErrorKind);
}

TEST(Outcome, StoredNamesAreTheOnesOlderStoresHold) {
  // Stores written before the enums held these strings; they must keep reading.
  EXPECT_EQ(Name(Outcome::kOk), "ok");
  EXPECT_EQ(Name(Outcome::kUnsupported), "unsupported");
  EXPECT_EQ(Name(Outcome::kInterrupted), "interrupted");
  EXPECT_EQ(Name(Verdict::kNotApplicable), "n/a");
  EXPECT_EQ(Name(RunStatus::kCompleted), "completed");
  EXPECT_EQ(Name(RunnerErrorKind::kInternal), "internal");
}

TEST(Outcome, VerdictNamesAreNotOutcomeNames) {
  // An outcome says how the runner ended, a verdict whether its numbers hold: no word means both.
  for (Verdict v : kAllVerdicts) EXPECT_FALSE(ParseOutcome(Name(v)).has_value()) << Name(v);
  // Stores from before the split hold "invalid" for every unusable verdict.
  EXPECT_EQ(ParseVerdict("invalid"), Verdict::kUnreliable);
}

TEST(Outcome, TheHeadlineVerdictIsTheReasonThatRanksFirst) {
  EXPECT_EQ(HeadlineVerdict({}), Verdict::kValid);
  EXPECT_EQ(HeadlineVerdict({"noisy: CI 3.4% > 2%"}), Verdict::kNoisy);
  EXPECT_EQ(HeadlineVerdict({"noisy: CI 3.4% > 2%", "drifting: +0.8 %/s"}), Verdict::kDrifting);
  EXPECT_EQ(HeadlineVerdict({"drifting: +0.8 %/s", "contended: 1.3 cores used by others"}),
            Verdict::kContended);
  EXPECT_EQ(HeadlineVerdict({"something odd"}), Verdict::kUnreliable);
  EXPECT_EQ(VerdictOfReason("valid: fine"), Verdict::kUnreliable);  // not a reason's name
  EXPECT_EQ(VerdictOfReason("leaking: host RSS grows"), Verdict::kLeaking);
  EXPECT_TRUE(IsUsable(Verdict::kValid));
  EXPECT_FALSE(IsUsable(Verdict::kNotApplicable));
  EXPECT_TRUE(IsUnreliable(Verdict::kShifted));
  EXPECT_FALSE(IsUnreliable(Verdict::kNotApplicable));
}

TEST(Outcome, JsonHoldsTheNames) {
  const nlohmann::json j = {{"outcome", Outcome::kTimeout},
                            {"verdict", Verdict::kNotApplicable},
                            {"status", RunStatus::kCompleted},
                            {"kind", RunnerErrorKind::kOom}};
  EXPECT_EQ(j.dump(), R"({"kind":"oom","outcome":"timeout","status":"completed","verdict":"n/a"})");
}

TEST(Outcome, RunnerErrorKindsMapToOutcomes) {
  EXPECT_EQ(OutcomeOf(RunnerErrorKind::kOom), Outcome::kOom);
  EXPECT_EQ(OutcomeOf(RunnerErrorKind::kUnsupported), Outcome::kUnsupported);
  EXPECT_EQ(OutcomeOf(RunnerErrorKind::kInvalid), Outcome::kError);
  EXPECT_EQ(OutcomeOf(RunnerErrorKind::kInternal), Outcome::kError);
  EXPECT_FALSE(IsFinal(Outcome::kInterrupted));
  EXPECT_TRUE(IsFinal(Outcome::kTimeout));
}

TEST(Metrics, DefinitionsAreUniqueAndComplete) {
  std::set<std::string_view> names;
  for (const auto& d : MetricDefinitions()) {
    EXPECT_TRUE(names.insert(d.name).second) << "declared twice: " << d.name;
    EXPECT_FALSE(d.formula.empty()) << d.name;
    EXPECT_FALSE(d.window.empty()) << d.name;
    EXPECT_EQ(FindMetricDef(d.name), &d);
  }
  EXPECT_EQ(MetricUnit(metric::kSamplesPerS), "1/s");
  EXPECT_EQ(MetricUnit(metric::kMfuRatio), "ratio");
}

TEST(Metrics, MemoryFieldsAreFoundUnderTheirSnapshotLabel) {
  EXPECT_EQ(MemoryMetricName(memory::kEndLabel, memory::kDeviceAllocatedPeakBytes),
            "device_allocated_peak_bytes");
  const std::string after = MemoryMetricName(memory::kAfterWarmupLabel, memory::kDeviceAllocatedPeakBytes);
  EXPECT_EQ(after, "after_warmup_device_allocated_peak_bytes");
  const MetricDef* def = FindMetricDef(after);
  ASSERT_NE(def, nullptr);
  EXPECT_EQ(def->name, memory::kDeviceAllocatedPeakBytes);
  EXPECT_EQ(FindMetricDef("_device_allocated_peak_bytes"), nullptr);
  EXPECT_EQ(FindMetricDef("xdevice_allocated_peak_bytes"), nullptr);
  // A near-miss of a real name is not declared: the torch runner once sent this spelling.
  EXPECT_EQ(FindMetricDef("device_peak_flops_per_s"), nullptr);
  EXPECT_EQ(FindMetricDef(""), nullptr);
}

TEST(Metrics, RenderedTablesNameEveryMetric) {
  const std::string md = RenderMetricsMarkdown();
  const std::string text = RenderMetricsText();
  for (const auto& d : MetricDefinitions()) {
    EXPECT_NE(md.find("`" + std::string(d.name) + "`"), std::string::npos) << d.name;
    EXPECT_NE(text.find(std::string(d.name)), std::string::npos) << d.name;
  }
}

// docs/metrics.md is generated; this fails when the table changes and the page was not regenerated.
TEST(Metrics, DocsPageIsTheRenderedTable) {
  std::ifstream in(std::string(DLBENCH_SOURCE_DIR) + "/docs/metrics.md");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), RenderMetricsMarkdown())
      << "docs/metrics.md is stale: build/bin/dlbench metrics --format markdown > docs/metrics.md";
}

TEST(Records, SetMetricTakesTheDeclaredUnitAndReplaces) {
  CellRecord cell;
  SetMetric(cell, metric::kStepTimeMeanNs, 5.0);
  SetMetric(cell, metric::kStepTimeMeanNs, 7.0);
  ASSERT_EQ(cell.metrics.size(), 1u);
  EXPECT_EQ(cell.metrics[0].unit, "ns");
  EXPECT_EQ(MetricValue(cell, metric::kStepTimeMeanNs), 7.0);
  EXPECT_FALSE(MetricValue(cell, metric::kSamplesPerS).has_value());
}

TEST(Records, MeasuredStepsFollowTheWindowOnRankZero) {
  CellRecord cell;
  for (int i = 0; i < 10; ++i) {
    cell.steps.push_back({0, StepRecord{i * 10, i * 10 + 5}});
    cell.steps.push_back({1, StepRecord{i * 10, i * 10 + 9}});
  }
  EXPECT_TRUE(MeasuredSteps(cell).empty());  // no window
  cell.window = MeasuredWindow{3, 4};
  auto steps = MeasuredSteps(cell);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps.front().start_ns, 30);
  EXPECT_EQ(steps.back().start_ns, 60);
  EXPECT_EQ(cell.warmup_steps(), 3);
  cell.window = MeasuredWindow{8, 100};  // past the stored steps: clipped
  EXPECT_EQ(MeasuredSteps(cell).size(), 2u);
  cell.window = MeasuredWindow{12, 1};
  EXPECT_TRUE(MeasuredSteps(cell).empty());
  cell.window = MeasuredWindow{-5, 2};
  EXPECT_EQ(MeasuredSteps(cell).size(), 2u);
  EXPECT_EQ(RankZeroSteps(cell).size(), 10u);
}

TEST(Series, GpuNamesRoundTrip) {
  EXPECT_EQ(series::GpuSeriesName(12, series::kPowerW), "gpu12.power_w");
  auto ref = series::ParseGpuSeriesName("gpu12.power_w");
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->index, 12);
  EXPECT_EQ(ref->field, "power_w");
  for (const char* bad :
       {"gpu.power_w", "gpux.power_w", "gpu1", "gpu1.", "host.cpu_util_pct", "gpu-1.x", ""}) {
    EXPECT_FALSE(series::ParseGpuSeriesName(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace dlbench::record
