// `torchrun --no_python --nproc_per_node 2 dlbench run m.yaml --shard auto` with Debian's
// python3-torch 1.13 torchrun: each cell runs once over the two processes, which share one SQLite
// file, and each run's fingerprint records torchrun's variables. torchrun sets them; the test
// sets none. Skipped (with the reason) when torchrun is not installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <set>

#include "e2e_util.h"
#include "launcher_e2e_util.h"
#include "store/result_store.h"

namespace dlbench::e2e {
namespace {

constexpr const char* kTorchrun = "/usr/bin/torchrun";

// torchrun 1.13 under Python 3.11 fails in to_map() with the default `-r 0 -t 0` (Std.NONE is not
// found by iterating the Std flag): redirecting and teeing stdout to --log_dir avoids it.
// --standalone: a c10d rendezvous on a free local port; --monitor_interval: the agent notices its
// workers' end within 0.1 s instead of 5 s.
std::vector<std::string> Torchrun(const TempDir& dir, int nproc) {
  return {kTorchrun,
          "--standalone",
          "--no_python",
          "--nproc_per_node",
          std::to_string(nproc),
          "--monitor_interval",
          "0.1",
          "-r",
          "1",
          "-t",
          "1",
          "--log_dir",
          dir / "torchrun-logs"};
}

TEST(TorchrunE2E, ShardAutoUnderTorchrunRunsEachCellOnceAndRecordsTorchrunsVariables) {
  if (::access(kTorchrun, X_OK) != 0) {
    GTEST_SKIP() << kTorchrun << " is not installed (python3-torch: scripts/setup-debian.sh)";
  }
  TempDir dir("torchrun");
  const std::string db = dir / "r.db";
  WriteText(dir / "m.yaml", kSweep);
  std::vector<std::string> argv = Torchrun(dir, 2);
  for (const std::string& a :
       {Bin("dlbench"), std::string("--db"), db, std::string("run"), dir / "m.yaml", std::string("--out"),
        dir / "out", std::string("--no-monitor"), std::string("--shard"), std::string("auto")})
    argv.push_back(a);
  auto run = RunFor(argv, dir, {}, "torchrun", 120);
  ASSERT_EQ(run.exit_code, 0) << run.err;

  auto store = store::OpenSqliteStore(db);
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  std::set<std::string> ran;
  std::set<std::string> shards;
  for (const record::RunRecord& listed : *runs) {
    auto r = (*store)->GetRun(listed.id);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, record::RunStatus::kCompleted);
    const nlohmann::json& l = r->environment["launcher"];
    EXPECT_EQ(l["launcher"], "torchrun") << l.dump();
    EXPECT_EQ(l["rank"]["from"], "RANK");
    EXPECT_EQ(l["world_size"], (nlohmann::json{{"value", 2}, {"from", "WORLD_SIZE"}})) << l.dump();
    EXPECT_EQ(l["local_rank"]["value"], l["rank"]["value"]) << "one node";
    EXPECT_EQ(l["master_port"]["from"], "MASTER_PORT") << l.dump();
    EXPECT_TRUE(l["seen"].contains("TORCHELASTIC_RUN_ID")) << l.dump();
    const std::string shard = std::to_string(l["rank"]["value"].get<int>() + 1) + "/2";
    EXPECT_EQ(r->selection.shard, shard);
    shards.insert(shard);
    auto cells = (*store)->GetCells(listed.id, store::CellQuery{});
    ASSERT_TRUE(cells.ok());
    EXPECT_EQ(cells->size(), 2u);
    for (const auto& c : *cells) {
      EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
      EXPECT_TRUE(ran.insert(c.cell_id).second) << c.cell_id << " ran in both processes";
    }
  }
  EXPECT_EQ(shards, (std::set<std::string>{"1/2", "2/2"}));
  EXPECT_EQ(ran.size(), 4u) << "the two processes together ran the whole matrix";

  // A runner started by a dlbench under torchrun sees none of torchrun's variables.
  WriteRunnerEnvMatrix(dir);
  argv = Torchrun(dir, 1);
  for (const std::string& a :
       {Bin("dlbench"), std::string("--db"), dir / "env.db", std::string("run"), dir / "env.yaml",
        std::string("--out"), dir / "out", std::string("--no-monitor")})
    argv.push_back(a);
  auto env_run = RunFor(argv, dir, {}, "torchrun-env", 120);
  ASSERT_EQ(env_run.exit_code, 0) << env_run.err;
  CheckRunnerEnvFiles(dir, {"\nRANK=", "\nWORLD_SIZE=", "\nLOCAL_RANK=", "\nMASTER_ADDR=", "\nMASTER_PORT=",
                            "\nTORCHELASTIC_", "\nGROUP_RANK="});
}

}  // namespace
}  // namespace dlbench::e2e
