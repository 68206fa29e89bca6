// The scaling chart on hand-made ddp cells: measured global samples/s over world sizes, the ideal
// line from the world_size 1 cell, each point's figures in the note; none for one world size.
#include "report/scaling_charts.h"

#include <gtest/gtest.h>

#include "record/metrics.h"
#include "record/outcome.h"

namespace dlbench::report {
namespace {

using nlohmann::json;

record::CellRecord Ddp(int world, double global) {
  record::CellRecord c;
  c.outcome = record::Outcome::kOk;
  c.params = {{"model", "resnet50"}, {"strategy", "ddp"}, {"world_size", world}, {"ddp_mode", "serial"}};
  record::SetMetric(c, record::metric::kDdpGlobalSamplesPerS, global);
  return c;
}

TEST(ScalingChartsTest, MeasuredAgainstIdealWithEachPointsFigures) {
  std::vector<record::CellRecord> cells = {Ddp(4, 340), Ddp(1, 100), Ddp(2, 180)};
  record::SetMetric(cells[0], record::metric::kDdpScalingEfficiencyPct, 85);
  record::SetMetric(cells[0], record::metric::kDdpAllreduceSharePct, 12.5);
  record::SetMetric(cells[2], record::metric::kDdpScalingEfficiencyPct, 90);
  std::vector<json> charts;
  ScalingCharts(cells, charts);
  ASSERT_EQ(charts.size(), 1u);
  const json& chart = charts[0];
  EXPECT_EQ(chart["section"], "scaling");
  EXPECT_EQ(chart["title"], "ddp_mode=serial model=resnet50 strategy=ddp");
  const json& measured = chart["datasets"][0]["data"];
  ASSERT_EQ(measured.size(), 3u);
  EXPECT_EQ(measured[0], (json{{"x", 1.0}, {"y", 100.0}}));
  EXPECT_EQ(measured[2], (json{{"x", 4.0}, {"y", 340.0}}));
  const json& ideal = chart["datasets"][1];
  EXPECT_EQ(ideal["kind"], "vline") << "dashed";
  EXPECT_EQ(ideal["data"], (json::array({{{"x", 1.0}, {"y", 100.0}}, {{"x", 4.0}, {"y", 400.0}}})));
  const std::string note = chart["note"];
  EXPECT_NE(note.find("2 ranks: efficiency 90%. 4 ranks: efficiency 85%, all-reduce 12.5% of the step."),
            std::string::npos)
      << note;
}

TEST(ScalingChartsTest, NoIdealWithoutAWorldSizeOneCellAndNoChartForOneWorldSize) {
  std::vector<json> charts;
  ScalingCharts({Ddp(2, 180), Ddp(4, 340)}, charts);
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(charts[0]["datasets"].size(), 1u);
  EXPECT_NE(charts[0]["note"].get<std::string>().find("no ideal line"), std::string::npos);
  charts.clear();
  ScalingCharts({Ddp(2, 180)}, charts);
  EXPECT_TRUE(charts.empty());
}

}  // namespace
}  // namespace dlbench::report
