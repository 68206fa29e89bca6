// Every host of a group run is monitored, and an idle task beats (docs/distributed.md "Every host
// of a group run is monitored", adr/0012-monitoring-every-host.md): `torchrun --no_python
// --standalone --nproc_per_node 2 dlbench run m.yaml` (Debian's python3-torch 1.13 torchrun, which
// sets the launcher's variables; the test sets none) with the monitor on and dlbench-null ranks in
// virtual time. Rank 1's task samples its own host while its rank runs and rank 0 stores both
// hosts' figures with each ddp cell, and `show` lists them; between the two ddp cells rank 1's
// task waits idle through a 3 s non-ddp cell under a 2 s silence limit, and its beats keep it in
// the group. Then the same over two "hosts" (network namespaces joined by a veth pair, one torchrun
// in each): each entry names its own host's address. Skipped (with the reason) when torchrun is not
// installed, and the second test when not root or without `ip`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/subprocess.h"
#include "e2e_util.h"
#include "launcher_e2e_util.h"
#include "store/result_store.h"
#include "two_hosts_e2e_util.h"

namespace dlbench::e2e {
namespace {

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

// `dlbench run` of the hosts matrix with the monitor on (every task given the same --db; only
// rank 0 opens it).
std::vector<std::string> DlbenchRun(const TempDir& dir) {
  return {Bin("dlbench"), "--db", dir / "r.db", "run", dir / "m.yaml", "--out", dir / "out"};
}

TEST(GroupHostsE2E, EveryTasksHostIsMonitoredAndAnIdleTaskOutlastsTheSilenceLimit) {
  if (::access(kTorchrun, X_OK) != 0) {
    GTEST_SKIP() << kTorchrun << " is not installed (python3-torch: scripts/setup-debian.sh)";
  }
  TempDir dir("group-hosts");
  WriteText(dir / "m.yaml", kHostsMatrix);
  std::vector<std::string> argv = TorchrunArgs(dir, "logs", {"--standalone", "--nproc_per_node", "2"});
  for (const std::string& a : DlbenchRun(dir)) argv.push_back(a);
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

TEST(GroupHostsE2E, TwoHostsInNetworkNamespacesEachReportTheirOwnHost) {
  if (::access(kTorchrun, X_OK) != 0) {
    GTEST_SKIP() << kTorchrun << " is not installed (python3-torch: scripts/setup-debian.sh)";
  }
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: ip netns add";
  if (::access(kIp, X_OK) != 0) GTEST_SKIP() << kIp << " is not installed (iproute2)";
  TempDir dir("group-hosts-netns");
  WriteText(dir / "m.yaml", kHostsMatrix);
  TwoHosts hosts(dir);
  ASSERT_TRUE(hosts.Start());
  ASSERT_TRUE(RunOneTorchrunPerHost(hosts, dir, DlbenchRun(dir), 120));

  auto store = store::OpenSqliteStore(dir / "r.db");
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto cells = (*store)->GetCells(1, store::CellQuery{});
  ASSERT_TRUE(cells.ok());
  int ddp_cells = 0;
  for (const record::CellRecord& c : *cells) {
    EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
    if (!c.extras.contains("hosts")) continue;
    ++ddp_cells;
    const nlohmann::json& h = c.extras["hosts"];
    ASSERT_EQ(h.size(), 2u) << h.dump();
    for (int r = 0; r < 2; ++r) {
      const nlohmann::json& entry = h[static_cast<std::size_t>(r)];
      EXPECT_EQ(entry["addr"], hosts.addr(r)) << "each rank's entry is its own host's: " << h.dump();
      ASSERT_TRUE(entry.contains("figures")) << entry.dump();
      EXPECT_GT(entry["figures"].value("runner_rss_peak_bytes", 0.0), 0.0) << entry.dump();
    }
  }
  EXPECT_EQ(ddp_cells, 2);
}

}  // namespace
}  // namespace dlbench::e2e
