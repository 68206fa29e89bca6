// `torchrun --no_python ... dlbench run m.yaml` without --shard (Debian's python3-torch 1.13
// torchrun): the tasks run the matrix once as a group (docs/distributed.md#several-hosts), the ddp
// cell's ranks are dlbench-torch Gloo ranks on a tiny model, one per task, and rank 0 stores the
// run. First two tasks of one torchrun on this host; then two hosts: two network namespaces joined
// by a veth pair, one torchrun in each (`--nnodes 2 --node_rank i`), the ranks meeting over that
// link. torchrun sets the launcher's variables; the test sets none. Skipped (with the reason) when
// torchrun is missing, and the two-host test when not root or without `ip`.
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
#include "group_e2e_util.h"
#include "launcher_e2e_util.h"
#include "store/result_store.h"
#include "two_hosts_e2e_util.h"

namespace dlbench::e2e {
namespace {

// A non-ddp cell and a ddp cell of world_size 2, both a tiny ResNet on the CPU.
const std::string kTorchGroupMatrix =
    std::string("name: torch-group\nrunner: torch\nmatrix:\n") + kTinyResnetCpuKeys + R"(  threads: 1
  strategy: [none, ddp]
  world_size: [1, 2]
exclude:
  - strategy: none
    world_size: 2
  - strategy: ddp
    world_size: 1
timeout_s: 120
measure:
  min_steps: 5
  min_time_s: 0.2
  max_time_s: 2
  target_rel_ci: 0.5
)";

std::vector<std::string> DlbenchRun(const TempDir& dir) {
  return {Bin("dlbench"), "--db", dir / "r.db", "run", dir / "m.yaml", "--out", dir / "out", "--no-monitor"};
}

// What rank 0 stored: one run; the non-ddp cell once; the ddp cell with both ranks' steps and
// both ranks' parameter check passed (the ranks' parameters are identical after training).
void CheckTorchGroupRun(const TempDir& dir) {
  auto store = store::OpenSqliteStore(dir / "r.db");
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u) << "one run, stored by rank 0";
  auto run = (*store)->GetRun(runs->front().id);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->status, record::RunStatus::kCompleted);
  const nlohmann::json& l = run->environment["launcher"];
  EXPECT_EQ(l["launcher"], "torchrun") << l.dump();
  EXPECT_EQ(l["group"]["port"]["from"], "MASTER_PORT + 1") << l.dump();
  store::CellQuery with_steps;
  with_steps.with_steps = true;
  auto cells = (*store)->GetCells(run->id, with_steps);
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ(cells->size(), 2u);
  for (const record::CellRecord& c : *cells) {
    ASSERT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message << "\n" << c.extras.dump();
    std::map<std::uint32_t, std::size_t> per_rank;
    for (const record::StepRow& row : c.steps) ++per_rank[row.rank];
    if (c.params.value("strategy", "") != "ddp") {
      EXPECT_EQ(per_rank.size(), 1u) << "a non-ddp cell runs once, on rank 0";
      continue;
    }
    EXPECT_EQ(per_rank.size(), 2u);
    EXPECT_EQ(per_rank[0], per_rank[1]) << "the ranks agree when to stop";
    const nlohmann::json& ranks = c.extras["ddp"]["ranks"];
    ASSERT_EQ(ranks.size(), 2u) << c.extras["ddp"].dump();
    for (const auto& rank : ranks) {
      EXPECT_EQ(rank["outcome"], "ok") << rank.dump();
      EXPECT_EQ(rank["parameter_check"]["identical"], true) << rank.dump();
      EXPECT_EQ(rank["parameter_check"]["local_hash"], ranks[0]["parameter_check"]["local_hash"])
          << "bitwise identical parameters";
      EXPECT_FALSE(ProcessLives(rank["pid"].get<std::int64_t>())) << rank.dump();
    }
    EXPECT_EQ(c.extras["ddp"]["rendezvous"].get<std::string>().rfind("tcp://", 0), 0u);
  }
}

TEST(TorchrunGroupE2E, TwoTorchrunTasksRunTheMatrixOnceWithTheirDdpRanksAsTasks) {
  if (::access(kTorchrun, X_OK) != 0) {
    GTEST_SKIP() << kTorchrun << " is not installed (python3-torch: scripts/setup-debian.sh)";
  }
  TempDir dir("torchrun-group");
  WriteText(dir / "m.yaml", kTorchGroupMatrix);
  std::vector<std::string> argv = TorchrunArgs(dir, "logs", {"--standalone", "--nproc_per_node", "2"});
  for (const std::string& a : DlbenchRun(dir)) argv.push_back(a);
  auto run = RunFor(argv, dir, {}, "torchrun", 180);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  CheckTorchGroupRun(dir);
}

TEST(TorchrunGroupE2E, TwoHostsInNetworkNamespacesMeetOverTheirLinkAndRankZeroStoresTheRun) {
  if (::access(kTorchrun, X_OK) != 0) {
    GTEST_SKIP() << kTorchrun << " is not installed (python3-torch: scripts/setup-debian.sh)";
  }
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: ip netns add";
  if (::access(kIp, X_OK) != 0) GTEST_SKIP() << kIp << " is not installed (iproute2)";
  TempDir dir("torchrun-hosts");
  WriteText(dir / "m.yaml", kTorchGroupMatrix);
  TwoHosts hosts(dir);
  ASSERT_TRUE(hosts.Start());
  ASSERT_TRUE(RunOneTorchrunPerHost(hosts, dir, DlbenchRun(dir), 180));
  CheckTorchGroupRun(dir);

  // The ranks met over the veth link: rank 1's task reached rank 0 from host 1's address.
  auto store = store::OpenSqliteStore(dir / "r.db");
  ASSERT_TRUE(store.ok());
  auto cells = (*store)->GetCells(1, store::CellQuery{});
  ASSERT_TRUE(cells.ok());
  for (const record::CellRecord& c : *cells) {
    if (!c.extras.contains("ddp")) continue;
    const nlohmann::json& ddp = c.extras["ddp"];
    EXPECT_EQ(ddp["rendezvous"].get<std::string>().rfind("tcp://" + hosts.addr(0) + ":", 0), 0u)
        << ddp.dump();
    EXPECT_EQ(ddp["ranks"][0]["addr"], hosts.addr(0)) << ddp.dump();
    EXPECT_EQ(ddp["ranks"][1]["addr"], hosts.addr(1)) << ddp.dump();
    EXPECT_TRUE(ddp["ranks"][1].contains("clock_offset_ns")) << ddp.dump();
  }
}

}  // namespace
}  // namespace dlbench::e2e
