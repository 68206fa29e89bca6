// `dlbench run --runner-reuse` end to end (docs/adr/0011-runner-reuse.md): consecutive cells that
// agree on every process-level setting share one runner process, each measured as without reuse;
// a crash ends its own cell only; cells that differ at process start do not share. The null
// runner's steps are on a virtual clock, so the figures compared are exact.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "e2e_sqlite.h"
#include "e2e_util.h"
#include "record/metrics.h"
#include "record/records.h"

namespace dlbench::e2e {
namespace {

constexpr char kMeasure[] = R"(measure:
  min_steps: 50
  min_time_s: 0.1
  max_time_s: 2
)";

// pid of the process that served the cell, from extras.runner_process; -1 without one.
long PidOf(const record::CellRecord& c) {
  if (!c.extras.contains("runner_process") || !c.extras["runner_process"].contains("pid")) return -1;
  return c.extras["runner_process"]["pid"].get<long>();
}

int CellOfProcess(const record::CellRecord& c) {
  return c.extras.value("runner_process", nlohmann::json::object()).value("cell_of_process", 0);
}

std::vector<record::CellRecord> RunMatrix(const TempDir& dir, const std::string& name,
                                          const std::string& text, bool reuse, int expect_exit = 0) {
  const std::string matrix = dir / (name + ".yaml"), db = dir / (name + ".db");
  WriteText(matrix, text);
  std::vector<std::string> args = {"run", matrix, "--out", dir / (name + "-out"), "--no-monitor"};
  if (reuse) args.push_back("--runner-reuse");
  const CommandResult run = Dlbench(args, dir, db);
  EXPECT_EQ(run.exit_code, expect_exit) << run.out << run.err;
  return Cells(db, 1, /*steps=*/true);
}

TEST(ReuseE2E, FourCellsShareOneProcessAndMeasureAsWithoutReuse) {
  TempDir dir("reuse_four");
  const std::string text = std::string(R"(runner: null
matrix:
  batch_size: [1, 2, 4, 8]
  step_ms: [2]
  jitter_pct: [5]
  virtual_time: [true]
)") + kMeasure;
  const auto alone = RunMatrix(dir, "alone", text, false);
  const auto shared = RunMatrix(dir, "shared", text, true);
  ASSERT_EQ(alone.size(), 4u);
  ASSERT_EQ(shared.size(), 4u);
  std::set<long> pids;
  for (std::size_t i = 0; i < 4; ++i) {
    const record::CellRecord& a = alone[i];
    const record::CellRecord& s = shared[i];
    SCOPED_TRACE(s.label);
    EXPECT_EQ(s.outcome, record::Outcome::kOk) << s.message;
    EXPECT_EQ(s.verdict, a.verdict);
    pids.insert(PidOf(s));
    EXPECT_EQ(CellOfProcess(s), static_cast<int>(i) + 1) << s.extras.dump();
    EXPECT_FALSE(a.extras.contains("runner_process")) << "without --runner-reuse nothing is recorded";
    // The same measured steps, so the same figures: the virtual clock and the seed decide them (the
    // steps stored after STOP depend on how far the runner ran past it in real time).
    for (std::string_view m :
         {record::metric::kSamplesPerS, record::metric::kStepTimeMeanNs, record::metric::kMeasuredSteps}) {
      ASSERT_TRUE(record::MetricValue(s, m).has_value()) << m;
      EXPECT_EQ(record::MetricValue(s, m), record::MetricValue(a, m)) << m;
    }
    if (i > 0) {
      EXPECT_TRUE(s.extras["runner_process"].contains("startup_not_paid_s"));
      EXPECT_EQ(s.extras["runner_process"]["first_cell_index"], 0);
      // Each cell keeps its own log files; the process's start-up is in the first cell's.
      EXPECT_NE(s.stderr_path, shared[0].stderr_path);
      EXPECT_EQ(s.extras["runner_process"]["startup_log"], shared[0].stderr_path);
    }
  }
  EXPECT_EQ(pids.size(), 1u) << "one process served the four cells";
  EXPECT_GT(*pids.begin(), 0);
  EXPECT_NE(::kill(static_cast<pid_t>(*pids.begin()), 0), 0) << "the shared runner outlived the run";
}

// Six cells that differ at process start: cuda_alloc_conf (the runner's environment), model (a
// process-level key) and memory_cap (a limit on the process).
const std::string kDifferMatrix = R"(runner: null
matrix:
  batch_size: [1, 2, 3, 4, 5, 6]
  step_ms: [2]
  virtual_time: [true]
include:
  - {batch_size: 3, cuda_alloc_conf: "expandable_segments:True"}
  - {batch_size: 4, model: b, cuda_alloc_conf: "expandable_segments:True"}
  - {batch_size: 5, model: b, cuda_alloc_conf: "expandable_segments:True", memory_cap: 1GiB}
  - {batch_size: 6, model: b, cuda_alloc_conf: "expandable_segments:True"}
)";

TEST(ReuseE2E, ACrashEndsItsOwnCellAndTheNextCellGetsANewProcess) {
  TempDir dir("reuse_crash");
  const auto cells = RunMatrix(dir, "crash", std::string(R"(runner: null
matrix:
  batch_size: [1, 2, 3, 4]
  step_ms: [2]
  virtual_time: [true]
  inject_at_step: [5]
include:
  - {batch_size: 2, inject: crash}
)") + kMeasure,
                               true, /*expect_exit=*/1);
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0].outcome, record::Outcome::kOk) << cells[0].message;
  EXPECT_EQ(cells[1].outcome, record::Outcome::kCrashed) << cells[1].message;
  EXPECT_NE(cells[1].message.find("SIGSEGV"), std::string::npos) << cells[1].message;
  EXPECT_EQ(cells[2].outcome, record::Outcome::kOk) << cells[2].message;
  EXPECT_EQ(cells[3].outcome, record::Outcome::kOk) << cells[3].message;
  EXPECT_EQ(PidOf(cells[0]), PidOf(cells[1])) << "cell 2 ran in cell 1's process";
  EXPECT_EQ(CellOfProcess(cells[1]), 2);
  EXPECT_EQ(cells[1].extras["runner_process"]["reuse"], "ended with this cell");
  EXPECT_NE(PidOf(cells[2]), PidOf(cells[1])) << "cell 3 started a new process";
  EXPECT_EQ(CellOfProcess(cells[2]), 1);
  EXPECT_EQ(PidOf(cells[3]), PidOf(cells[2]));
}

// Three cells, the second injecting `inject` (a late frame after its DONE), run without and with
// --runner-reuse; each run's three cells. The idle baseline (0.2 s, before the take) leaves the
// runner ample time to write a frame before the take.
struct LateFrameRuns {
  std::vector<record::CellRecord> alone, shared;
};
LateFrameRuns RunWithALateFrame(const TempDir& dir, const std::string& inject) {
  const std::string text = std::string(R"(runner: null
matrix:
  batch_size: [1, 2, 3]
  step_ms: [2]
  jitter_pct: [5]
  virtual_time: [true]
include:
  - {batch_size: 2, inject: )") +
                           inject + "}\n" + kMeasure + "  idle_baseline_s: 0.2\n";
  auto run = [&](const std::string& name, bool reuse) {
    const std::string matrix = dir / (name + ".yaml"), db = dir / (name + ".db");
    WriteText(matrix, text);
    std::vector<std::string> args = {"run", matrix, "--out", dir / (name + "-out")};
    if (reuse) args.push_back("--runner-reuse");
    const CommandResult r = Dlbench(args, dir, db);
    EXPECT_EQ(r.exit_code, reuse ? 0 : 1) << r.out << r.err;
    return Cells(db, 1, /*steps=*/true);
  };
  LateFrameRuns runs{run("alone", false), run("shared", true)};
  EXPECT_EQ(runs.alone.size(), 3u);
  EXPECT_EQ(runs.shared.size(), 3u);
  return runs;
}

// Cell 2 released its process with its DONE (the late frame came after), cell 3 ran in a fresh
// process, measured exactly as without reuse (the steps stored after STOP depend on real time),
// with `warning` as its one warning and its previous_process.
void ExpectTheNextCellUntouched(const LateFrameRuns& runs, const std::string& warning) {
  ASSERT_EQ(runs.alone.size(), 3u);
  ASSERT_EQ(runs.shared.size(), 3u);
  // Without reuse the driver reads on after DONE: the late frame is that cell's protocol violation.
  EXPECT_EQ(runs.alone[1].outcome, record::Outcome::kInvalid) << runs.alone[1].message;
  EXPECT_NE(runs.alone[1].message.find("protocol violation: STEPS after DONE"), std::string::npos)
      << runs.alone[1].message;
  const record::CellRecord& late = runs.shared[1];
  EXPECT_EQ(late.outcome, record::Outcome::kOk) << late.message;
  EXPECT_EQ(late.extras["runner_process"]["reuse"], "kept for the next cell") << late.extras.dump();
  EXPECT_EQ(PidOf(runs.shared[0]), PidOf(late));
  const record::CellRecord& next = runs.shared[2];
  EXPECT_EQ(next.outcome, record::Outcome::kOk) << next.message;
  EXPECT_NE(PidOf(next), PidOf(late)) << "the process that sent the late frame served on";
  EXPECT_EQ(CellOfProcess(next), 1);
  ASSERT_TRUE(next.extras.contains("warnings")) << next.extras.dump();
  EXPECT_EQ(next.extras["warnings"], nlohmann::json::array({warning}));
  EXPECT_EQ(next.extras["runner_process"]["previous_process"], warning);
  for (std::string_view m :
       {record::metric::kSamplesPerS, record::metric::kStepTimeMeanNs, record::metric::kMeasuredSteps}) {
    ASSERT_TRUE(record::MetricValue(next, m).has_value()) << m;
    EXPECT_EQ(record::MetricValue(next, m), record::MetricValue(runs.alone[2], m)) << m;
  }
}

// A kept runner that writes on its protocol pipe after the DONE that released it (the null runner
// waits until dlbench has read the DONE, then sends one more STEPS frame and waits for the next
// CONFIGURE) is ended when the next cell takes it (RunnerPool::Take finds the bytes): that cell
// starts a new process. Without the pool's check the frame is the next cell's first message.
TEST(ReuseE2E, AFrameSentAfterDoneEndsTheKeptProcessAndTheNextCellIsUntouched) {
  TempDir dir("reuse_late");
  const LateFrameRuns runs = RunWithALateFrame(dir, "late_steps_after_done");
  ASSERT_EQ(runs.shared.size(), 3u);
  const record::CellRecord& late = runs.shared[1];
  // One STEPS frame of one record: 8 bytes of frame header, 8 of rank and count, 48 of record.
  ExpectTheNextCellUntouched(runs, "the runner process kept after cell " + std::to_string(late.index) +
                                       " \"" + late.label + "\" (pid " + std::to_string(PidOf(late)) +
                                       ") sent 1 frame (STEPS), 64 bytes after that cell's DONE: it was "
                                       "ended, not reused");
}

// The same frame written later still: after the take, once the next cell's CONFIGURE has come (the
// null runner waits for it). The pool saw an empty pipe; the next cell's conversation gets STEPS
// before READY, names it the previous cell's, and the cell runs again in a fresh process.
TEST(ReuseE2E, AFrameSentAfterTheTakeSendsTheNextCellToAFreshProcess) {
  TempDir dir("reuse_late_take");
  const LateFrameRuns runs = RunWithALateFrame(dir, "late_steps_after_configure");
  ASSERT_EQ(runs.shared.size(), 3u);
  const record::CellRecord& late = runs.shared[1];
  ExpectTheNextCellUntouched(runs, "the runner process kept after cell " + std::to_string(late.index) +
                                       " \"" + late.label + "\" (pid " + std::to_string(PidOf(late)) +
                                       ") sent STEPS after this cell's CONFIGURE, before its READY: a frame "
                                       "written after that cell's DONE; it was ended and this cell ran in a "
                                       "fresh process");
}

TEST(ReuseE2E, CellsThatDifferAtProcessStartDoNotShare) {
  TempDir dir("reuse_differ");
  // cuda_alloc_conf is in the runner's environment, set before its exec; memory_cap limits the
  // process; model is one of the process-level keys.
  const auto cells = RunMatrix(dir, "differ", kDifferMatrix + kMeasure, true);
  ASSERT_EQ(cells.size(), 6u);
  for (const auto& c : cells) EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
  EXPECT_EQ(PidOf(cells[0]), PidOf(cells[1]));
  EXPECT_NE(PidOf(cells[2]), PidOf(cells[1])) << "another cuda_alloc_conf";
  EXPECT_NE(PidOf(cells[3]), PidOf(cells[2])) << "another model";
  EXPECT_EQ(PidOf(cells[4]), -1) << cells[4].extras.dump();
  EXPECT_EQ(cells[4].extras["runner_process"]["reuse"], "not shared: memory_cap limits its runner process");
  EXPECT_NE(PidOf(cells[5]), PidOf(cells[3])) << "the cell with a cap ended the kept process";
  EXPECT_EQ(CellOfProcess(cells[5]), 1);
}

// `plan --runner-reuse` says where run would put each cell (orchestrator::PlanRunnerReuse, the rule
// RunCell applies) and, once the store holds their time_to_hello_s, the start-up the shared cells
// save; a reused cell's stored 0 is not taken for its start-up.
TEST(ReuseE2E, PlanShowsWhichCellsShareAProcessAndTheStartUpItSaves) {
  TempDir dir("reuse_plan");
  const std::string db = dir / "r.db", differ = dir / "differ.yaml", four = dir / "four.yaml";
  // Planned only: the capped cell is not run (an ASan runtime cannot start under its RLIMIT_DATA).
  WriteText(differ, kDifferMatrix + kMeasure);
  const CommandResult text = Dlbench({"plan", differ, "--runner-reuse"}, dir, db);
  ASSERT_EQ(text.exit_code, 0) << text.out << text.err;
  EXPECT_NE(text.out.find("--runner-reuse: 6 cells in 5 runner processes: #0-#1, #2, #3, #4, #5\n"
                          "never sharing a process:\n  #4: memory_cap limits its runner process\n"
                          "1 cell would take the process the cell before it leaves"),
            std::string::npos)
      << text.out;
  const CommandResult js = Dlbench({"plan", differ, "--runner-reuse", "--json"}, dir, db);
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const auto planned = nlohmann::json::parse(js.out);
  ASSERT_EQ(planned.size(), 6u);
  std::vector<bool> shares;
  std::vector<int> process;
  for (const auto& c : planned) {
    shares.push_back(c["runner_process"]["shares_previous"].get<bool>());
    process.push_back(c["runner_process"]["process"].get<int>());
  }
  EXPECT_EQ(shares, (std::vector<bool>{false, true, false, false, false, false}));
  EXPECT_EQ(process, (std::vector<int>{0, 0, 1, 2, 3, 4}));
  EXPECT_EQ(planned[4]["runner_process"]["not_shared"], "memory_cap limits its runner process");
  const CommandResult plain = Dlbench({"plan", differ, "--json"}, dir, db);
  EXPECT_FALSE(nlohmann::json::parse(plain.out)[1].contains("runner_process")) << "only with --runner-reuse";

  WriteText(four, std::string(R"(runner: null
matrix:
  batch_size: [1, 2, 4]
  step_ms: [2]
  virtual_time: [true]
)") + kMeasure);
  const CommandResult none = Dlbench({"plan", four, "--runner-reuse"}, dir, db);
  EXPECT_NE(
      none.out.find("2 cells would take the process the cell before it leaves (when that cell ends with "
                    "DONE and the runner's HELLO says multi_cell): no stored time_to_hello_s for them yet"),
      std::string::npos)
      << none.out;
  ASSERT_EQ(Dlbench({"run", four, "--out", dir / "out", "--no-monitor"}, dir, db).exit_code, 0);
  const auto alone = Cells(db, 1, /*steps=*/false);
  ASSERT_EQ(alone.size(), 3u);
  auto saved_by_plan = [&] {
    const CommandResult p = Dlbench({"plan", four, "--runner-reuse", "--json"}, dir, db);
    std::vector<std::optional<double>> saved;
    for (const auto& c : nlohmann::json::parse(p.out)) {
      const auto& r = c["runner_process"];
      saved.push_back(r.contains("startup_saved_s")
                          ? std::optional<double>(r["startup_saved_s"].get<double>())
                          : std::nullopt);
    }
    return saved;
  };
  const std::vector<std::optional<double>> expected = {
      std::nullopt, record::MetricValue(alone[1], record::metric::kTimeToHelloS),
      record::MetricValue(alone[2], record::metric::kTimeToHelloS)};
  ASSERT_TRUE(expected[1] && *expected[1] > 0 && expected[2] && *expected[2] > 0);
  EXPECT_EQ(saved_by_plan(), expected);
  const CommandResult known = Dlbench({"plan", four, "--runner-reuse"}, dir, db);
  EXPECT_NE(known.out.find("--runner-reuse: 3 cells in 1 runner process: #0-#2\n"), std::string::npos)
      << known.out;
  EXPECT_NE(known.out.find(" of start-up saved, from the stored time_to_hello_s of each"), std::string::npos)
      << known.out;

  // The run puts the cells where the plan said; its reused cells store time_to_hello_s 0, which the
  // plan does not take for their start-up.
  ASSERT_EQ(Dlbench({"run", four, "--out", dir / "out", "--no-monitor", "--runner-reuse"}, dir, db).exit_code,
            0);
  const auto shared = Cells(db, 2, /*steps=*/false);
  ASSERT_EQ(shared.size(), 3u);
  EXPECT_EQ(PidOf(shared[0]), PidOf(shared[1]));
  EXPECT_EQ(PidOf(shared[1]), PidOf(shared[2]));
  EXPECT_EQ(record::MetricValue(shared[1], record::metric::kTimeToHelloS), 0.0);
  EXPECT_EQ(saved_by_plan(), expected);
}

// Ctrl-C while a shared process serves a cell: the run is interrupted, the process does not outlive
// dlbench, and `run --resume` with --runner-reuse completes the run in a new process.
TEST(ReuseE2E, CtrlCEndsTheSharedProcessAndResumeCompletesTheRun) {
  TempDir dir("reuse_ctrl_c");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  // Cell 3 steps in real time (virtual_speedup 1: 50 steps of 20 ms), so Ctrl-C finds it running.
  WriteText(matrix, std::string(R"(runner: null
matrix:
  batch_size: [1, 2, 3, 4]
  virtual_time: [true]
include:
  - {batch_size: 3, step_ms: 20, virtual_speedup: 1}
)") + kMeasure);
  SpawnOptions o;
  o.argv = {Bin("dlbench"), "--db",          db, "run", matrix, "--out", dir / "out",
            "--no-monitor", "--runner-reuse"};
  o.stdout_path = dir / "run.out";
  o.stderr_path = dir / "run.err";
  o.new_process_group = false;  // the signal reaches dlbench alone, as a user's kill would
  auto run = Subprocess::Spawn(o);
  ASSERT_TRUE(run.ok());
  ASSERT_GE(WaitForStoredCells(db, 1, 2, 60), 2u);
  ::kill(run->pid(), SIGINT);
  const ExitStatus st = run->Wait();
  EXPECT_EQ(st.code, 130) << *ReadFile(dir / "run.err");
  const auto before = Cells(db, 1);
  ASSERT_GE(before.size(), 2u);
  ASSERT_LT(before.size(), 4u) << "Ctrl-C came after the last cell";
  const long pid = PidOf(before[0]);
  ASSERT_GT(pid, 0);
  EXPECT_NE(::kill(static_cast<pid_t>(pid), 0), 0) << "the shared runner outlived Ctrl-C";

  const CommandResult resumed = Dlbench(
      {"run", matrix, "--resume", "1", "--out", dir / "out", "--no-monitor", "--runner-reuse"}, dir, db);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  const auto after = Cells(db, 1);
  ASSERT_EQ(after.size(), 4u);
  for (const auto& c : after) EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
  EXPECT_NE(PidOf(after[3]), pid) << "the resume started its own process";
}

#ifdef DLBENCH_HAVE_TORCH_RUNNER
TEST(ReuseE2E, TwoTinyTorchCellsOnTheCpuShareAProcessAndAreBothValid) {
  TempDir dir("reuse_torch");
  const auto cells = RunMatrix(dir, "torch", R"(runner: torch
matrix:
  model: [mobilenet_v2]
  scenario: [infer]
  batch_size: [2, 4]
  device: [cpu]
  threads: [1]
include:
  - {model: mobilenet_v2, image_size: 32, width_mult: 0.35}
seed: 1
measure:
  min_steps: 20
  min_time_s: 0.3
  max_time_s: 1.5
)",
                               true);
  ASSERT_EQ(cells.size(), 2u);
  for (const auto& c : cells) {
    EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
    EXPECT_TRUE(record::MetricValue(c, record::metric::kSamplesPerS).has_value()) << c.label;
  }
  EXPECT_EQ(PidOf(cells[0]), PidOf(cells[1])) << cells[1].extras.dump();
  EXPECT_EQ(CellOfProcess(cells[1]), 2);
  // The runner knows it is the process's second cell (and reset its peaks before it).
  EXPECT_EQ(cells[0].effective.value("process_cell", 0), 1) << cells[0].effective.dump();
  EXPECT_EQ(cells[1].effective.value("process_cell", 0), 2) << cells[1].effective.dump();
}
#endif

}  // namespace
}  // namespace dlbench::e2e
