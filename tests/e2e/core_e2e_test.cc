// The core promise end to end: a matrix becomes stored results; every injected failure becomes
// its outcome while the other cells finish; Ctrl-C and SIGKILL lose nothing that finished, and
// --resume completes the run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <thread>

#include "e2e_sqlite.h"
#include "e2e_util.h"
#include "store/result_store.h"

namespace dlbench::e2e {
namespace {

constexpr char kSmokeMatrix[] = R"(name: smoke
runner: null
matrix:
  model: [tiny, small]
  batch_size: [1, 8]
  step_ms: [0.3]
measure:
  min_steps: 20
  min_time_s: 0.1
  max_time_s: 1.0
  target_rel_ci: 0.05
)";

TEST(CoreE2E, SmokeMatrixIsStoredAndShown) {
  TempDir dir("smoke");
  const std::string matrix = dir / "smoke.yaml", db = dir / "r.db";
  WriteText(matrix, kSmokeMatrix);

  auto plan = Dlbench({"plan", matrix}, dir, db);
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("4 cells"), std::string::npos) << plan.out;

  auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("samples/s"), std::string::npos) << "results table missing:\n" << run.out;
  EXPECT_NE(run.err.find("[4/4]"), std::string::npos) << "progress missing:\n" << run.err;

  auto cells = Cells(db, 1, true);
  ASSERT_EQ(cells.size(), 4u);
  for (const auto& c : cells) {
    EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
    EXPECT_FALSE(c.steps.empty());
    EXPECT_TRUE(std::filesystem::exists(c.stderr_path)) << c.stderr_path;
    bool has_throughput = false;
    for (const auto& m : c.metrics) has_throughput |= m.name == "samples_per_s" && m.value > 0;
    EXPECT_TRUE(has_throughput) << c.label;
  }
  EXPECT_EQ(IntegrityCheck(db), "ok");

  auto runs = Dlbench({"runs"}, dir, db);
  EXPECT_EQ(runs.exit_code, 0);
  EXPECT_NE(runs.out.find("smoke"), std::string::npos) << runs.out;
  EXPECT_NE(runs.out.find("completed"), std::string::npos) << runs.out;
  auto show = Dlbench({"show", "latest"}, dir, db);
  EXPECT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("run 1"), std::string::npos) << show.out;
  EXPECT_EQ(show.out.find("selection:"), std::string::npos) << "the whole matrix names no selection:\n"
                                                            << show.out;
  auto missing = Dlbench({"show", "99"}, dir, db);
  EXPECT_NE(missing.exit_code, 0);
}

TEST(CoreE2E, EveryInjectedFailureGetsItsOutcomeAndTheMatrixGoesOn) {
  TempDir dir("failures");
  const std::string matrix = dir / "f.yaml", db = dir / "r.db";
  WriteText(matrix, R"(runner: null
timeout_s: 3
matrix:
  inject: [none, crash, exit, hang, garbage, oom, leak]
  step_ms: [0.2]
  inject_at_step: [5]
measure:
  min_steps: 20
  min_time_s: 0.1
  max_time_s: 1.0
)");
  auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
  EXPECT_EQ(run.exit_code, 1) << "some cells failed, so run must exit 1\n" << run.out << run.err;
  std::map<std::string, std::string> outcome_by_inject;
  for (const auto& c : Cells(db, 1))
    outcome_by_inject[c.params["inject"].get<std::string>()] = std::string(record::Name(c.outcome));
  EXPECT_EQ(outcome_by_inject["none"], "ok");
  EXPECT_EQ(outcome_by_inject["crash"], "crashed");
  EXPECT_EQ(outcome_by_inject["exit"], "error");
  EXPECT_EQ(outcome_by_inject["hang"], "timeout");
  EXPECT_EQ(outcome_by_inject["garbage"], "invalid");
  EXPECT_EQ(outcome_by_inject["oom"], "oom");
  EXPECT_EQ(outcome_by_inject["leak"], "ok");
  auto show = Dlbench({"show", "1"}, dir, db);
  EXPECT_NE(show.out.find("SIGSEGV"), std::string::npos) << show.out;
}

TEST(CoreE2E, BadMatrixNamesFileLineAndColumnAndRunsNothing) {
  TempDir dir("bad");
  const std::string matrix = dir / "bad.yaml", db = dir / "r.db";
  WriteText(matrix, "runner: null\nmatrix:\n  batch_size: [1, -4]\n");
  auto run = Dlbench({"run", matrix}, dir, db);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("bad.yaml:3:"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("batch_size"), std::string::npos) << run.err;
  EXPECT_FALSE(std::filesystem::exists(db)) << "nothing may run (or be stored) on bad input";
}

// Starts `dlbench run` in the background and returns it.
Subprocess StartRun(const std::string& matrix, const std::string& db, const TempDir& dir,
                    const std::vector<std::string>& extra = {}) {
  SpawnOptions o;
  o.argv = {Bin("dlbench"), "--db", db, "run", matrix, "--out", dir / "out"};
  o.argv.insert(o.argv.end(), extra.begin(), extra.end());
  o.stdout_path = dir / "bg.out";
  o.stderr_path = dir / "bg.err";
  o.new_process_group = false;  // so the signal reaches dlbench alone, as a user's kill would
  auto p = Subprocess::Spawn(o);
  EXPECT_TRUE(p.ok());
  return std::move(p).value();
}

constexpr char kLongMatrix[] = R"(runner: null
matrix:
  model: [a, b, c, d, e, f, g, h]
  step_ms: [1]
measure:
  min_steps: 20
  min_time_s: 0.2
  max_time_s: 0.8
)";

TEST(CoreE2E, SigkillLosesNoFinishedCellAndResumeCompletes) {
  TempDir dir("sigkill");
  const std::string matrix = dir / "long.yaml", db = dir / "r.db";
  WriteText(matrix, kLongMatrix);
  auto p = StartRun(matrix, db, dir);
  ASSERT_GE(WaitForStoredCells(db, 1, 3, 60), 3u) << ReadFile(dir / "bg.err").value();
  p.SignalGroup(SIGKILL);  // not its own group: signals dlbench alone
  ::kill(p.pid(), SIGKILL);
  p.Wait();

  EXPECT_EQ(IntegrityCheck(db), "ok");
  auto before = Cells(db, 1, true);
  ASSERT_GE(before.size(), 3u);
  for (const auto& c : before) {
    EXPECT_EQ(c.outcome, record::Outcome::kOk);
    EXPECT_FALSE(c.steps.empty()) << "a stored cell must be complete";
  }

  auto resumed = Dlbench({"run", matrix, "--out", dir / "out", "--resume", "1"}, dir, db);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  auto after = Cells(db, 1);
  EXPECT_EQ(after.size(), 8u);
  std::set<std::string> ids;
  for (const auto& c : after) ids.insert(c.cell_id);
  EXPECT_EQ(ids.size(), 8u) << "no cell may be stored twice";
  auto runs = Dlbench({"runs"}, dir, db);
  EXPECT_NE(runs.out.find("completed"), std::string::npos) << runs.out;
}

TEST(CoreE2E, CtrlCStopsTheCellKeepsFinishedOnesAndMarksTheRunInterrupted) {
  TempDir dir("sigint");
  const std::string matrix = dir / "long.yaml", db = dir / "r.db";
  WriteText(matrix, kLongMatrix);
  auto p = StartRun(matrix, db, dir);
  ASSERT_GE(WaitForStoredCells(db, 1, 2, 60), 2u);
  ::kill(p.pid(), SIGINT);
  auto st = p.Wait();
  EXPECT_EQ(st.code, 130) << ReadFile(dir / "bg.err").value();
  auto err = ReadFile(dir / "bg.err").value();
  EXPECT_NE(err.find("--resume 1"), std::string::npos) << err;
  auto runs = Dlbench({"runs"}, dir, db);
  EXPECT_NE(runs.out.find("interrupted"), std::string::npos) << runs.out;
  const auto stored = Cells(db, 1).size();
  EXPECT_GE(stored, 2u);
  EXPECT_LT(stored, 8u);
  auto resumed = Dlbench({"run", matrix, "--out", dir / "out", "--resume", "latest"}, dir, db);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(Cells(db, 1).size(), 8u);
}

// A run resumed where the machine differs in what decides comparability is refused, naming the
// difference; with --resume-elsewhere its resumed cells record it (extras.resume), the others not.
TEST(CoreE2E, AResumeOnAnotherKindOfMachineIsRefusedUnlessElsewhereAndThenRecorded) {
  TempDir dir("elsewhere");
  const std::string matrix = dir / "long.yaml", db = dir / "r.db";
  WriteText(matrix, kLongMatrix);
  auto p = StartRun(matrix, db, dir);
  ASSERT_GE(WaitForStoredCells(db, 1, 2, 60), 2u);
  ::kill(p.pid(), SIGINT);
  p.Wait();
  const std::size_t before = Cells(db, 1).size();
  ASSERT_LT(before, 8u);
  // The run "started" on another CPU: its stored fingerprint says so.
  ExecuteSql(db,
             "UPDATE environments SET fingerprint = json_set(fingerprint, '$.host.cpu_model', "
             "'Another CPU 9000') WHERE id = (SELECT environment_id FROM runs WHERE id = 1)");

  auto refused = Dlbench({"run", matrix, "--out", dir / "out", "--resume", "1"}, dir, db);
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("/host/cpu_model: Another CPU 9000 -> "), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--resume-elsewhere"), std::string::npos) << refused.err;
  EXPECT_EQ(Cells(db, 1).size(), before) << "a refused resume runs nothing";

  auto resumed =
      Dlbench({"run", matrix, "--out", dir / "out", "--resume", "1", "--resume-elsewhere"}, dir, db);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("differs in what decides comparability"), std::string::npos) << resumed.err;
  auto after = Cells(db, 1);
  ASSERT_EQ(after.size(), 8u);
  std::size_t marked = 0;
  for (const auto& c : after) {
    if (!c.extras.contains("resume")) continue;
    ++marked;
    EXPECT_EQ(c.extras["resume"]["decisive_change_count"], 1) << c.extras["resume"].dump();
    EXPECT_EQ(c.extras["resume"]["decisive_changes"][0].get<std::string>().rfind(
                  "/host/cpu_model: Another CPU 9000 -> ", 0),
              0u);
  }
  EXPECT_EQ(marked, 8u - before) << "exactly the resumed cells record the difference";

  auto alone = Dlbench({"run", matrix, "--resume-elsewhere"}, dir, db);
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_NE(alone.err.find("--resume-elsewhere goes with --resume ID"), std::string::npos) << alone.err;
}

TEST(CoreE2E, OnlyFilterRunsMatchingCells) {
  TempDir dir("only");
  const std::string matrix = dir / "smoke.yaml", db = dir / "r.db";
  WriteText(matrix, kSmokeMatrix);
  auto run = Dlbench({"run", matrix, "--out", dir / "out", "--only", "model=tiny,batch_size=8"}, dir, db);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto cells = Cells(db, 1);
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].params["model"], "tiny");
  EXPECT_EQ(cells[0].params["batch_size"], 8);
  auto show = Dlbench({"show", "1"}, dir, db);
  EXPECT_NE(show.out.find("\n  selection: --only model=tiny,batch_size=8\n"), std::string::npos) << show.out;
  auto none = Dlbench({"run", matrix, "--only", "model=nosuch"}, dir, db);
  EXPECT_EQ(none.exit_code, 2);
}

TEST(CoreE2E, APythonProgramSpeakingTheProtocolIsARunner) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "python3 not installed";
  TempDir dir("python");
  const std::string matrix = dir / "py.yaml", db = dir / "r.db";
  WriteText(matrix,
            std::string("runner:\n  command: [/usr/bin/python3, ") + DLBENCH_SOURCE_DIR +
                "/clients/python/examples/sleep_runner.py]\nmatrix:\n  step_ms: [2]\n  batch_size: [4]\n"
                "measure:\n  min_steps: 20\n  min_time_s: 0.2\n  max_time_s: 1.5\n");
  auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto cells = Cells(db, 1, true);
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].hello["runner"], "python-sleep");
  EXPECT_GE(cells[0].steps.size(), 20u);
  EXPECT_EQ(cells[0].steps[0].record.samples, 4u);
}

// Runners start with a soft core limit of 0 (a crash leaves no core file beside the results)
// unless `run --runner-core-dumps`, which passes dlbench's own limit on. The command runner records
// its limit and is then the null runner; dlbench is started with its soft limit at the hard one.
// An ASan-built dlbench zeroes its own soft limit as it starts (ASan's disable_coredump=1 on 64-bit),
// so the test tells it not to: the wrapping shell, not instrumented, records what dlbench passed on.
TEST(CoreE2E, RunnersDumpNoCoreUnlessAskedTo) {
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_CORE, &saved), 0);
  if (saved.rlim_max == 0) GTEST_SKIP() << "the hard RLIMIT_CORE is 0 here: no difference to see";
  struct rlimit raised = saved;
  raised.rlim_cur = saved.rlim_max;
  ASSERT_EQ(::setrlimit(RLIMIT_CORE, &raised), 0);
  const char* asan_env = std::getenv("ASAN_OPTIONS");
  const std::optional<std::string> asan_options =
      asan_env != nullptr ? std::optional<std::string>(asan_env) : std::nullopt;
  const std::string asan_prefix = asan_options && !asan_options->empty() ? *asan_options + ":" : "";
  ASSERT_EQ(::setenv("ASAN_OPTIONS", (asan_prefix + "disable_coredump=0").c_str(), 1), 0);
  const std::string hard =
      saved.rlim_max == RLIM_INFINITY ? "unlimited" : std::to_string(saved.rlim_max / 512);
  for (const bool asked : {false, true}) {
    TempDir dir(asked ? "cores" : "nocores");
    const std::string matrix = dir / "core.yaml", db = dir / "r.db";
    WriteText(matrix,
              "runner:\n  command: [/bin/sh, -c, 'ulimit -S -c > \"$0/core-limit-$$.txt\"; exec \"$1\"', " +
                  dir.path().string() + ", " + Bin("dlbench-null") +
                  "]\nmatrix:\n  model: [x]\nmeasure:\n  min_steps: 5\n  min_time_s: 0.02\n"
                  "  max_time_s: 0.1\n");
    std::vector<std::string> args = {"run", matrix, "--out", dir / "out"};
    if (asked) args.push_back("--runner-core-dumps");
    auto run = Dlbench(args, dir, db);
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      if (entry.path().filename().string().rfind("core-limit-", 0) != 0) continue;
      ++files;
      auto text = ReadFile(entry.path().string());
      ASSERT_TRUE(text.ok());
      EXPECT_EQ(*text, (asked ? hard : std::string("0")) + "\n")
          << (asked ? "with" : "without") << " the flag";
    }
    EXPECT_EQ(files, 2) << "the probe and the cell";
  }
  if (asan_options) {
    ::setenv("ASAN_OPTIONS", asan_options->c_str(), 1);
  } else {
    ::unsetenv("ASAN_OPTIONS");
  }
  ASSERT_EQ(::setrlimit(RLIMIT_CORE, &saved), 0);
}

TEST(CoreE2E, EnvPrintsAFingerprintWithItsHash) {
  TempDir dir("env");
  auto env = Dlbench({"env", "--runner", "null"}, dir, dir / "r.db");
  ASSERT_EQ(env.exit_code, 0) << env.err;
  auto j = nlohmann::json::parse(env.out);
  EXPECT_FALSE(j["comparability_hash"].get<std::string>().empty());
  EXPECT_TRUE(j["fingerprint"].is_object());
}

}  // namespace
}  // namespace dlbench::e2e
