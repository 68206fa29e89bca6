#include "report/load_report.h"

#include <gtest/gtest.h>

#include <string>

namespace dlbench::report {
namespace {

using nlohmann::json;

record::CellRecord PeakCell() {
  record::CellRecord c;
  c.index = 3;
  c.label = "server resnet";
  c.outcome = record::Outcome::kOk;
  c.extras["load"] = {
      {"scenario", "server"},
      {"latency_percentile", 0.99},
      {"latency_bound_ms", 10.0},
      {"peak_search",
       {{"end", "converged"},
        {"peak_qps", 766.0},
        {"lowest_failing_qps", 800.0},
        {"probes",
         json::array({{{"target_qps", 100.0}, {"latency_at_percentile_ms", 1.5}, {"valid", true}},
                      {{"target_qps", 1600.0}, {"latency_at_percentile_ms", 250.0}, {"valid", false}},
                      {{"target_qps", 800.0}, {"latency_at_percentile_ms", 12.5}, {"valid", false}},
                      {{"target_qps", 766.0}, {"latency_at_percentile_ms", 9.1}, {"valid", true}},
                      {{"target_qps", 3200.0}, {"latency_at_percentile_ms", nullptr}, {"valid", false}}})}}}};
  return c;
}

const json* Dataset(const json& chart, const std::string& label_prefix) {
  for (const json& ds : chart["datasets"])
    if (ds["label"].get<std::string>().rfind(label_prefix, 0) == 0) return &ds;
  return nullptr;
}

TEST(PeakSearchChartsTest, ProbesAreSplitByTheirVerdictWithTheBoundAndThePeakDrawn) {
  std::vector<json> charts;
  PeakSearchCharts({PeakCell()}, charts);
  ASSERT_EQ(charts.size(), 1u);
  const json& chart = charts[0];
  EXPECT_EQ(chart["section"], "latency");
  EXPECT_EQ(chart["title"], "cell 3: server resnet (peak search)");
  EXPECT_EQ(chart["y"]["label"], "p99 latency (ms)");
  const json* passed = Dataset(chart, "probes within");
  const json* failed = Dataset(chart, "probes that failed");
  ASSERT_NE(passed, nullptr);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ((*passed)["data"], json::parse(R"([{"x":100.0,"y":1.5},{"x":766.0,"y":9.1}])"));
  EXPECT_EQ((*failed)["data"], json::parse(R"([{"x":1600.0,"y":250.0},{"x":800.0,"y":12.5}])"));
  const json* bound = Dataset(chart, "latency_bound_ms 10");
  ASSERT_NE(bound, nullptr);
  EXPECT_EQ((*bound)["data"], json::parse(R"([{"x":100.0,"y":10.0},{"x":1600.0,"y":10.0}])"))
      << "across the probed rates";
  const json* peak = Dataset(chart, "peak 766 queries/s");
  ASSERT_NE(peak, nullptr);
  EXPECT_EQ((*peak)["data"], json::parse(R"([{"x":766.0,"y":0.0},{"x":766.0,"y":250.0}])"));
  const std::string note = chart["note"];
  EXPECT_NE(note.find("5 probes (converged)"), std::string::npos) << note;
  EXPECT_NE(note.find("Peak 766 queries/s, lowest failing 800."), std::string::npos) << note;
  EXPECT_NE(note.find("Not drawn: 1 probe that measured no query."), std::string::npos) << note;
}

TEST(PeakSearchChartsTest, NoPeakNoChartForOtherCellsAndFailedCells) {
  record::CellRecord none = PeakCell();
  none.extras["load"]["peak_search"]["peak_qps"] = nullptr;
  for (json& p : none.extras["load"]["peak_search"]["probes"]) p["valid"] = false;
  std::vector<json> charts;
  PeakSearchCharts({none}, charts);
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(Dataset(charts[0], "probes within"), nullptr);
  EXPECT_EQ(Dataset(charts[0], "peak "), nullptr);
  EXPECT_NE(charts[0]["note"].get<std::string>().find("No probed rate met the bound."), std::string::npos);

  record::CellRecord server = PeakCell();
  server.extras["load"].erase("peak_search");
  record::CellRecord crashed = PeakCell();
  crashed.outcome = record::Outcome::kCrashed;
  charts.clear();
  PeakSearchCharts({server, crashed, record::CellRecord{}}, charts);
  EXPECT_TRUE(charts.empty());
}

}  // namespace
}  // namespace dlbench::report
