// The driver under fire, end to end (issue 19): the real dlbench binary against dlbench-null runners
// that stop as STOP is written, close their pipes, leave children holding them, hang after STOP,
// or are resumed twice; and `dlbench run` SIGKILLed at 50 seeded moments. Step times are virtual
// (virtual_time: true), so no assertion depends on this machine's speed.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "e2e_sqlite.h"
#include "e2e_util.h"
#include "orchestrator/run_folder.h"
#include "record/progress.h"
#include "store/result_store.h"

namespace dlbench::e2e {
namespace {

record::RunStatus StatusOf(const std::string& db, std::int64_t run_id) {
  auto s = store::OpenSqliteStore(db);
  if (!s.ok()) return record::RunStatus::kRunning;
  auto run = (*s)->GetRun(run_id);
  return run.ok() ? run->status : record::RunStatus::kRunning;
}

Subprocess StartRun(const std::vector<std::string>& args, const std::string& db, const TempDir& dir,
                    const std::string& tag) {
  SpawnOptions o;
  o.argv = {Bin("dlbench"), "--db", db};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.stdout_path = dir / (tag + ".out");
  o.stderr_path = dir / (tag + ".err");
  o.new_process_group = false;  // so a signal reaches dlbench alone, as a user's kill would
  auto p = Subprocess::Spawn(o);
  EXPECT_TRUE(p.ok());
  return std::move(p).value();
}

std::string Text(const std::string& path) { return ReadFile(path).ok() ? *ReadFile(path) : ""; }

// The issue's reproducer: runners that stop at their own max_steps just as STOP is written. The
// driver used to die of SIGPIPE (exit 141, run left `running`) after 2 or 3 of these cells.
TEST(FaultE2E, RunnersEndingAsStopIsWrittenDoNotKillTheDriver) {
  TempDir dir("sigpipe");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  std::string models;
  for (int i = 0; i < 40; ++i) models += (i ? ", m" : "m") + std::to_string(i);
  WriteText(matrix, "runner: null\nmatrix:\n  model: [" + models +
                        "]\n  step_ms: [0]\n  virtual_time: [true]\n"
                        "measure:\n  max_steps: 200\n  min_steps: 10\n  min_time_s: 0\n");
  auto run = Dlbench({"run", matrix, "--out", dir / "out", "--no-monitor"}, dir, db);
  EXPECT_NE(run.exit_code, 128 + SIGPIPE) << "killed by SIGPIPE\n" << run.err;
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  const auto cells = Cells(db, 1);
  EXPECT_EQ(cells.size(), 40u);
  for (const auto& c : cells) EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
  EXPECT_EQ(StatusOf(db, 1), record::RunStatus::kCompleted);
}

// Runner faults through the binary: each gets its outcome and the matrix goes on, quickly.
TEST(FaultE2E, RunnerFaultsEndTheirCellsAndTheMatrixGoesOn) {
  TempDir dir("faults");
  const std::string matrix = dir / "f.yaml", db = dir / "r.db";
  // timeout_s 3: a child holding the pipe used to turn its cell into a timeout after it.
  WriteText(matrix, R"(runner: null
timeout_s: 3
matrix:
  inject: [none, close_protocol, child_holds_pipe, setsid_child, steps_after_done, step_overlap, sigterm_self]
  step_ms: [1]
  virtual_time: [true]
  inject_at_step: [5]
include:
  - {inject: wrong_type, fault_field: READY.effective, step_ms: 1, virtual_time: true, inject_at_step: 5}
measure:
  min_steps: 20
  min_time_s: 0.05
  max_time_s: 1.0
)");
  auto run = Dlbench({"run", matrix, "--out", dir / "out", "--no-monitor"}, dir, db);
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  std::map<std::string, record::CellRecord> by_inject;
  for (auto& c : Cells(db, 1)) by_inject[c.params["inject"].get<std::string>()] = c;
  ASSERT_EQ(by_inject.size(), 8u);
  EXPECT_EQ(by_inject["none"].outcome, record::Outcome::kOk);
  EXPECT_EQ(by_inject["close_protocol"].outcome, record::Outcome::kInvalid)
      << by_inject["close_protocol"].message;
  EXPECT_EQ(by_inject["close_protocol"].message.find("SIGTERM"), std::string::npos)
      << "a signal dlbench sent is not the runner's crash: " << by_inject["close_protocol"].message;
  for (const char* child : {"child_holds_pipe", "setsid_child"}) {
    const record::CellRecord& c = by_inject[child];
    EXPECT_EQ(c.outcome, record::Outcome::kOk) << child << ": " << c.message;
    const pid_t pid = c.extras["info"]["child_pid"].get<pid_t>();
    EXPECT_NE(::kill(pid, 0), 0) << child << ": the runner's child " << pid << " outlived the run";
  }
  EXPECT_EQ(by_inject["steps_after_done"].message, "protocol violation: STEPS after DONE");
  EXPECT_NE(by_inject["step_overlap"].message.find("STEPS: rank 0 step 5 starts at"), std::string::npos)
      << by_inject["step_overlap"].message;
  EXPECT_EQ(by_inject["sigterm_self"].outcome, record::Outcome::kCrashed);
  EXPECT_EQ(by_inject["wrong_type"].outcome, record::Outcome::kInvalid);
  EXPECT_NE(by_inject["wrong_type"].message.find("READY.effective must be an object (got an array)"),
            std::string::npos)
      << by_inject["wrong_type"].message;
  EXPECT_EQ(IntegrityCheck(db), "ok");
}

// An output folder nothing can be made in: the run is marked failed, not left `running`.
TEST(FaultE2E, AnEarlyIoFailureMarksTheRunFailed) {
  TempDir dir("out_proc");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, "runner: null\nmatrix:\n  step_ms: [1]\n  virtual_time: [true]\n");
  auto run = Dlbench({"run", matrix, "--out", "/proc/1", "--no-monitor"}, dir, db);
  EXPECT_EQ(run.exit_code, 4) << run.err;
  EXPECT_NE(
      run.err.find("/proc/1/" +
                   orchestrator::StoreFolderName(std::filesystem::weakly_canonical(db).string()) + "/run-1"),
      std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("run 1 is marked failed"), std::string::npos) << run.err;
  EXPECT_EQ(StatusOf(db, 1), record::RunStatus::kFailed);
}

// Cells of about a second each: a run that stays alive while another command tries to take it.
constexpr char kSlowMatrix[] = R"(runner: null
matrix:
  model: [a, b, c, d, e, f]
  step_ms: [1]
  setup_ms: [700]
  virtual_time: [true]
measure:
  min_steps: 20
  min_time_s: 0.05
  max_time_s: 0.5
)";

// One process at a time runs a run's cells: a resume while the run is alive, or while another
// resume runs it, is refused naming the holder; after the holder's death a resume completes the
// run with every cell stored once.
TEST(FaultE2E, ASecondResumeOfALiveRunIsRefusedNamingTheHolder) {
  TempDir dir("resume_lock");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, kSlowMatrix);
  Subprocess first = StartRun({"run", matrix, "--out", dir / "out", "--no-monitor"}, db, dir, "first");
  ASSERT_GE(WaitForStoredCells(db, 1, 1, 60), 1u) << Text(dir / "first.err");

  auto refused = Dlbench({"run", matrix, "--out", dir / "out", "--resume", "1", "--no-monitor"}, dir, db);
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("run 1 is being run by pid " + std::to_string(first.pid()) + " on host "),
            std::string::npos)
      << refused.err;

  ::kill(first.pid(), SIGKILL);
  first.Wait();
  const std::size_t before = Cells(db, 1).size();
  ASSERT_LT(before, 6u) << "the first run finished too early for this test";

  Subprocess second =
      StartRun({"run", matrix, "--out", dir / "out", "--resume", "1", "--no-monitor"}, db, dir, "second");
  // Once the resume has stored a cell it holds the run: a third is refused.
  ASSERT_GE(WaitForStoredCells(db, 1, before + 1, 60), before + 1) << Text(dir / "second.err");
  auto third = Dlbench({"run", matrix, "--out", dir / "out", "--resume", "1", "--no-monitor"}, dir, db);
  if (!second.TryWait()) {
    EXPECT_EQ(third.exit_code, 2) << third.err;
    EXPECT_NE(third.err.find("run 1 is being run by pid " + std::to_string(second.pid())), std::string::npos)
        << third.err;
  }
  EXPECT_EQ(second.Wait().code, 0) << Text(dir / "second.err");
  const auto cells = Cells(db, 1);
  std::set<std::string> ids;
  for (const auto& c : cells) EXPECT_TRUE(ids.insert(c.cell_id).second) << c.cell_id << " stored twice";
  EXPECT_EQ(ids.size(), 6u);
  EXPECT_EQ(StatusOf(db, 1), record::RunStatus::kCompleted);
}

// Ctrl-C while the runner ignores STOP and SIGTERM: dlbench is back within the interrupt grace
// (about 2 s, docs/cli.md), where it took 13 s, and the run is resumable.
TEST(FaultE2E, CtrlCWithAHungRunnerStopsWithinAboutTwoSeconds) {
  TempDir dir("ctrl_c");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix,
            "runner: null\nmatrix:\n  model: [a, b]\n  inject: [hang_after_stop]\n  step_ms: [1]\n"
            "  virtual_time: [true]\nmeasure:\n  min_steps: 20\n  min_time_s: 0.05\n  max_time_s: 0.5\n");
  Subprocess run = StartRun({"run", matrix, "--out", dir / "out", "--no-monitor"}, db, dir, "run");
  // The first cell's runner hangs once its STOP arrived: its log says so.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  const std::string log =
      dir / ("out/" + orchestrator::StoreFolderName(std::filesystem::weakly_canonical(db).string()) +
             "/run-1/cell-0000.stderr.log");
  while (Text(log).find("hanging") == std::string::npos && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_NE(Text(log).find("hanging"), std::string::npos);
  const auto t0 = std::chrono::steady_clock::now();
  ::kill(run.pid(), SIGINT);
  const ExitStatus st = run.Wait();
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(st.code, 130) << Text(dir / "run.err");
  EXPECT_LT(took_s, 8.0) << "Ctrl-C must take about 2 s, not the STOP grace";
  EXPECT_EQ(StatusOf(db, 1), record::RunStatus::kInterrupted);
  EXPECT_NE(Text(dir / "run.err").find("--resume 1"), std::string::npos) << Text(dir / "run.err");
}

// SIGKILL at 50 seeded moments of a run, some inside the transaction of a cell with 60k steps:
// each time the database passes integrity_check, every stored cell is whole, and a resume
// completes the run without running a stored cell again.
TEST(FaultE2E, SigkillAtFiftyMomentsLosesNothingAndResumeCompletes) {
  TempDir dir("sigkill_loop");
  const std::string matrix = dir / "m.yaml";
  // Three quick cells (steps without jitter meet the CI target at once) and one whose 5% jitter
  // never meets target_rel_ci 0.0001: it runs to max_steps, 60k virtual 0.1 ms steps, and its
  // PutCell is the large transaction.
  WriteText(matrix, R"(runner: null
matrix:
  model: [a, b, c]
  step_ms: [1]
  virtual_time: [true]
  virtual_speedup: [100000]
include:
  - {model: big, step_ms: 0.1, jitter_pct: 5, virtual_time: true, virtual_speedup: 100000}
measure:
  min_steps: 20
  min_time_s: 0.01
  max_time_s: 60
  max_steps: 60000
  target_rel_ci: 0.0001
)");
  // The kill moments are fractions of how long one whole run takes here and now, so they land
  // while the run runs however loaded the machine is.
  const auto whole_t0 = std::chrono::steady_clock::now();
  {
    const std::string db = dir / "whole.db";
    auto whole = Dlbench({"run", matrix, "--out", dir / "out", "--no-monitor"}, dir, db);
    ASSERT_EQ(whole.exit_code, 0) << whole.err;
    ASSERT_EQ(Cells(db, 1).size(), 4u);
  }
  const auto whole_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - whole_t0)
          .count();
  std::mt19937_64 rng(20240519);
  std::uniform_int_distribution<std::int64_t> delay_ms(0, std::max<std::int64_t>(1, whole_ms * 8 / 10));
  int killed_running = 0;
  int killed_with_cells = 0;  // kills that landed after some cell was stored
  for (int round = 0; round < 50; ++round) {
    const std::string db = dir / ("r" + std::to_string(round) + ".db");
    Subprocess p = StartRun({"run", matrix, "--out", dir / "out", "--no-monitor"}, db, dir, "kill");
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    const bool killed = !p.TryWait();
    if (killed) {
      ++killed_running;
      ::kill(p.pid(), SIGKILL);
    }
    p.Wait();
    const bool has_run = std::filesystem::exists(db) && store::OpenSqliteStore(db).ok() &&
                         (*store::OpenSqliteStore(db))->GetRun(1).ok();
    if (std::filesystem::exists(db)) {
      ASSERT_EQ(IntegrityCheck(db), "ok") << "round " << round;
    }
    std::map<std::string, std::int64_t> stored;  // cell id -> started_wall_ns
    if (has_run) {
      for (const auto& c : Cells(db, 1, /*steps=*/true)) {
        stored[c.cell_id] = c.started_wall_ns;
        EXPECT_EQ(c.outcome, record::Outcome::kOk)
            << "round " << round << " " << c.label << ": " << c.message;
        ASSERT_TRUE(c.window.has_value()) << c.label;
        EXPECT_GE(static_cast<std::int64_t>(c.steps.size()), c.window->first_step + c.window->steps)
            << "round " << round << ": a stored cell is whole: " << c.label;
      }
    }
    if (killed && !stored.empty()) ++killed_with_cells;
    // Killed before the run existed: nothing to resume, and a fresh run must work on this file.
    std::vector<std::string> args = {"run", matrix, "--out", dir / "out", "--no-monitor"};
    if (has_run) args.insert(args.end(), {"--resume", "1"});
    auto finish = Dlbench(args, dir, db);
    ASSERT_EQ(finish.exit_code, 0) << "round " << round << "\n" << finish.err;
    const auto cells = Cells(db, 1);
    EXPECT_EQ(cells.size(), 4u) << "round " << round;
    std::set<std::string> ids;
    for (const auto& c : cells) {
      EXPECT_TRUE(ids.insert(c.cell_id).second) << "round " << round << ": " << c.cell_id << " stored twice";
      auto before = stored.find(c.cell_id);
      if (before != stored.end()) {
        EXPECT_EQ(c.started_wall_ns, before->second)
            << "round " << round << ": " << c.cell_id << " ran again";
      }
    }
    EXPECT_EQ(StatusOf(db, 1), record::RunStatus::kCompleted) << "round " << round;
    std::filesystem::remove(db);
    std::filesystem::remove(db + "-wal");
    std::filesystem::remove(db + "-shm");
  }
  std::printf("[ info ] 50 kills: %d while dlbench ran, %d of those after cells were stored\n",
              killed_running, killed_with_cells);
  EXPECT_GE(killed_running, 25) << "most kills must land while the run runs";
}

}  // namespace
}  // namespace dlbench::e2e
