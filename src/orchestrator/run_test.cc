// The run without the CLI: what observers are told and in which order, the progress file, the
// run lock that refuses a second resume, and a run that fails after it exists marked failed.
#include "orchestrator/run.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "common/files.h"
#include "orchestrator/progress_file.h"
#include "orchestrator/run_folder.h"
#include "record/metrics.h"
#include "record/progress.h"

namespace dlbench::orchestrator {
namespace {

// Writes down every call, as one line each.
class Recorder final : public RunObserver {
 public:
  explicit Recorder(std::string progress_path = "") : progress_path_(std::move(progress_path)) {}
  void OnRunStart(const RunStart& s) override {
    events.push_back(fmt::format("start run={} to_run={} finished={} resumed={}", s.run_id, s.to_run,
                                 s.already_finished, s.resumed));
  }
  void OnCellStart(const CellStart& s) override {
    events.push_back(fmt::format("cell {}/{} {}", s.position, s.to_run, s.eta_s ? "eta" : "no-eta"));
    if (!progress_path_.empty())
      progress_seen.push_back(ReadFile(progress_path_).ok() ? *ReadFile(progress_path_) : std::string());
  }
  void OnCellProgress(const plan::Cell&, const CellProgress&) override { ++progress_calls; }
  void OnCellEnd(const CellEnd& e) override {
    events.push_back(
        fmt::format("end {}/{} {}", e.done, e.to_run, std::string(record::Name(e.cell.outcome))));
  }
  void OnRunEnd(const RunEnd& e) override {
    events.push_back(
        fmt::format("run-end {} interrupted={}", std::string(record::Name(e.status)), e.interrupted));
  }

  std::vector<std::string> events;
  std::vector<std::string> progress_seen;
  int progress_calls = 0;

 private:
  std::string progress_path_;
};

class RunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("dlbench_run_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    db_ = (dir_ / "r.db").string();
    matrix_ = (dir_ / "m.yaml").string();
    ASSERT_TRUE(WriteFileAtomic(matrix_,
                                "name: t\nrunner: null\nmatrix:\n  model: [a, b, c]\n  step_ms: [1]\n"
                                "  virtual_time: [true]\nmeasure:\n  min_steps: 20\n  min_time_s: 0.05\n"
                                "  max_time_s: 1\n")
                    .ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  RunRequest Request() {
    RunRequest r;
    r.matrix_path = matrix_;
    r.out_dir = (dir_ / "out").string();
    r.monitor = false;
    r.bin_dir = DLBENCH_BIN_DIR;
    r.store_key = db_;
    r.open_store = [this]() { return store::OpenSqliteStore(db_); };
    return r;
  }

  std::filesystem::path dir_;
  std::string db_, matrix_;
};

TEST_F(RunTest, ObserversSeeTheRunInOrderAndTheProgressFileComesAndGoes) {
  const std::string progress = record::ProgressPath(db_);
  Recorder recorder(progress);
  ProgressFileObserver file(db_);
  auto end = RunMatrix(Request(), {&file, &recorder});
  ASSERT_TRUE(end.ok()) << end.error().message;
  EXPECT_EQ(end->status, record::RunStatus::kCompleted);
  EXPECT_FALSE(end->interrupted);
  EXPECT_EQ(end->not_ok, 0);
  EXPECT_EQ(end->outcomes.at(record::Outcome::kOk), 3);
  EXPECT_EQ(recorder.events,
            (std::vector<std::string>{"start run=1 to_run=3 finished=0 resumed=false", "cell 1/3 no-eta",
                                      "end 1/3 ok", "cell 2/3 eta", "end 2/3 ok", "cell 3/3 eta",
                                      "end 3/3 ok", "run-end completed interrupted=false"}));
  // The file observer came first: the second cell's start finds the first cell done in the file.
  ASSERT_EQ(recorder.progress_seen.size(), 3u);
  auto second = record::ParseProgress(recorder.progress_seen[1]);
  ASSERT_TRUE(second.ok()) << recorder.progress_seen[1];
  EXPECT_EQ(second->run_id, 1);
  EXPECT_EQ(second->cells_total, 3);
  EXPECT_EQ(second->cells_done, 1);
  EXPECT_EQ(second->pid, ::getpid());
  EXPECT_FALSE(second->current_cell.empty());
  EXPECT_FALSE(std::filesystem::exists(progress)) << "the run's own progress file is removed at its end";

  auto store = store::OpenSqliteStore(db_);
  ASSERT_TRUE(store.ok());
  auto run = (*store)->GetRun(1);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->status, record::RunStatus::kCompleted);
  EXPECT_EQ((*store)->FinishedCellIds(1)->size(), 3u);
  EXPECT_FALSE(std::filesystem::exists(db_ + ".run-1.lock")) << "the lock is released";
}

TEST_F(RunTest, AResumeOfARunAnotherProcessHoldsIsRefusedNamingTheHolder) {
  RunRequest first = Request();
  std::atomic<int> pressed{1};  // interrupted before its first cell: the run exists, nothing ran
  first.interrupts = &pressed;
  auto interrupted = RunMatrix(first, {});
  ASSERT_TRUE(interrupted.ok()) << interrupted.error().message;
  EXPECT_TRUE(interrupted->interrupted);
  EXPECT_EQ(interrupted->status, record::RunStatus::kInterrupted);

  auto holder = store::OpenSqliteStore(db_);
  ASSERT_TRUE(holder.ok());
  auto held = (*holder)->TryLockRun(1, {4242, "other-host", 0});
  ASSERT_TRUE(held.ok());
  ASSERT_FALSE(held->has_value());

  RunRequest resume = Request();
  resume.resume = "1";
  Recorder recorder;
  auto refused = RunMatrix(resume, {&recorder});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(refused.error().message.find("run 1 is being run by pid 4242 on host other-host"),
            std::string::npos)
      << refused.error().message;
  EXPECT_TRUE(recorder.events.empty()) << "nothing started";
  EXPECT_TRUE((*holder)->FinishedCellIds(1)->empty());
  EXPECT_EQ((*holder)->GetRun(1)->status, record::RunStatus::kInterrupted)
      << "the refused resume changed nothing";

  ASSERT_TRUE((*holder)->UnlockRun(1).ok());
  auto resumed = RunMatrix(resume, {&recorder});
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  EXPECT_EQ(resumed->status, record::RunStatus::kCompleted);
  EXPECT_EQ(recorder.events.front(), "start run=1 to_run=3 finished=0 resumed=true");
}

// Presses Ctrl-C once the first cell is stored, and keeps what RunStart said.
struct PressAfterFirstCell final : RunObserver {
  std::atomic<int> pressed{0};
  std::string run_dir;
  std::vector<std::string> warnings;
  void OnRunStart(const RunStart& s) override {
    run_dir = s.run_dir;
    warnings = s.warnings;
  }
  void OnCellEnd(const CellEnd&) override { pressed.store(1); }
};

TEST_F(RunTest, ARunLogsInItsStoresFolderAndAResumeWhereItStarted) {
  RunRequest first = Request();
  first.out_dir = (dir_ / "first").string();
  PressAfterFirstCell one;
  first.interrupts = &one.pressed;
  auto interrupted = RunMatrix(first, {&one});
  ASSERT_TRUE(interrupted.ok()) << interrupted.error().message;
  ASSERT_TRUE(interrupted->interrupted);
  EXPECT_EQ(one.run_dir, RunFolder(first.out_dir, db_, 1));

  RunRequest resume = Request();
  resume.out_dir = (dir_ / "elsewhere").string();
  resume.resume = "1";
  PressAfterFirstCell two;  // its presses are not wired: the resume runs to the end
  auto resumed = RunMatrix(resume, {&two});
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  EXPECT_EQ(resumed->status, record::RunStatus::kCompleted);
  EXPECT_EQ(two.run_dir, one.run_dir) << "the resume logs where the run started, not under its --out";
  ASSERT_FALSE(two.warnings.empty());
  EXPECT_NE(two.warnings.back().find("run 1 keeps its logs where it started: " + one.run_dir),
            std::string::npos)
      << two.warnings.back();
  auto store = store::OpenSqliteStore(db_);
  ASSERT_TRUE(store.ok());
  auto cells = (*store)->GetCells(1, store::CellQuery{});
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ(cells->size(), 3u);
  for (const auto& c : *cells) {
    EXPECT_EQ(std::filesystem::path(c.stderr_path).parent_path().string(), one.run_dir) << c.label;
    EXPECT_TRUE(std::filesystem::exists(c.stderr_path)) << c.stderr_path;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "elsewhere")) << "nothing was written under the resume's --out";

  // Run 1 of a second database with the same file name: its own folder under the same --out.
  std::filesystem::create_directories(dir_ / "other");
  const std::string other_db = (dir_ / "other" / "r.db").string();
  RunRequest other = Request();
  other.out_dir = first.out_dir;
  other.store_key = other_db;
  other.open_store = [other_db]() { return store::OpenSqliteStore(other_db); };
  PressAfterFirstCell three;
  auto separate = RunMatrix(other, {&three});
  ASSERT_TRUE(separate.ok()) << separate.error().message;
  EXPECT_NE(three.run_dir, one.run_dir);
  EXPECT_EQ(std::filesystem::path(three.run_dir).filename(), "run-1");
}

TEST_F(RunTest, AnOutputFolderThatCannotBeMadeMarksTheRunFailed) {
  RunRequest request = Request();
  request.out_dir = "/proc/1";  // exists, but nothing can be made in it
  Recorder recorder;
  auto end = RunMatrix(request, {&recorder});
  ASSERT_FALSE(end.ok());
  EXPECT_EQ(end.error().kind, ErrorKind::kIo);
  EXPECT_NE(end.error().message.find("/proc/1/" + StoreFolderName(db_) + "/run-1"), std::string::npos)
      << end.error().message;
  EXPECT_NE(end.error().message.find("run 1 is marked failed"), std::string::npos) << end.error().message;
  auto store = store::OpenSqliteStore(db_);
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->GetRun(1)->status, record::RunStatus::kFailed) << "not left `running`";
  EXPECT_TRUE(recorder.events.empty()) << "the run failed before it started its cells";
}

TEST_F(RunTest, SelectionProblemsCreateNothing) {
  RunRequest none = Request();
  none.selection.only = {"model=nosuch"};
  auto empty = RunMatrix(none, {});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().kind, ErrorKind::kInvalidInput);
  EXPECT_EQ(empty.error().message.rfind("--only matched none of the 3 cells", 0), 0u)
      << empty.error().message;

  ASSERT_TRUE(WriteFileAtomic(matrix_, "runner: null\nmatrix:\n  batch_size: [0]\n").ok());
  auto bad = RunMatrix(Request(), {});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(plan::IsMatrixDiagnostic(bad.error(), matrix_)) << bad.error().message;
  EXPECT_FALSE(std::filesystem::exists(db_)) << "a bad matrix creates no database";
}

// A ddp matrix of dlbench-null ranks in virtual time: the world_size 1 cell, written second, runs
// first, and the two-rank cell's figures are computed over both ranks' stored steps and compared
// with it; without a world_size 1 cell the efficiency is missing and the cell says why. Rank 0
// measures at least 300 steps (30 ms at 10x real time), so that rank 1, started with it, has
// steps inside rank 0's span; exact figures are ddp_analysis_test's.
TEST_F(RunTest, DdpCellsAreComparedWithTheRunsWorldSizeOneCell) {
  ASSERT_TRUE(WriteFileAtomic(matrix_,
                              "name: t\nrunner: null\nmatrix:\n  strategy: ddp\n  world_size: [2, 1]\n"
                              "  step_ms: [1]\n  samples_per_step: [4]\n  virtual_time: [true]\n"
                              "  virtual_speedup: [10]\nmeasure:\n  min_steps: 300\n  min_time_s: 0.05\n"
                              "  max_time_s: 1\n")
                  .ok());
  auto end = RunMatrix(Request(), {});
  ASSERT_TRUE(end.ok()) << end.error().message;
  auto store = store::OpenSqliteStore(db_);
  ASSERT_TRUE(store.ok());
  auto cells = (*store)->GetCells(end->run_id, store::CellQuery{});
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ(cells->size(), 2u);
  const record::CellRecord& single = (*cells)[0];
  const record::CellRecord& pair = (*cells)[1];
  ASSERT_EQ(single.params["world_size"], 1) << "the control runs first";
  ASSERT_EQ(pair.params["world_size"], 2);
  ASSERT_EQ(pair.outcome, record::Outcome::kOk) << pair.message;
  namespace metric = record::metric;
  // One rank: its global rate is its own (4 samples per 1 ms virtual step).
  EXPECT_NEAR(*record::MetricValue(single, metric::kDdpGlobalSamplesPerS),
              *record::MetricValue(single, metric::kSamplesPerS), 1e-6);
  EXPECT_NEAR(*record::MetricValue(single, metric::kSamplesPerS), 4000.0, 1.0);
  EXPECT_FALSE(record::MetricValue(single, metric::kDdpScalingEfficiencyPct)) << "the control itself";
  const std::optional<double> global = record::MetricValue(pair, metric::kDdpGlobalSamplesPerS);
  ASSERT_TRUE(global);
  EXPECT_GT(*global, *record::MetricValue(pair, metric::kSamplesPerS)) << "rank 1's samples count too";
  const nlohmann::json& x = pair.extras.at(record::kDdpScalingExtrasKey);
  ASSERT_EQ(x.at("ranks").size(), 2u) << x.dump();
  EXPECT_EQ(x.at("efficiency").at("control_cell"), single.cell_id) << x.dump();
  const double single_rate = *record::MetricValue(single, metric::kDdpGlobalSamplesPerS);
  EXPECT_NEAR(*record::MetricValue(pair, metric::kDdpSpeedup), *global / single_rate, 1e-9);
  EXPECT_NEAR(*record::MetricValue(pair, metric::kDdpScalingEfficiencyPct), *global / single_rate / 2 * 100,
              1e-9);
  EXPECT_TRUE(record::MetricValue(pair, metric::kDdpSlowestRank)) << "two ranks with steps in the span";

  // The same ranks without the world_size 1 cell in the matrix: no efficiency, and why.
  ASSERT_TRUE(WriteFileAtomic(matrix_,
                              "name: t\nrunner: null\nmatrix:\n  strategy: ddp\n  world_size: [2]\n"
                              "  step_ms: [1]\n  virtual_time: [true]\n  virtual_speedup: [10]\nmeasure:\n"
                              "  min_steps: 20\n  min_time_s: 0.05\n  max_time_s: 1\n")
                  .ok());
  auto alone = RunMatrix(Request(), {});
  ASSERT_TRUE(alone.ok()) << alone.error().message;
  auto lone = (*store)->GetCells(alone->run_id, store::CellQuery{});
  ASSERT_TRUE(lone.ok());
  ASSERT_EQ(lone->size(), 1u) << "nothing added";
  EXPECT_FALSE(record::MetricValue((*lone)[0], metric::kDdpScalingEfficiencyPct));
  const std::string why =
      (*lone)[0].extras.at(record::kDdpScalingExtrasKey).at("efficiency").value("why_none", std::string());
  EXPECT_NE(why.find("the run has no world_size 1 cell"), std::string::npos) << why;
}

}  // namespace
}  // namespace dlbench::orchestrator
