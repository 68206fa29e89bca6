// `show`'s Scaling section (cli/ddp_console.h) on hand-made cells: one table per model with the
// figures as stored, the world_size 1 cell as the control, and why a figure is missing.
#include "cli/ddp_console.h"

#include <gtest/gtest.h>

#include "record/metrics.h"
#include "record/outcome.h"

namespace dlbench::cli {
namespace {

namespace metric = record::metric;

record::CellRecord Ddp(int index, int world, const std::string& mode, double global) {
  record::CellRecord c;
  c.index = index;
  c.outcome = record::Outcome::kOk;
  c.params = {
      {"model", "mlp"}, {"strategy", "ddp"}, {"world_size", world}, {"ddp_mode", mode}, {"batch_size", 8}};
  record::SetMetric(c, metric::kDdpGlobalSamplesPerS, global);
  return c;
}

TEST(DdpConsoleTest, OneScalingTablePerModelWithEveryFigure) {
  std::vector<record::CellRecord> cells;
  cells.push_back(Ddp(0, 2, "serial", 1800));
  record::SetMetric(cells[0], metric::kDdpSpeedup, 1.8);
  record::SetMetric(cells[0], metric::kDdpScalingEfficiencyPct, 90);
  record::SetMetric(cells[0], metric::kDdpAllreduceSharePct, 12.5);
  record::SetMetric(cells[0], metric::kDdpSlowestRank, 1);
  record::SetMetric(cells[0], metric::kDdpStragglerLagNs, 2e6);
  record::SetMetric(cells[0], metric::kDdpStragglerLagPct, 4.0);
  cells[0].extras[record::kDdpScalingExtrasKey] = {
      {"exposed", {{"why_none", "the run has no compute-only twin with every other parameter equal"}}}};
  cells.push_back(Ddp(1, 1, "serial", 1000));
  cells.push_back(Ddp(2, 2, "overlap", 1900));
  record::SetMetric(cells[2], metric::kDdpOverlapPct, 55.0);
  record::SetMetric(cells[2], metric::kDdpExposedCommNs, 1.5e6);
  record::CellRecord other = Ddp(3, 2, "overlap", 50);
  other.params["model"] = "resnet50";
  cells.push_back(other);
  record::CellRecord failed = Ddp(4, 4, "overlap", 10);
  failed.outcome = record::Outcome::kCrashed;
  cells.push_back(failed);

  const std::string out = RenderScaling(cells);
  EXPECT_NE(out.find("Scaling of mlp, batch_size 8 (ddp;"), std::string::npos) << out;
  EXPECT_NE(out.find("Scaling of resnet50, batch_size 8 (ddp;"), std::string::npos) << out;
  EXPECT_NE(out.find("1800/s"), std::string::npos) << out;
  EXPECT_NE(out.find("1.80x"), std::string::npos) << out;
  EXPECT_NE(out.find("90.0%"), std::string::npos) << out;
  EXPECT_NE(out.find("12.5%"), std::string::npos) << out;
  EXPECT_NE(out.find("1 (+2 ms, 4.0%)"), std::string::npos) << out;
  EXPECT_NE(out.find("1 (control)"), std::string::npos) << out;
  EXPECT_NE(out.find("55.0%"), std::string::npos) << out;
  EXPECT_NE(out.find("#0 no exposed communication: the run has no compute-only twin"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("All-reduce alone"), std::string::npos) << out;
  // The world_size 1 serial row comes before the world_size 2 serial row; overlap rows first.
  const auto overlap_row = out.find("1900/s");
  const auto control_row = out.find("1 (control)");
  const auto serial_row = out.find("1.80x");
  EXPECT_LT(overlap_row, control_row) << out;
  EXPECT_LT(control_row, serial_row) << out;
  EXPECT_EQ(out.find("#4 "), std::string::npos) << "a cell that did not end ok is not shown";
}

TEST(DdpConsoleTest, AllreduceCellsGetTheirBandwidths) {
  record::CellRecord c;
  c.index = 7;
  c.outcome = record::Outcome::kOk;
  c.params = {{"model", "allreduce"}, {"strategy", "ddp"}, {"world_size", 2}, {"allreduce_bytes", 1048576}};
  c.extras[record::kDdpScalingExtrasKey] = {{"allreduce_bytes", 1048576}};
  record::SetMetric(c, metric::kStepTimeMeanNs, 1e6);
  record::SetMetric(c, metric::kAllreduceAlgbwBytesPerS, 1048576e3);
  record::SetMetric(c, metric::kAllreduceBusbwBytesPerS, 1048576e3);
  const std::string out = RenderScaling({c});
  EXPECT_NE(out.find("All-reduce alone"), std::string::npos) << out;
  EXPECT_NE(out.find("1 MiB"), std::string::npos) << out;
  EXPECT_NE(out.find("1000 MiB/s"), std::string::npos) << out;
  EXPECT_EQ(out.find("Scaling of"), std::string::npos) << out;
}

TEST(DdpConsoleTest, NothingWithoutDdpCells) {
  record::CellRecord c;
  c.outcome = record::Outcome::kOk;
  c.params = {{"model", "mlp"}};
  EXPECT_EQ(RenderScaling({c}), "");
  EXPECT_EQ(RenderScaling({}), "");
}

}  // namespace
}  // namespace dlbench::cli
