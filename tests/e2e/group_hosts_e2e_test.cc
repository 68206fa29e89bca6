// Every host of a group run is monitored, and an idle task beats (docs/distributed.md "Every host
// of a group run is monitored", adr/0012-monitoring-every-host.md): `torchrun --no_python
// --standalone --nproc_per_node 2 dlbench run m.yaml` (Debian's python3-torch 1.13 torchrun, which
// sets the launcher's variables; the test sets none) with the monitor on and dlbench-null ranks in
// virtual time. Rank 1's task samples its own host while its rank runs and rank 0 stores both
// hosts' figures with each ddp cell, and `show` lists them; between the two ddp cells rank 1's
// task waits idle through a 3 s non-ddp cell under a 2 s silence limit, and its beats keep it in
// the group. Skipped (with the reason) when torchrun is not installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e_util.h"
#include "launcher_e2e_util.h"
#include "store/result_store.h"

namespace dlbench::e2e {
namespace {

constexpr const char* kTorchrun = "/usr/bin/torchrun";

// Two ddp cells of world_size 2 (a, c: 1,000 steps of 1 ms at 10x real time, 0.1 s) around a
// non-ddp cell (b: 1,000 steps of 3 ms at real time, 3 s) that rank 0 runs alone while rank 1's
// task waits.
constexpr char kHostsMatrix[] = R"(name: group-hosts
runner: null
matrix:
  model: [a, b, c]
  virtual_time: true
include:
  - model: a
    strategy: ddp
    world_size: 2
    step_ms: 1
    virtual_speedup: 10
  - model: b
    step_ms: 3
    virtual_speedup: 1
  - model: c
    strategy: ddp
    world_size: 2
    step_ms: 1
    virtual_speedup: 10
measure:
  min_steps: 1000
  min_time_s: 0.05
  max_time_s: 5
)";

// torchrun 1.13's options as torchrun_e2e_test.cc explains them (underscores; `-r 1 -t 1
// --log_dir` against its crash under Python 3.11; a 0.1 s monitor interval).
std::vector<std::string> TorchrunTwoTasks(const TempDir& dir) {
  return {kTorchrun,
          "--no_python",
          "--standalone",
          "--nproc_per_node",
          "2",
          "--monitor_interval",
          "0.1",
          "-r",
          "1",
          "-t",
          "1",
          "--log_dir",
          dir / "torchrun-logs"};
}

TEST(GroupHostsE2E, EveryTasksHostIsMonitoredAndAnIdleTaskOutlastsTheSilenceLimit) {
  if (::access(kTorchrun, X_OK) != 0) {
    GTEST_SKIP() << kTorchrun << " is not installed (python3-torch: scripts/setup-debian.sh)";
  }
  TempDir dir("group-hosts");
  WriteText(dir / "m.yaml", kHostsMatrix);
  std::vector<std::string> argv = TorchrunTwoTasks(dir);
  for (const std::string& a : {Bin("dlbench"), std::string("--db"), dir / "r.db", std::string("run"),
                               dir / "m.yaml", std::string("--out"), dir / "out"})
    argv.push_back(a);
  auto run = RunFor(argv, dir, {{"DLBENCH_GROUP_SILENCE_S", "2"}}, "torchrun", 120);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;

  auto store = store::OpenSqliteStore(dir / "r.db");
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u) << "one run, stored by rank 0";
  EXPECT_EQ((*store)->GetRun(runs->front().id)->environment["launcher"]["group"]["silence_s"], 2.0);
  auto cells = (*store)->GetCells(runs->front().id, store::CellQuery{});
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ(cells->size(), 3u);
  for (const record::CellRecord& c : *cells) {
    // c, the ddp cell after rank 1's task waited 3 s idle, ran: its beats kept it in the group.
    EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
    if (c.params.value("strategy", "") != "ddp") {
      EXPECT_FALSE(c.extras.contains("hosts")) << "a non-ddp cell runs on rank 0's host alone";
      continue;
    }
    ASSERT_TRUE(c.extras.contains("hosts")) << c.label << ": " << c.extras.dump();
    const nlohmann::json& hosts = c.extras["hosts"];
    ASSERT_EQ(hosts.size(), 2u) << hosts.dump();
    for (int r = 0; r < 2; ++r) {
      const nlohmann::json& h = hosts[static_cast<std::size_t>(r)];
      EXPECT_EQ(h["rank"], r) << h.dump();
      EXPECT_EQ(h["addr"], "127.0.0.1") << h.dump();
      ASSERT_TRUE(h.contains("figures")) << c.label << ": " << h.dump();
      const nlohmann::json& f = h["figures"];
      // A round at the runner's start and one at its end, at least.
      EXPECT_GE(f["rounds"].get<int>(), 2) << h.dump();
      EXPECT_GT(f.value("host_mem_peak_bytes", 0.0), 0.0) << h.dump();
      EXPECT_GT(f.value("runner_rss_peak_bytes", 0.0), 0.0) << "the rank's own runner: " << h.dump();
      EXPECT_TRUE(f.contains("host_cpu_busy_cores_mean")) << h.dump();
    }
    EXPECT_NE(hosts[0]["figures"], hosts[1]["figures"]) << "two monitors, each its own rank's runner";
  }

  auto show = Dlbench({"show", std::to_string(runs->front().id)}, dir, dir / "r.db");
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("Hosts of the group cells"), std::string::npos) << show.out;
  // Two rows per ddp cell (cells 0 and 2), each naming its rank and host.
  std::size_t rows = 0;
  for (std::size_t at = show.out.find("(127.0.0.1)"); at != std::string::npos;
       at = show.out.find("(127.0.0.1)", at + 1))
    ++rows;
  EXPECT_EQ(rows, 4u) << show.out;
}

}  // namespace
}  // namespace dlbench::e2e
