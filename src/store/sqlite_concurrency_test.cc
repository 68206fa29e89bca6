// Several writer processes on one database file, as `dlbench run --shard K/N` runs one process
// per GPU: they create the file together (schema, WAL), each begins its own run and stores its
// cells while the others do, reading in between. Every process must finish without a "database
// is locked" error, every cell must be stored whole, and the file must pass integrity_check.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <set>
#include <vector>

#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace dlbench::store {
namespace {

using testing::MakeCell;
using testing::MakeRun;
using testing::ScratchDir;

constexpr int kWriters = 4;
constexpr int kCellsPerWriter = 25;
constexpr int kStepsPerCell = 2'000;

// One writer's whole life; exits 0 when every call succeeded, else prints why and exits 1.
// Waits for the parent's byte on `go_fd` so that all writers open the (absent) file together.
[[noreturn]] void Writer(const std::string& path, int writer, int go_fd) {
  char go = 0;
  if (read(go_fd, &go, 1) != 1) _exit(2);
  auto fail = [&](const char* what, const Error& e) {
    std::fprintf(stderr, "writer %d: %s: %s\n", writer, what, e.message.c_str());
    _exit(1);
  };
  auto store = OpenSqliteStore(path);
  if (!store.ok()) fail("open", store.error());
  auto run_id = (*store)->BeginRun(MakeRun("writer" + std::to_string(writer)));
  if (!run_id.ok()) fail("BeginRun", run_id.error());
  for (int i = 0; i < kCellsPerWriter; ++i) {
    if (auto st = (*store)->PutCell(MakeCell(*run_id, i, kStepsPerCell)); !st.ok())
      fail("PutCell", st.error());
    // What `dlbench run` reads between cells, and what a concurrent `dlbench show` reads.
    if (auto ids = (*store)->FinishedCellIds(*run_id); !ids.ok()) fail("FinishedCellIds", ids.error());
    if (auto runs = (*store)->ListRuns(); !runs.ok()) fail("ListRuns", runs.error());
  }
  if (auto st = (*store)->SetRunStatus(*run_id, record::RunStatus::kCompleted, 1); !st.ok())
    fail("SetRunStatus", st.error());
  _exit(0);
}

TEST(SqliteStoreConcurrencyTest, WriterProcessesOnOneNewFileAllFinishWithEveryCell) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("shared.db");
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> pids;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0) << "fork: " << errno;
    if (pid == 0) {
      close(go[1]);
      Writer(path, w, go[0]);
    }
    pids.push_back(pid);
  }
  close(go[0]);
  const std::string bytes(kWriters, 'g');
  ASSERT_EQ(write(go[1], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(go[1]);
  for (pid_t pid : pids) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a writer failed (its stderr says why)";
  }

  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(*(*store)->database().QueryText("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(*(*store)->database().QueryText("PRAGMA journal_mode"), "wal");
  auto runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  ASSERT_EQ(runs->size(), static_cast<std::size_t>(kWriters));
  std::set<std::string> names;
  for (const RunRecord& run : *runs) {
    names.insert(run.name);
    EXPECT_EQ(run.status, record::RunStatus::kCompleted) << run.name;
    auto cells = (*store)->GetCells(run.id, CellQuery{true, false, std::nullopt});
    ASSERT_TRUE(cells.ok()) << cells.error().message;
    EXPECT_EQ(cells->size(), static_cast<std::size_t>(kCellsPerWriter)) << run.name;
    for (const CellRecord& cell : *cells) {
      EXPECT_EQ(cell.steps.size(), static_cast<std::size_t>(kStepsPerCell))
          << run.name << " " << cell.cell_id;
    }
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(kWriters)) << "each writer has its own run";
}

}  // namespace
}  // namespace dlbench::store
