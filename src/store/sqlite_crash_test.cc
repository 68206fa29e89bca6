// SIGKILL at any moment: a child process stores cells in a loop (resuming like `dlbench run
// --resume`: it skips the cells already finished) and reports each committed index on a pipe;
// the parent kills it at several moments, including inside PutCell and inside schema creation.
// After every kill the database passes PRAGMA integrity_check, holds every reported cell
// complete (all its steps), holds no partial cell, and a last child finishes the run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <set>

#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace dlbench::store {
namespace {

using testing::MakeCell;
using testing::MakeRun;
using testing::ScratchDir;

constexpr int kCells = 30;
constexpr int kStepsPerCell = 20'000;

CellRecord CrashCell(std::int64_t run_id, int index) {
  CellRecord cell = MakeCell(run_id, index, 0);
  cell.steps.resize(kStepsPerCell);
  for (int i = 0; i < kStepsPerCell; ++i) {
    record::StepRecord& r = cell.steps[i].record;
    r.start_ns = index * 1'000'000'000LL + i * 1000LL;
    r.end_ns = r.start_ns + 900;
    r.samples = static_cast<std::uint32_t>(index + 1);
    r.present = record::kHasCompute;
    r.compute_ns = 800;
  }
  return cell;
}

// The child's whole life: open, resume the run, report each committed cell. Never returns.
[[noreturn]] void ChildStoreLoop(const std::string& path, std::int64_t run_id, int report_fd) {
  auto store = OpenSqliteStore(path);
  if (!store.ok()) _exit(2);
  auto finished = (*store)->FinishedCellIds(run_id);
  if (!finished.ok()) _exit(3);
  for (int index = 0; index < kCells; ++index) {
    CellRecord cell = CrashCell(run_id, index);
    if (finished->count(cell.cell_id) > 0) continue;
    if (!(*store)->PutCell(cell).ok()) _exit(4);
    if (write(report_fd, &index, sizeof index) != static_cast<ssize_t>(sizeof index)) _exit(5);
  }
  _exit(0);
}

struct ChildResult {
  std::set<int> reported;  // indices the child saw PutCell return for
  bool killed = false;     // it died of SIGKILL (rather than finishing)
  int exit_code = -1;
};

// Forks a child running ChildStoreLoop (run_id 0: the child only opens the store), waits for
// `kill_after_reports` reports (-1: never kill), sleeps `delay_us`, then SIGKILLs it.
ChildResult RunChild(const std::string& path, std::int64_t run_id, int kill_after_reports, int delay_us) {
  ChildResult result;
  int fds[2];
  if (pipe(fds) != 0) {
    ADD_FAILURE() << "pipe: " << errno;
    return result;
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (run_id == 0) {
      auto store = OpenSqliteStore(path);
      _exit(store.ok() ? 0 : 2);
    }
    ChildStoreLoop(path, run_id, fds[1]);
  }
  close(fds[1]);
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << errno;
    close(fds[0]);
    return result;
  }
  auto read_report = [&]() {
    int index = -1;
    ssize_t n;
    do {
      n = read(fds[0], &index, sizeof index);
    } while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(sizeof index)) result.reported.insert(index);
    return n > 0;
  };
  if (kill_after_reports >= 0) {
    while (static_cast<int>(result.reported.size()) < kill_after_reports && read_report()) {
    }
    if (delay_us > 0) usleep(static_cast<useconds_t>(delay_us));
    kill(pid, SIGKILL);
  }
  while (read_report()) {
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The checks after a kill: integrity, every reported cell present and complete, nothing partial.
void ExpectConsistent(const std::string& path, std::int64_t run_id, const std::set<int>& reported) {
  auto db = sqlite::Database::Open(path);
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(*db->QueryText("PRAGMA integrity_check"), "ok");
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(*(*store)->database().QueryText("SELECT count(*) FROM pragma_foreign_key_check"), "0");
  if (run_id == 0) return;
  auto cells = (*store)->GetCells(run_id, CellQuery{true, false, std::nullopt});
  ASSERT_TRUE(cells.ok()) << cells.error().message;
  std::set<int> stored;
  for (const CellRecord& cell : *cells) {
    stored.insert(cell.index);
    EXPECT_EQ(cell.steps.size(), static_cast<std::size_t>(kStepsPerCell))
        << "cell " << cell.index << " is partial";
    EXPECT_EQ(cell.metrics.size(), 2u) << "cell " << cell.index;
    if (!cell.steps.empty()) {
      EXPECT_EQ(cell.steps.back().record.samples, static_cast<std::uint32_t>(cell.index + 1));
    }
  }
  for (int index : reported) EXPECT_EQ(stored.count(index), 1u) << "committed cell " << index << " was lost";
}

TEST(SqliteCrashTest, KillDuringSchemaCreationLeavesAnOpenableStore) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  for (int delay_us : {0, 300, 1000, 3000}) {
    const std::string path = dir.File("schema-" + std::to_string(delay_us) + ".db");
    RunChild(path, 0, 0, delay_us);
    ExpectConsistent(path, 0, {});
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(SqliteCrashTest, KillDuringPutCellKeepsEveryCommittedCellAndResumes) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("crash.db");
  std::int64_t run_id = 0;
  {
    auto store = OpenSqliteStore(path);
    ASSERT_TRUE(store.ok()) << store.error().message;
    RunRecord run = MakeRun("crash");
    run.total_cells = kCells;
    auto id = (*store)->BeginRun(run);
    ASSERT_TRUE(id.ok());
    run_id = *id;
  }
  // (reports to wait for, then microseconds to wait): a kill right after a commit, and kills
  // landing at different points of the next cell's transaction.
  const std::pair<int, int> moments[] = {{0, 0}, {1, 0}, {1, 2000}, {2, 5000}, {1, 11000}, {3, 17000}};
  std::set<int> reported;
  for (const auto& [reports, delay_us] : moments) {
    ChildResult child = RunChild(path, run_id, reports, delay_us);
    ASSERT_TRUE(child.killed) << "the child should still be running when killed (exit " << child.exit_code
                              << ")";
    reported.insert(child.reported.begin(), child.reported.end());
    std::printf("[ info ] killed after %d reports + %d us: %zu cells reported so far\n", reports, delay_us,
                reported.size());
    ExpectConsistent(path, run_id, reported);
    if (::testing::Test::HasFailure()) return;
  }
  ChildResult last = RunChild(path, run_id, -1, 0);
  ASSERT_EQ(last.exit_code, 0);
  for (int index : last.reported) {
    EXPECT_EQ(reported.count(index), 0u) << "cell " << index << " was finished before, yet stored again";
  }
  reported.insert(last.reported.begin(), last.reported.end());
  ExpectConsistent(path, run_id, reported);
  auto store = OpenSqliteStore(path);
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->FinishedCellIds(run_id)->size(), static_cast<std::size_t>(kCells));
}

}  // namespace
}  // namespace dlbench::store
