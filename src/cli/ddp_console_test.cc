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

namespace dlbench::cli {
namespace {

// `show`'s hosts of a group run's cell: one row per rank with its host's figures as stored, and why
// a rank has none.
TEST(DdpConsoleTest, EveryHostOfAGroupCellWithItsFiguresOrWhyNone) {
  record::CellRecord c = Ddp(4, 2, "overlap", 100);
  c.extras["hosts"] = nlohmann::json::array(
      {{{"rank", 0},
        {"host", "node-a"},
        {"addr", "10.0.0.1"},
        {"figures",
         {{"rounds", 21},
          {"host_cpu_busy_cores_mean", 1.5},
          {"host_cpu_busy_cores_max", 2.25},
          {"host_mem_peak_bytes", 3.0 * (1 << 30)},
          {"runner_cpu_cores", 0.98},
          {"runner_rss_peak_bytes", 512.0 * (1 << 20)},
          {"gpus",
           {{{"index", 0},
             {"util_mean_pct", 97.4},
             {"board_power_mean_w", 412.2},
             {"board_power_max_w", 690.0}}}}}}},
       {{"rank", 1}, {"host", "node-b"}, {"addr", "10.0.0.2"}, {"missing", "its task sent no host report"}}});
  const std::string out = RenderHosts({c});
  EXPECT_NE(out.find("Hosts of the group cells"), std::string::npos) << out;
  EXPECT_NE(out.find("node-a (10.0.0.1)"), std::string::npos) << out;
  EXPECT_NE(out.find("1.50/2.25"), std::string::npos) << out;
  EXPECT_NE(out.find("3 GiB"), std::string::npos) << out;
  EXPECT_NE(out.find("0.98"), std::string::npos) << out;
  EXPECT_NE(out.find("gpu0 97%"), std::string::npos) << out;
  EXPECT_NE(out.find("gpu0 412/690 W"), std::string::npos) << out;
  EXPECT_NE(out.find("node-b (10.0.0.2)"), std::string::npos) << out;
  EXPECT_NE(out.find("#4 rank 1: no figures: its task sent no host report"), std::string::npos) << out;
  EXPECT_EQ(RenderHosts({Ddp(0, 2, "overlap", 1)}), "") << "no hosts, no section";
}

}  // namespace
}  // namespace dlbench::cli
