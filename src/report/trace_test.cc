#include "report/trace.h"

#include <gtest/gtest.h>

#include "report/test_store.h"

namespace dlbench::report {
namespace {

TEST(ParseStepRange, Forms) {
  auto full = ParseStepRange("10:20");
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->begin, 10);
  EXPECT_EQ(*full->end, 20);
  auto open_end = ParseStepRange("5:");
  ASSERT_TRUE(open_end.ok());
  EXPECT_FALSE(open_end->end.has_value());
  auto head = ParseStepRange(":3");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->begin, 0);
  EXPECT_EQ(*head->end, 3);
  for (const std::string bad : {"", ":", "5", "a:b", "5:5", "7:2", "1:2:3", "-1:4"}) {
    auto r = ParseStepRange(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
  }
}

record::CellRecord TracedCell() {
  auto cell = testing::MakeCell(1, 2, "m", 8, 10);
  cell.window = record::MeasuredWindow{1, 2};
  cell.warmup_rule = "minimum";
  const std::int64_t t0 = 5'000'000'000;
  // Rank 0: three 10 ms steps, 2 ms apart; the second reports data-wait 1 ms, compute 7 ms, comm 1 ms.
  cell.steps.push_back({0, record::StepRecord{t0, t0 + 10'000'000, 0, 0, 0, 8, 0}});
  cell.steps.push_back(
      {0, record::StepRecord{t0 + 12'000'000, t0 + 22'000'000, 1'000'000, 7'000'000, 1'000'000, 8,
                             record::kHasDataWait | record::kHasCompute | record::kHasComm}});
  cell.steps.push_back({0, record::StepRecord{t0 + 24'000'000, t0 + 34'000'000, 0, 0, 0, 8, 0}});
  cell.steps.push_back({1, record::StepRecord{t0 + 1'000, t0 + 9'000'000, 0, 0, 0, 8, 0}});
  cell.series = {{t0 + 5'000'000, "gpu0.sm_util_pct", 95},
                 {t0 + 11'000'000, "gpu0.sm_util_pct", 3},
                 {t0 + 90'000'000, "gpu0.sm_util_pct", 0}};
  return cell;
}

std::vector<nlohmann::json> EventsOf(const nlohmann::json& trace, const std::string& ph) {
  std::vector<nlohmann::json> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == ph) out.push_back(e);
  }
  return out;
}

TEST(BuildTrace, StepsPhasesCountersAndWarmupMarker) {
  record::RunRecord run;
  run.id = 1;
  const nlohmann::json trace = BuildTrace(run, {TracedCell()}, {});
  EXPECT_EQ(trace["displayTimeUnit"], "ms");
  const auto spans = EventsOf(trace, "X");
  // 4 steps + 3 phases.
  ASSERT_EQ(spans.size(), 7u);
  const auto& first = spans[0];
  EXPECT_EQ(first["name"], "step 0");
  EXPECT_EQ(first["cat"], "warmup");
  EXPECT_EQ(first["pid"], 3);
  EXPECT_EQ(first["tid"], 0);
  EXPECT_DOUBLE_EQ(first["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(first["dur"].get<double>(), 10000.0);
  const auto& second = spans[1];
  EXPECT_EQ(second["cat"], "step");
  EXPECT_DOUBLE_EQ(second["ts"].get<double>(), 12000.0);
  EXPECT_EQ(spans[2]["name"], "data_wait");
  EXPECT_DOUBLE_EQ(spans[2]["ts"].get<double>(), 12000.0);
  EXPECT_DOUBLE_EQ(spans[2]["dur"].get<double>(), 1000.0);
  EXPECT_EQ(spans[3]["name"], "compute");
  EXPECT_DOUBLE_EQ(spans[3]["ts"].get<double>(), 13000.0);
  EXPECT_EQ(spans[4]["name"], "comm");
  EXPECT_DOUBLE_EQ(spans[4]["ts"].get<double>(), 20000.0);
  EXPECT_EQ(spans[6]["tid"], 1);
  EXPECT_DOUBLE_EQ(spans[6]["ts"].get<double>(), 1.0);

  const auto counters = EventsOf(trace, "C");
  ASSERT_EQ(counters.size(), 2u);  // the sample after the last step is outside the window
  EXPECT_EQ(counters[0]["name"], "gpu0.sm_util_pct");
  EXPECT_DOUBLE_EQ(counters[1]["ts"].get<double>(), 11000.0);
  EXPECT_EQ(counters[1]["args"]["value"], 3.0);

  const auto instants = EventsOf(trace, "i");
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_DOUBLE_EQ(instants[0]["ts"].get<double>(), 12000.0);

  bool named = false;
  for (const auto& m : EventsOf(trace, "M")) {
    if (m["name"] == "process_name") named = m["args"]["name"] == "cell 2: m train bs=8";
  }
  EXPECT_TRUE(named);
}

// The torch runner declares the rest of its step to be the host-to-device copy: it is drawn
// between the wait and the compute. Without the declaration the rest stays unnamed.
TEST(BuildTrace, ARemainderDeclaredAsCopyIsDrawnBetweenWaitAndCompute) {
  auto cell = testing::MakeCell(1, 2, "m", 8, 10);
  cell.window = record::MeasuredWindow{0, 1};
  const std::int64_t t0 = 7'000'000'000;
  cell.steps.push_back({0, record::StepRecord{t0, t0 + 10'000'000, 1'000'000, 6'000'000, 0, 8,
                                              record::kHasDataWait | record::kHasCompute}});
  record::RunRecord run;
  run.id = 1;
  auto plain = EventsOf(BuildTrace(run, {cell}, {}), "X");
  ASSERT_EQ(plain.size(), 3u) << "step, data_wait, compute";
  cell.effective["step_phases"] = {{"remainder", "copy"}};
  const auto spans = EventsOf(BuildTrace(run, {cell}, {}), "X");
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(spans[1]["name"], "data_wait");
  EXPECT_EQ(spans[2]["name"], "copy");
  EXPECT_DOUBLE_EQ(spans[2]["ts"].get<double>(), 1000.0);
  EXPECT_DOUBLE_EQ(spans[2]["dur"].get<double>(), 3000.0);
  EXPECT_EQ(spans[3]["name"], "compute");
  EXPECT_DOUBLE_EQ(spans[3]["ts"].get<double>(), 4000.0);
  EXPECT_DOUBLE_EQ(spans[3]["dur"].get<double>(), 6000.0);
}

TEST(BuildTrace, StepWindowLimitsSpansAndCounters) {
  record::RunRecord run;
  TraceOptions options;
  options.steps = StepRange{2, 3};
  const nlohmann::json trace = BuildTrace(run, {TracedCell()}, options);
  const auto spans = EventsOf(trace, "X");
  ASSERT_EQ(spans.size(), 1u);  // rank 0's step 2; rank 1 has only step 0
  EXPECT_EQ(spans[0]["name"], "step 2");
  // Times stay relative to the cell's first step, so windows of one cell line up.
  EXPECT_DOUBLE_EQ(spans[0]["ts"].get<double>(), 24000.0);
  EXPECT_TRUE(EventsOf(trace, "C").empty());  // no sample inside [24 ms, 34 ms]
  EXPECT_TRUE(EventsOf(trace, "i").empty());
}

TEST(BuildTrace, PhasesAreClippedToTheirStep) {
  auto cell = testing::MakeCell(1, 0, "m", 1, 1);
  cell.steps.push_back({0, record::StepRecord{0, 1000, 0, 5000, 0, 1, record::kHasCompute}});
  const nlohmann::json trace = BuildTrace({}, {cell}, {});
  const auto spans = EventsOf(trace, "X");
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_DOUBLE_EQ(spans[1]["dur"].get<double>(), 1.0);
}

TEST(BuildTrace, NoCellsIsAnEmptyValidTrace) {
  const nlohmann::json trace = BuildTrace({}, {}, {});
  EXPECT_TRUE(trace["traceEvents"].is_array());
  EXPECT_TRUE(trace["traceEvents"].empty());
}

}  // namespace
}  // namespace dlbench::report
