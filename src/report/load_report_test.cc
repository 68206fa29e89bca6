#include "report/load_report.h"

#include <gtest/gtest.h>

#include <string>

#include "record/metrics.h"

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

// Two load cells with a decomposition (one timing H2D/compute/D2H, one compute only), a load cell
// without one and a plain cell: one bar chart, a bar per decomposed cell, a dataset per part some
// cell carries, null where a cell does not carry the part, values in ms.
TEST(LatencyDecompositionChartTest, OneStackedBarPerDecomposedLoadCell) {
  auto load_cell = [](int index, const std::string& label) {
    record::CellRecord c;
    c.index = index;
    c.label = label;
    c.outcome = record::Outcome::kOk;
    c.extras["load"] = {{"scenario", "server"}};
    return c;
  };
  record::CellRecord gpu = load_cell(0, "resnet server");
  record::SetMetric(gpu, record::metric::kQueryQueueMeanNs, 500'000);
  record::SetMetric(gpu, record::metric::kQueryH2dMeanNs, 100'000);
  record::SetMetric(gpu, record::metric::kQueryComputeMeanNs, 2'000'000);
  record::SetMetric(gpu, record::metric::kQueryD2hMeanNs, 50'000);
  record::CellRecord null_runner = load_cell(1, "null single");
  record::SetMetric(null_runner, record::metric::kQueryQueueMeanNs, 0);
  record::SetMetric(null_runner, record::metric::kQueryComputeMeanNs, 2'010'000);
  record::CellRecord bare = load_cell(2, "no parts");
  record::CellRecord plain;
  plain.index = 3;
  plain.outcome = record::Outcome::kOk;
  record::SetMetric(plain, record::metric::kQueryComputeMeanNs, 1);

  std::vector<json> charts;
  LatencyDecompositionChart({gpu, null_runner, bare, plain}, charts);
  ASSERT_EQ(charts.size(), 1u);
  const json& chart = charts[0];
  EXPECT_EQ(chart["type"], "bar");
  EXPECT_EQ(chart["section"], "latency");
  EXPECT_EQ(chart["title"], "Latency decomposition (2 load cells)");
  EXPECT_EQ(chart["labels"], json::array({"cell 0: resnet server", "cell 1: null single"}));
  ASSERT_EQ(chart["datasets"].size(), 4u) << "queue, H2D, compute, D2H: no cell times pre or post";
  const json* queue = Dataset(chart, "queue");
  ASSERT_NE(queue, nullptr);
  EXPECT_EQ((*queue)["data"], json::array({0.5, 0.0}));
  const json* h2d = Dataset(chart, "H2D");
  ASSERT_NE(h2d, nullptr);
  EXPECT_EQ((*h2d)["data"], json::array({0.1, nullptr}));
  const json* compute = Dataset(chart, "compute");
  ASSERT_NE(compute, nullptr);
  EXPECT_EQ((*compute)["data"], json::array({2.0, 2.01}));

  charts.clear();
  LatencyDecompositionChart({bare, plain}, charts);
  EXPECT_TRUE(charts.empty()) << "no decomposed load cell, no chart";
}

}  // namespace
}  // namespace dlbench::report
