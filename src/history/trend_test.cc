#include "history/trend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "history/test_runs.h"

namespace dlbench::history {
namespace {

using testing::CellSpec;
using ::testing::HasSubstr;
using testing::TempStore;

TEST(HistoryTrendFilter, ParsesTermsAndMatchesByValueType) {
  auto filter = ParseTrendFilter({"model=resnet50", "batch_size=32", "amp=true"});
  ASSERT_TRUE(filter.ok());
  ASSERT_EQ(filter->terms.size(), 3u);
  EXPECT_EQ(filter->terms[1].first, "batch_size");
  EXPECT_EQ(filter->terms[1].second, "32");
  EXPECT_TRUE(MatchesFilter(*filter, {{"model", "resnet50"}, {"batch_size", 32}, {"amp", true}, {"x", 1}}));
  EXPECT_TRUE(MatchesFilter(*filter, {{"model", "resnet50"}, {"batch_size", 32.0}, {"amp", true}}));
  EXPECT_FALSE(MatchesFilter(*filter, {{"model", "resnet50"}, {"batch_size", 64}, {"amp", true}}));
  EXPECT_FALSE(MatchesFilter(*filter, {{"model", "resnet50"}, {"batch_size", "32x"}, {"amp", true}}));
  EXPECT_FALSE(MatchesFilter(*filter, {{"model", "resnet50"}, {"amp", true}}));  // missing parameter
  EXPECT_TRUE(MatchesFilter(TrendFilter{}, {{"anything", 1}}));

  auto no_eq = ParseTrendFilter({"resnet50"});
  ASSERT_FALSE(no_eq.ok());
  EXPECT_EQ(no_eq.error().kind, ErrorKind::kInvalidInput);
  EXPECT_THAT(no_eq.error().message, HasSubstr("name=value"));
  EXPECT_FALSE(ParseTrendFilter({"=x"}).ok());
  EXPECT_TRUE(ParseTrendFilter({"note="}).ok());  // an empty value is a value
}

TEST(HistoryTrend, SparklineByHand) {
  EXPECT_EQ(Sparkline({1, 2, 3, 4, 5, 6, 7, 8}), "▁▂▃▄▅▆▇█");
  EXPECT_EQ(Sparkline({5, 5, 5}), "▄▄▄");
  EXPECT_EQ(Sparkline({}), "");
  EXPECT_EQ(Sparkline({10, 0}), "█▁");
  EXPECT_EQ(Sparkline({42}), "▄");
}

// 24 runs of one cell: 12 at 2.0 ms, then 12 at 2.2 ms (throughput -9.1%), with an environment
// change at the step. The trend has one change point, at run 13, dated and with its cause named.
TEST(HistoryTrend, FindsAndDatesALevelShiftAndNamesTheEnvironmentChange) {
  TempStore db;
  const nlohmann::json before = {{"os", "linux"}, {"torch", "2.2.0"}};
  const nlohmann::json after = {{"os", "linux"}, {"torch", "2.3.0"}};
  std::vector<std::int64_t> runs;
  for (int r = 0; r < 24; ++r) {
    CellSpec a;
    a.model = "a";
    a.step_ms = r < 12 ? 2.0 : 2.2;
    a.seed = 100 + static_cast<std::uint64_t>(r);
    CellSpec b;  // filtered out
    b.model = "b";
    b.seed = 200 + static_cast<std::uint64_t>(r);
    CellSpec crashed = a;  // a second repetition that failed: not part of the point
    crashed.repetition = 1;
    crashed.outcome = record::Outcome::kCrashed;
    runs.push_back(db.AddRun({a, b, crashed}, r < 12 ? before : after));
  }
  auto filter = ParseTrendFilter({"model=a"});
  ASSERT_TRUE(filter.ok());
  auto trends = LoadTrends(db.store(), *filter, TrendOptions{});
  ASSERT_TRUE(trends.ok()) << trends.error().message;
  ASSERT_EQ(trends->size(), 1u);
  const CellTrend& t = (*trends)[0];
  EXPECT_EQ(t.key, "model=a");
  ASSERT_EQ(t.points.size(), 24u);
  EXPECT_EQ(t.points.front().run_id, runs.front());  // oldest first
  EXPECT_EQ(t.points[0].repetitions, 1);
  ASSERT_EQ(t.change_points.size(), 1u);
  const ChangePoint& cp = t.change_points[0];
  EXPECT_EQ(cp.index, 12u);
  EXPECT_EQ(cp.run_id, runs[12]);
  EXPECT_EQ(cp.started_wall_ns, t.points[12].started_wall_ns);
  EXPECT_NEAR(cp.relative_change, 2.0 / 2.2 - 1, 0.01);
  EXPECT_TRUE(t.points[12].starts_new_level);
  EXPECT_FALSE(t.points[11].starts_new_level);
  ASSERT_FALSE(cp.environment_changes.empty());
  EXPECT_THAT(cp.environment_changes[0], HasSubstr("2.2.0 -> 2.3.0"));

  const std::string table = FormatTrendTable(*trends, Metric::kThroughput);
  EXPECT_THAT(table, HasSubstr("throughput (samples/s)"));
  EXPECT_THAT(table, HasSubstr("▁"));
  EXPECT_THAT(table, HasSubstr("█"));
  EXPECT_THAT(table, HasSubstr("1 change point"));
  EXPECT_THAT(table, HasSubstr("<- new level -9."));
  EXPECT_THAT(table, HasSubstr("2026-01-13T00:00:00Z"));  // run 13 started 12 days after 2026-01-01

  const std::string csv = FormatTrendCsv(*trends, Metric::kThroughput);
  EXPECT_THAT(csv, HasSubstr("key,label,run_id,"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 25);
  EXPECT_THAT(csv, HasSubstr(",true,-0.09"));

  const nlohmann::json j = TrendsToJson(*trends, Metric::kStepTime);
  EXPECT_EQ(j[0]["points"].size(), 24u);
  EXPECT_EQ(j[0]["change_points"][0]["run_id"], runs[12]);
  EXPECT_EQ(j[0]["change_points"][0]["started_utc"], "2026-01-13T00:00:00Z");
}

TEST(HistoryTrend, AStableHistoryHasNoChangePointAndStepTimeIsInMilliseconds) {
  TempStore db;
  for (int r = 0; r < 15; ++r) {
    CellSpec a;
    a.seed = 300 + static_cast<std::uint64_t>(r);
    db.AddRun({a});
  }
  TrendOptions options;
  options.metric = Metric::kStepTime;
  auto trends = LoadTrends(db.store(), TrendFilter{}, options);
  ASSERT_TRUE(trends.ok());
  ASSERT_EQ(trends->size(), 1u);
  EXPECT_TRUE((*trends)[0].change_points.empty());
  EXPECT_NEAR((*trends)[0].points[0].value, 2.0, 0.01);
}

TEST(HistoryTrend, IgnoredParametersJoinOneCellAcrossADeliberateChange) {
  TempStore db;
  for (int r = 0; r < 16; ++r) {
    CellSpec a;
    a.step_ms_in_params = true;
    a.step_ms = r < 8 ? 2.0 : 2.4;
    a.seed = 400 + static_cast<std::uint64_t>(r);
    db.AddRun({a});
  }
  auto apart = LoadTrends(db.store(), TrendFilter{}, TrendOptions{});
  ASSERT_TRUE(apart.ok());
  EXPECT_EQ(apart->size(), 2u);
  TrendOptions options;
  options.ignore_params = {"step_ms"};
  auto joined = LoadTrends(db.store(), TrendFilter{}, options);
  ASSERT_TRUE(joined.ok());
  ASSERT_EQ(joined->size(), 1u);
  EXPECT_EQ((*joined)[0].key, "model=a");
  ASSERT_EQ((*joined)[0].change_points.size(), 1u);
  EXPECT_EQ((*joined)[0].change_points[0].index, 8u);
  EXPECT_TRUE((*joined)[0].change_points[0].environment_changes.empty());
}

TEST(HistoryTrend, CsvQuotesFieldsWithCommasAndNoMatchSaysSo) {
  CellTrend t;
  t.key = "batch=8,model=a";
  t.label = "a \"big\"";
  TrendPoint p;
  p.run_id = 3;
  p.value = 1.5;
  p.tags = {"baseline", "nightly"};
  t.points.push_back(p);
  const std::string csv = FormatTrendCsv({t}, Metric::kThroughput);
  EXPECT_THAT(csv, HasSubstr("\"batch=8,model=a\",\"a \"\"big\"\"\",3,,baseline;nightly,"));
  EXPECT_EQ(FormatTrendTable({}, Metric::kThroughput), "no stored cell matches the filter\n");
  EXPECT_FALSE(ParseTrendFormat("xml").ok());
}

}  // namespace
}  // namespace dlbench::history
