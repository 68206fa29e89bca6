// `srun -n 2 dlbench run m.yaml --shard auto` under a real Slurm started by the test
// (slurm_e2e_util.h). The group runs under srun (no --shard) are in slurm_group_e2e_test.cc and
// slurm_group_faults_e2e_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "e2e_util.h"
#include "launcher_e2e_util.h"
#include "slurm_e2e_util.h"
#include "store/result_store.h"

namespace dlbench::e2e {
namespace {

TEST(SlurmE2E, SrunTasksWithShardAutoRunEachCellOnceAndRecordTheSlurmLauncher) {
  if (const std::optional<std::string> why = WhySlurmCannotRun()) GTEST_SKIP() << *why;
  TempDir dir("slurm");
  const auto t0 = std::chrono::steady_clock::now();
  SlurmCluster cluster(dir);
  ASSERT_TRUE(cluster.Start());
  const auto t1 = std::chrono::steady_clock::now();

  WriteText(dir / "m.yaml", kSweep);
  // One SQLite file per task, named by the task's own SLURM_PROCID (expanded by the task's shell).
  auto srun = RunFor(
      {kSrun, "-n", "2", "/bin/sh", "-c",
       R"(exec "$0" --db "$1/r-$SLURM_PROCID.db" run "$1/m.yaml" --out "$1/out" --no-monitor --shard auto)",
       Bin("dlbench"), dir.path().string()},
      dir, cluster.Env(), "srun", 60);
  const auto t2 = std::chrono::steady_clock::now();
  std::printf("[ info ] Slurm up in %.2f s; srun -n 2 dlbench run --shard auto took %.2f s\n",
              std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
  ASSERT_EQ(srun.exit_code, 0) << srun.err << cluster.Logs();

  auto plan = Dlbench({"plan", dir / "m.yaml", "--json"}, dir, dir / "plan.db");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  std::set<std::string> planned;
  for (const auto& c : nlohmann::json::parse(plan.out)) planned.insert(c["id"].get<std::string>());
  ASSERT_EQ(planned.size(), 4u);

  std::set<std::string> ran;
  std::set<std::string> sweeps;
  for (int task = 0; task < 2; ++task) {
    const std::string db = dir / ("r-" + std::to_string(task) + ".db");
    auto store = store::OpenSqliteStore(db);
    ASSERT_TRUE(store.ok()) << db << ": " << store.error().message << "\n" << srun.err;
    auto runs = (*store)->ListRuns();
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 1u) << db;
    const std::int64_t id = runs->front().id;
    auto run = (*store)->GetRun(id);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->status, record::RunStatus::kCompleted);
    const std::string shard = std::to_string(task + 1) + "/2";
    EXPECT_EQ(run->selection.shard, shard);
    const nlohmann::json& l = run->environment["launcher"];
    EXPECT_EQ(l["launcher"], "slurm") << l.dump();
    EXPECT_EQ(l["rank"], (nlohmann::json{{"value", task}, {"from", "SLURM_PROCID"}})) << l.dump();
    EXPECT_EQ(l["world_size"], (nlohmann::json{{"value", 2}, {"from", "SLURM_NTASKS"}})) << l.dump();
    EXPECT_EQ(l["master_addr"]["value"], ShortHostName()) << l.dump();
    EXPECT_EQ(l["shard"]["value"], shard);
    EXPECT_TRUE(l["seen"].contains("SLURM_JOB_ID")) << l.dump();
    // The tasks of one srun are one sweep, named by the job and its step.
    EXPECT_EQ(run->sweep, "slurm-" + l["seen"].value("SLURM_JOB_ID", std::string("?")) + "." +
                              l["seen"].value("SLURM_STEP_ID", std::string("?")))
        << l.dump();
    EXPECT_EQ(l["sweep"]["from"], "SLURM_JOB_ID.SLURM_STEP_ID") << l.dump();
    EXPECT_EQ(run->sweep_cells, 4);
    sweeps.insert(run->sweep);
    auto cells = (*store)->GetCells(id, store::CellQuery{});
    ASSERT_TRUE(cells.ok());
    EXPECT_EQ(cells->size(), 2u);
    for (const auto& c : *cells) {
      EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
      EXPECT_TRUE(ran.insert(c.cell_id).second) << c.cell_id << " ran in both tasks";
    }
  }
  EXPECT_EQ(ran, planned) << "the two tasks together ran the whole matrix";
  ASSERT_EQ(sweeps.size(), 1u) << "both tasks name one sweep";

  // The two task files copied into one store read as one run.
  for (int task = 0; task < 2; ++task) {
    auto copied = Dlbench({"db", "copy", dir / ("r-" + std::to_string(task) + ".db"), dir / "all.db"}, dir,
                          dir / "all.db");
    ASSERT_EQ(copied.exit_code, 0) << copied.err;
  }
  auto show = Dlbench({"show", "sweep:" + *sweeps.begin()}, dir, dir / "all.db");
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("2 of 2 shards stored"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("status completed, 4 of 4 cells stored"), std::string::npos) << show.out;

  // A runner started by a dlbench under srun sees none of Slurm's variables: a command runner
  // that writes its environment to a file and then is the null runner.
  WriteRunnerEnvMatrix(dir);
  auto env_run = RunFor({kSrun, "-n", "1", Bin("dlbench"), "--db", dir / "env.db", "run", dir / "env.yaml",
                         "--out", dir / "out", "--no-monitor"},
                        dir, cluster.Env(), "srun-env", 60);
  ASSERT_EQ(env_run.exit_code, 0) << env_run.err;
  CheckRunnerEnvFiles(dir, {"\nSLURM"});
  const auto t3 = std::chrono::steady_clock::now();
  cluster.Stop();
  std::printf("[ info ] the runner-environment run took %.2f s; stopping Slurm %.2f s\n",
              std::chrono::duration<double>(t3 - t2).count(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t3).count());
}

}  // namespace
}  // namespace dlbench::e2e
