// `srun -n 2 dlbench run m.yaml` without --shard under a real Slurm started by the test
// (slurm_e2e_util.h): the tasks run the matrix once as a group, and an interrupted group run
// resumes. What happens when a rank or a task fails is in slurm_group_faults_e2e_test.cc.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "e2e_util.h"
#include "group_e2e_util.h"
#include "launcher_e2e_util.h"
#include "slurm_e2e_util.h"
#include "store/result_store.h"

namespace dlbench::e2e {
namespace {

// `srun -n 2 dlbench run m.yaml` without --shard: the two tasks run the matrix once as a group.
// The non-ddp cell runs on task 0 alone; the ddp cell's rank 1 runs on task 1, which sends its
// steps to task 0; task 0 alone writes a store. Then a rank 1 that crashes ends its cell naming
// it, the next cell still runs, and no rank is left running.
TEST(SlurmE2E, SrunTasksWithoutAShardRunTheMatrixOnceAsAGroupAndRankZeroStoresIt) {
  if (const std::optional<std::string> why = WhySlurmCannotRun()) GTEST_SKIP() << *why;
  TempDir dir("slurm-group");
  SlurmCluster cluster(dir);
  ASSERT_TRUE(cluster.Start());
  WriteText(dir / "m.yaml", kGroupMatrix);
  const auto t1 = std::chrono::steady_clock::now();
  auto srun = RunFor({kSrun, "-n", "2", "/bin/sh", "-c",
                      R"(exec "$0" --db "$1/r-$SLURM_PROCID.db" run "$1/m.yaml" --out "$1/out" --no-monitor)",
                      Bin("dlbench"), dir.path().string()},
                     dir, cluster.Env(), "srun-group", 60);
  std::printf("[ info ] srun -n 2 dlbench run (a group) took %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
  ASSERT_EQ(srun.exit_code, 0) << srun.out << srun.err << cluster.Logs();
  EXPECT_FALSE(std::filesystem::exists(dir / "r-1.db")) << "rank 0 alone writes the store";
  CheckGroupRun(dir / "r-0.db", "slurm", "SLURM_PROCID",
                "20000 + (SLURM_JOB_ID x 64 + SLURM_STEP_ID) mod 40000");

  // A rank 1 that crashes at its first step: the cell ends crashed naming it, the next cell runs.
  WriteText(dir / "crash.yaml", kGroupCrashMatrix);
  auto crash =
      RunFor({kSrun, "-n", "2", "/bin/sh", "-c",
              R"(exec "$0" --db "$1/crash-$SLURM_PROCID.db" run "$1/crash.yaml" --out "$1/out" --no-monitor)",
              Bin("dlbench"), dir.path().string()},
             dir, cluster.Env(), "srun-crash", 60);
  EXPECT_EQ(crash.exit_code, 1) << "a cell was not ok: " << crash.out << crash.err;
  CheckCrashedRemoteRank(dir / "crash-0.db");
  EXPECT_FALSE(std::filesystem::exists(dir / "crash-1.db"));

  // Tasks given different plans (each its own matrix file) are refused, each saying why.
  WriteText(dir / "m-0.yaml", kGroupMatrix);
  WriteText(dir / "m-1.yaml", kGroupCrashMatrix);
  auto mismatch =
      RunFor({kSrun, "-n", "2", "/bin/sh", "-c",
              R"(exec "$0" --db "$1/x.db" run "$1/m-$SLURM_PROCID.yaml" --out "$1/out" --no-monitor)",
              Bin("dlbench"), dir.path().string()},
             dir, cluster.Env(), "srun-mismatch", 90);
  EXPECT_NE(mismatch.exit_code, 0);
  EXPECT_NE(mismatch.err.find("task 1 on " + ShortHostName() + " has a different plan"), std::string::npos)
      << mismatch.err;
  EXPECT_NE(mismatch.err.find("rank 1 joining rank 0 at "), std::string::npos) << mismatch.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "x.db")) << "a refused group stores nothing";
}

// `srun -n 2 dlbench run m.yaml --only ...` interrupted (Ctrl-C to rank 0) in its second cell,
// then `srun -n 2 dlbench run m.yaml --resume 1`: every task resumes, rank 0 with the run's stored
// selection and finished cell, which it sends the other task to check; the finished cell is not
// run again, the rest run as a group, and the run completes. Tasks that disagree on --resume are
// refused.
TEST(SlurmE2E, AnInterruptedGroupRunResumesUnderSrunWithItsSelectionAndKeepsItsFinishedCells) {
  if (const std::optional<std::string> why = WhySlurmCannotRun()) GTEST_SKIP() << *why;
  TempDir dir("slurm-group-resume");
  SlurmCluster cluster(dir);
  ASSERT_TRUE(cluster.Start());
  WriteText(dir / "m.yaml", kGroupResumeMatrix);
  const std::string db0 = dir / "r-0.db";
  auto group_run = [&](const std::string& options) -> std::vector<std::string> {
    return {
        kSrun,
        "-n",
        "2",
        "/bin/sh",
        "-c",
        R"(exec "$0" --db "$1/r-$SLURM_PROCID.db" run "$1/m.yaml" --out "$1/out" --no-monitor )" + options,
        Bin("dlbench"),
        dir.path().string()};
  };

  // 1. The first run, interrupted while its second cell runs.
  SpawnOptions o;
  o.argv = group_run("--only 'model!=c'");
  o.extra_env = cluster.Env();
  o.stdout_path = dir / "first.out";
  o.stderr_path = dir / "first.err";
  const auto t0 = std::chrono::steady_clock::now();
  auto first = Subprocess::Spawn(o);
  ASSERT_TRUE(first.ok()) << first.error().message;
  bool second_cell = false;
  while (!second_cell && std::chrono::steady_clock::now() < t0 + std::chrono::seconds(30) &&
         !first->TryWait()) {
    auto err = ReadFile(o.stderr_path);
    second_cell = err.ok() && err->find("[2/2] b") != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(second_cell) << *ReadFile(o.stderr_path);
  const pid_t zero = WaitForProcessWithArg(db0);
  ASSERT_GT(zero, 0);
  ASSERT_EQ(::kill(zero, SIGINT), 0);
  std::optional<ExitStatus> st;
  while (!(st = first->TryWait()) && std::chrono::steady_clock::now() < t0 + std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!st) first->Terminate(2000);
  const std::string first_err = *ReadFile(o.stderr_path);
  ASSERT_TRUE(st.has_value()) << first_err;
  EXPECT_NE(first_err.find("task 0: Exited with exit code 130"), std::string::npos) << first_err;
  EXPECT_NE(first_err.find("task 1: Exited with exit code 4"), std::string::npos) << first_err;
  std::string finished_id;
  std::int64_t finished_started = 0;
  {
    auto store = store::OpenSqliteStore(db0);
    ASSERT_TRUE(store.ok()) << store.error().message;
    auto run = (*store)->GetRun(1);
    ASSERT_TRUE(run.ok()) << run.error().message;
    EXPECT_EQ(run->status, record::RunStatus::kInterrupted);
    auto cells = (*store)->GetCells(1, store::CellQuery{});
    ASSERT_TRUE(cells.ok());
    ASSERT_EQ(cells->size(), 1u) << "only the first cell finished";
    EXPECT_EQ(cells->front().params.value("model", ""), "a");
    finished_id = cells->front().cell_id;
    finished_started = cells->front().started_wall_ns;
  }

  // 2. Every task resumes: rank 0 reapplies --only and skips cell a; the other task agrees.
  const auto t1 = std::chrono::steady_clock::now();
  auto resumed = RunFor(group_run("--resume 1"), dir, cluster.Env(), "resume", 60);
  std::printf("[ info ] srun -n 2 dlbench run --resume (a group) took %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_NE(resumed.err.find("resuming run 1 with its selection: --only 'model!=c'"), std::string::npos)
      << resumed.err;
  EXPECT_NE(resumed.err.find("task 1: resuming run 1 with rank 0 (1 cell(s) already finished)"),
            std::string::npos)
      << resumed.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "r-1.db")) << "rank 0 alone writes the store";
  {
    auto store = store::OpenSqliteStore(db0);
    ASSERT_TRUE(store.ok()) << store.error().message;
    auto run = (*store)->GetRun(1);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->status, record::RunStatus::kCompleted);
    auto runs = (*store)->ListRuns();
    ASSERT_TRUE(runs.ok());
    EXPECT_EQ(runs->size(), 1u) << "the resume is the same run";
    store::CellQuery with_steps;
    with_steps.with_steps = true;
    auto cells = (*store)->GetCells(1, with_steps);
    ASSERT_TRUE(cells.ok());
    ASSERT_EQ(cells->size(), 2u) << "cells a and b; c is outside the run's selection";
    for (const record::CellRecord& c : *cells) {
      EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
      if (c.cell_id == finished_id) {
        EXPECT_EQ(c.started_wall_ns, finished_started) << "the finished cell is not run again";
        continue;
      }
      EXPECT_EQ(c.params.value("model", ""), "b");
      std::set<std::uint32_t> ranks;
      for (const record::StepRow& row : c.steps) ranks.insert(row.rank);
      EXPECT_EQ(ranks, (std::set<std::uint32_t>{0, 1})) << "both tasks ran their rank of cell b";
    }
  }

  // 3. Tasks that disagree on --resume are refused on both sides; nothing changes.
  // Only task 0 is given --resume 1.
  const std::string only_task_zero_resumes =
      R"(R=""; [ "$SLURM_PROCID" = 0 ] && R="--resume 1"; )"
      R"(exec "$0" --db "$1/r-$SLURM_PROCID.db" run "$1/m.yaml" --out "$1/out" --no-monitor $R)";
  auto mixed =
      RunFor({kSrun, "-n", "2", "/bin/sh", "-c", only_task_zero_resumes, Bin("dlbench"), dir.path().string()},
             dir, cluster.Env(), "mixed", 60);
  EXPECT_NE(mixed.exit_code, 0);
  EXPECT_NE(mixed.err.find("task 1 on " + ShortHostName() + " starts a new run, and rank 0 resumes run 1"),
            std::string::npos)
      << mixed.err;
  auto store = store::OpenSqliteStore(db0);
  ASSERT_TRUE(store.ok());
  auto runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 1u);
}

}  // namespace
}  // namespace dlbench::e2e
