// The input-pipeline chart on hand-made cells: the curve over worker counts, the control's
// ceiling, the verdicts in the note, and no chart for a single worker count.
#include "report/input_charts.h"

#include <gtest/gtest.h>

#include "record/metrics.h"
#include "record/outcome.h"

namespace dlbench::report {
namespace {

using nlohmann::json;

record::CellRecord JpegCell(int workers, double samples_per_s, const char* bound) {
  record::CellRecord c;
  c.cell_id = "jpeg" + std::to_string(workers) + "#r0";
  c.outcome = record::Outcome::kOk;
  c.params = {{"model", "resnet50"}, {"data", "jpeg_dir"}, {"data_workers", workers}};
  c.effective = {{"data_workers", workers}};
  record::SetMetric(c, record::metric::kSamplesPerS, samples_per_s);
  c.extras[record::kInputVerdictExtrasKey] = {{"bound", bound}, {"control_cell", "device#r0"}};
  return c;
}

TEST(InputChartsTest, WorkersCurveWithTheControlsCeilingAndTheVerdicts) {
  std::vector<record::CellRecord> cells;
  record::CellRecord control;
  control.cell_id = "device#r0";
  control.outcome = record::Outcome::kOk;
  control.params = {{"model", "resnet50"}, {"data", "device"}};
  record::SetMetric(control, record::metric::kSamplesPerS, 500);
  cells.push_back(control);
  cells.push_back(JpegCell(4, 490, "compute-bound"));
  cells.push_back(JpegCell(1, 150, "input-bound"));
  cells.push_back(JpegCell(2, 290, "input-bound"));
  std::vector<json> charts;
  InputCharts(cells, charts);
  ASSERT_EQ(charts.size(), 1u);
  const json& chart = charts[0];
  EXPECT_EQ(chart["section"], "input");
  EXPECT_EQ(chart["title"], "data=jpeg_dir model=resnet50");
  const json& curve = chart["datasets"][0]["data"];
  ASSERT_EQ(curve.size(), 3u);
  EXPECT_EQ(curve[0], (json{{"x", 1.0}, {"y", 150.0}}));
  EXPECT_EQ(curve[2], (json{{"x", 4.0}, {"y", 490.0}}));
  const json& ceiling = chart["datasets"][1];
  EXPECT_EQ(ceiling["kind"], "vline");
  EXPECT_EQ(ceiling["data"], (json::array({{{"x", 1.0}, {"y", 500.0}}, {{"x", 4.0}, {"y", 500.0}}})));
  const std::string note = chart["note"];
  EXPECT_NE(note.find("1 workers: input-bound. 2 workers: input-bound. 4 workers: compute-bound."),
            std::string::npos)
      << note;
  EXPECT_NE(note.find("Compute-bound from 4 workers."), std::string::npos) << note;
}

TEST(InputChartsTest, OneWorkerCountIsNoCurveAndFailedCellsAreLeftOut) {
  std::vector<record::CellRecord> cells = {JpegCell(2, 100, "input-bound"), JpegCell(4, 200, "input-bound")};
  cells[1].outcome = record::Outcome::kError;
  std::vector<json> charts;
  InputCharts(cells, charts);
  EXPECT_TRUE(charts.empty());
}

TEST(InputChartsTest, WithoutAControlTheNoteSaysThereIsNoCeiling) {
  std::vector<record::CellRecord> cells = {JpegCell(1, 100, "input-bound"), JpegCell(2, 200, "input-bound")};
  std::vector<json> charts;
  InputCharts(cells, charts);
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(charts[0]["datasets"].size(), 1u);
  EXPECT_NE(charts[0]["note"].get<std::string>().find("No control measured"), std::string::npos);
}

}  // namespace
}  // namespace dlbench::report
