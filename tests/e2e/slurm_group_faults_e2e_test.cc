// A group run under a real Slurm started by the test (slurm_e2e_util.h) whose remote rank hangs
// or exits early, or whose task is killed or falls silent mid-cell.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "e2e_util.h"
#include "group_e2e_util.h"
#include "launcher_e2e_util.h"
#include "slurm_e2e_util.h"
#include "store/result_store.h"

namespace dlbench::e2e {
namespace {

// What KillATaskMidCell saw.
struct KilledTask {
  bool runner_died = false;  // rank 1's runner was gone within 2 s of the kill
  std::string err;           // srun's stderr (every task's)
  double srun_s = 0;
};

// Starts `argv` (an srun of two dlbench tasks, `--db DIR/NAME-$SLURM_PROCID.db`), waits for rank
// 1's runner to start and hang, SIGKILLs task `victim`'s dlbench (found by its --db argument), and
// waits for srun to end.
KilledTask KillATaskMidCell(const TempDir& dir, const std::vector<std::pair<std::string, std::string>>& env,
                            const std::vector<std::string>& argv, const std::string& name, int victim) {
  KilledTask out;
  SpawnOptions o;
  o.argv = argv;
  o.extra_env = env;
  o.stdout_path = dir / ("srun-" + name + ".out");
  o.stderr_path = dir / ("srun-" + name + ".err");
  const auto t0 = std::chrono::steady_clock::now();
  auto srun = Subprocess::Spawn(o);
  EXPECT_TRUE(srun.ok()) << srun.error().message;
  if (!srun.ok()) return out;
  const auto task_of = [&](int rank) {
    const std::vector<pid_t> found = ProcessesWithArg(dir / (name + "-" + std::to_string(rank) + ".db"));
    return found.empty() ? pid_t{-1} : found.front();
  };
  pid_t runner = -1;
  const auto give_up = t0 + std::chrono::seconds(30);
  while (runner < 0 && std::chrono::steady_clock::now() < give_up && !srun->TryWait()) {
    const pid_t task = task_of(1);
    const std::vector<pid_t> children = task > 0 ? ChildrenNamed(task, "dlbench-null") : std::vector<pid_t>{};
    if (!children.empty()) runner = children.front();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GT(runner, 0) << "rank 1's runner never started";
  // Past its first step, the runner hangs (it ignores SIGTERM and reads nothing more).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(ProcessLives(runner));
  const pid_t task = task_of(victim);
  EXPECT_GT(task, 0);
  if (runner > 0 && task > 0) {
    EXPECT_EQ(::kill(task, SIGKILL), 0);
    const auto killed = std::chrono::steady_clock::now();
    while (ProcessLives(runner) && std::chrono::steady_clock::now() < killed + std::chrono::seconds(2))
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    out.runner_died = !ProcessLives(runner);
  }
  std::optional<ExitStatus> st;
  while (!(st = srun->TryWait()) && std::chrono::steady_clock::now() < t0 + std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!st) srun->Terminate(2000);
  out.srun_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.err = ReadFile(o.stderr_path).ok() ? *ReadFile(o.stderr_path) : "";
  EXPECT_TRUE(st.has_value()) << "srun did not end within 60 s: " << out.err;
  return out;
}

// `srun -n 2 dlbench run` (a group) whose rank 1 hangs, exits early, or whose whole task is killed
// mid-cell: each time the cell ends naming rank 1, rank 0 finishes the run (the next cells run),
// and no rank process is left running. Then rank 0's task killed mid-cell: rank 1's task ends its
// runner and exits 4.
TEST(SlurmE2E, AGroupRunEndsTheCellNamingARemoteRankThatHangsExitsEarlyOrLosesItsTask) {
  if (const std::optional<std::string> why = WhySlurmCannotRun()) GTEST_SKIP() << *why;
  TempDir dir("slurm-group-faults");
  SlurmCluster cluster(dir);
  ASSERT_TRUE(cluster.Start());
  auto group_run = [&](const std::string& name) -> std::vector<std::string> {
    return {kSrun,
            "-n",
            "2",
            "/bin/sh",
            "-c",
            R"(exec "$0" --db "$1/$2-$SLURM_PROCID.db" run "$1/$2.yaml" --out "$1/out" --no-monitor)",
            Bin("dlbench"),
            dir.path().string(),
            name};
  };

  // 1. Rank 1 hangs (ignoring SIGTERM) under a 3 s timeout: its task kills it at the timeout.
  WriteText(dir / "hang.yaml", kGroupHangMatrix);
  auto t = std::chrono::steady_clock::now();
  auto hang = RunFor(group_run("hang"), dir, cluster.Env(), "srun-hang", 60);
  std::printf("[ info ] a hung rank 1: srun took %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
  EXPECT_EQ(hang.exit_code, 1) << "a cell was not ok: " << hang.out << hang.err;
  CheckFailingRemoteRank(dir / "hang-0.db", {{"a", record::Outcome::kTimeout,
                                              "no result within timeout_s=3; killed its process group"},
                                             {"b", record::Outcome::kOk, ""}});
  EXPECT_FALSE(std::filesystem::exists(dir / "hang-1.db"));

  // 2. Rank 1 exits early: with exit code 3, and with 0 after closing its protocol pipe.
  WriteText(dir / "exit.yaml", kGroupExitMatrix);
  t = std::chrono::steady_clock::now();
  auto exit = RunFor(group_run("exit"), dir, cluster.Env(), "srun-exit", 60);
  std::printf("[ info ] rank 1 exiting early: srun took %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
  EXPECT_EQ(exit.exit_code, 1) << "a cell was not ok: " << exit.out << exit.err;
  CheckFailingRemoteRank(dir / "exit-0.db",
                         {{"a", record::Outcome::kError, "runner ended with exit code 3"},
                          {"a", record::Outcome::kInvalid, "runner exited without sending DONE"},
                          {"b", record::Outcome::kOk, ""}});

  // 3. Rank 1's task (its dlbench) is killed while its runner hangs mid-cell: that runner does
  // not outlive it, and rank 0 names the lost connection, ends the later ddp cell that needs the
  // task without starting it, runs the non-ddp cell and completes the run (exit 1: cells not ok).
  WriteText(dir / "lost.yaml", kGroupLostTaskMatrix);
  const KilledTask lost = KillATaskMidCell(dir, cluster.Env(), group_run("lost"), "lost", 1);
  std::printf("[ info ] rank 1's task killed: srun took %.2f s\n", lost.srun_s);
  EXPECT_TRUE(lost.runner_died) << "rank 1's runner outlived its task's dlbench";
  CheckFailingRemoteRank(dir / "lost-0.db",
                         {{"a", record::Outcome::kError, "rank 0 lost the connection to its task on "},
                          {"b", record::Outcome::kError, "lost the connection to its task on ", false},
                          {"c", record::Outcome::kOk, ""}});
  EXPECT_NE(lost.err.find("task 0: Exited with exit code 1"), std::string::npos) << lost.err;
  EXPECT_NE(lost.err.find("task 1: Killed"), std::string::npos) << lost.err;

  // 4. Rank 0's task is killed while rank 1's runner hangs mid-cell: rank 1's task kills its runner
  // on the lost connection and exits 4; nothing is stored by it.
  WriteText(dir / "lost0.yaml", kGroupLostTaskMatrix);
  const KilledTask lost0 = KillATaskMidCell(dir, cluster.Env(), group_run("lost0"), "lost0", 0);
  std::printf("[ info ] rank 0's task killed: srun took %.2f s\n", lost0.srun_s);
  EXPECT_TRUE(lost0.runner_died) << "rank 1's task did not end its runner";
  EXPECT_NE(lost0.err.find("task 0: Killed"), std::string::npos) << lost0.err;
  EXPECT_NE(lost0.err.find("task 1: Exited with exit code 4"), std::string::npos) << lost0.err;
  EXPECT_NE(lost0.err.find("the connection to rank 0's task was lost during cell 1 (a ddp ws=2 inject=hang); "
                           "this task's rank 1 was killed"),
            std::string::npos)
      << lost0.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "lost0-1.db"));
}

// Rank 0's task stopped (SIGSTOP: the connection stays open, as when its host vanishes) while rank
// 1's runner hangs mid-cell: rank 1's task hears no beat for DLBENCH_GROUP_SILENCE_S (2 s), kills
// its runner and exits 4 saying why. Rank 0's task is then killed: its store keeps the run
// `running`, which `runs` and `show` call abandoned.
TEST(SlurmE2E, ATaskWhoseRankZeroFallsSilentEndsItsRankAndTheKilledRunReadsAbandoned) {
  if (const std::optional<std::string> why = WhySlurmCannotRun()) GTEST_SKIP() << *why;
  TempDir dir("slurm-group-silent");
  SlurmCluster cluster(dir);
  ASSERT_TRUE(cluster.Start());
  WriteText(dir / "lost.yaml", kGroupLostTaskMatrix);
  SpawnOptions o;
  o.argv = {kSrun,
            "-n",
            "2",
            "/bin/sh",
            "-c",
            R"(exec "$0" --db "$1/lost-$SLURM_PROCID.db" run "$1/lost.yaml" --out "$1/out" --no-monitor)",
            Bin("dlbench"),
            dir.path().string()};
  o.extra_env = cluster.Env();
  o.extra_env.emplace_back("DLBENCH_GROUP_SILENCE_S", "2");
  o.stdout_path = dir / "srun.out";
  o.stderr_path = dir / "srun.err";
  auto srun = Subprocess::Spawn(o);
  ASSERT_TRUE(srun.ok()) << srun.error().message;
  const pid_t task1 = WaitForProcessWithArg(dir / "lost-1.db");
  const pid_t task0 = WaitForProcessWithArg(dir / "lost-0.db");
  ASSERT_GT(task1, 0);
  ASSERT_GT(task0, 0);
  pid_t runner = -1;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (runner < 0 && std::chrono::steady_clock::now() < give_up) {
    const std::vector<pid_t> children = ChildrenNamed(task1, "dlbench-null");
    if (!children.empty()) runner = children.front();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(runner, 0) << "rank 1's runner never started";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // past its first step: it hangs
  ASSERT_EQ(::kill(task0, SIGSTOP), 0);
  const auto stopped = std::chrono::steady_clock::now();
  while ((ProcessLives(task1) || ProcessLives(runner)) &&
         std::chrono::steady_clock::now() < stopped + std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double noticed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();
  std::printf("[ info ] rank 1's task and runner gone %.2f s after rank 0's task stopped\n", noticed_s);
  EXPECT_FALSE(ProcessLives(runner)) << "rank 1's task did not end its runner";
  EXPECT_FALSE(ProcessLives(task1)) << "rank 1's task did not notice the silence";
  // The silence counts from the last beat heard, up to one beat interval before the stop.
  EXPECT_GE(noticed_s, 1.0) << "not before the silence limit";
  ::kill(task0, SIGKILL);
  std::optional<ExitStatus> st;
  while (!(st = srun->TryWait()) && std::chrono::steady_clock::now() < stopped + std::chrono::seconds(40))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!st) srun->Terminate(2000);
  const std::string err = *ReadFile(o.stderr_path);
  EXPECT_NE(err.find("task 1: Exited with exit code 4"), std::string::npos) << err;
  EXPECT_NE(err.find("rank 0's task sent nothing for 2 s (it sends a beat every 1 s): its host is gone, the "
                     "network to it is cut, or it is stopped during cell 1 (a ddp ws=2 inject=hang); this "
                     "task's rank 1 was killed"),
            std::string::npos)
      << err;

  // Rank 0's dlbench died with the run `running`: nothing runs it, and both commands say so.
  auto runs = Dlbench({"runs"}, dir, dir / "lost-0.db");
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_NE(runs.out.find(" abandoned "), std::string::npos) << runs.out;
  auto show = Dlbench({"show", "1"}, dir, dir / "lost-0.db");
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("status abandoned, 0 of 3 cells stored"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("--resume 1' runs the rest"), std::string::npos) << show.out;
}

}  // namespace
}  // namespace dlbench::e2e
