// The PostgreSQL store under the faults a team's server sees: a writer SIGKILLed at any moment of
// its transaction (no partial cell, every committed one kept), eight writers at once (no lost or
// duplicated cell, distinct run ids), the server restarted during a write (retried, nothing lost),
// and a server that stays away (the cell is kept in a spill file and stored once it is back).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "store/open_store.h"
#include "store/postgres/pg_store.h"
#include "store/postgres/pg_test_util.h"
#include "store/spill_store.h"
#include "store/store_test_util.h"

namespace dlbench::store {
namespace {

using testing::MakeCell;
using testing::MakeRun;
using testing::ScratchDatabase;
using testing::ScratchDir;

constexpr int kCells = 24;
constexpr int kStepsPerCell = 20'000;

CellRecord BigCell(std::int64_t run_id, int index) {
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

std::string One(pg::Connection& connection, const std::string& sql) {
  auto rows = connection.Query(sql);
  EXPECT_TRUE(rows.ok()) << sql << ": " << rows.error().message;
  return rows.ok() && rows->size() > 0 ? rows->Text(0, 0) : "";
}

int WaitChild(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// A child that stores the run's unfinished cells (as `run --resume` does) and reports each
// committed index on `report_fd`. Never returns.
[[noreturn]] void WriterLoop(const std::string& url, std::int64_t run_id, int report_fd) {
  auto store = PostgresStore::Open(url);
  if (!store.ok()) _exit(2);
  auto finished = (*store)->FinishedCellIds(run_id);
  if (!finished.ok()) _exit(3);
  for (int index = 0; index < kCells; ++index) {
    CellRecord cell = BigCell(run_id, index);
    if (finished->count(cell.cell_id) > 0) continue;
    if (!(*store)->PutCell(cell).ok()) _exit(4);
    if (write(report_fd, &index, sizeof index) != static_cast<ssize_t>(sizeof index)) _exit(5);
  }
  _exit(0);
}

struct Killed {
  std::set<int> reported;
  bool killed = false;
  int exit_code = -1;
};

Killed RunWriter(const std::string& url, std::int64_t run_id, int kill_after_reports, int delay_us) {
  Killed result;
  int fds[2];
  if (pipe(fds) != 0) return result;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    WriterLoop(url, run_id, fds[1]);
  }
  close(fds[1]);
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
  const int status = WaitChild(pid);
  result.killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

void ExpectWholeCells(const std::string& url, std::int64_t run_id, const std::set<int>& reported) {
  auto admin = pg::Connection::Open(url);
  ASSERT_TRUE(admin.ok()) << admin.error().message;
  EXPECT_EQ(
      One(*admin,
          "SELECT count(*) FROM cells c WHERE (SELECT count(*) FROM steps s WHERE s.cell_id = c.id) <> " +
              std::to_string(kStepsPerCell)),
      "0")
      << "a partial cell";
  EXPECT_EQ(
      One(*admin,
          "SELECT count(*) FROM steps s WHERE NOT EXISTS (SELECT 1 FROM cells c WHERE c.id = s.cell_id)"),
      "0");
  auto store = PostgresStore::Open(url);
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto cells = (*store)->GetCells(run_id, CellQuery{true, false, std::nullopt});
  ASSERT_TRUE(cells.ok()) << cells.error().message;
  std::set<int> stored;
  for (const CellRecord& cell : *cells) {
    stored.insert(cell.index);
    EXPECT_EQ(cell.steps.size(), static_cast<std::size_t>(kStepsPerCell)) << "cell " << cell.index;
    EXPECT_EQ(cell.metrics.size(), 2u) << "cell " << cell.index;
  }
  for (int index : reported) EXPECT_EQ(stored.count(index), 1u) << "committed cell " << index << " was lost";
}

TEST(PgFaultTest, AWriterKilledMidTransactionLeavesNoPartialCellAndResumes) {
  DLBENCH_PG_CLUSTER_OR_SKIP(cluster);
  ScratchDatabase db(cluster, "kill");
  ASSERT_TRUE(db.ok()) << db.error();
  std::int64_t run_id = 0;
  {
    auto store = PostgresStore::Open(db.url());
    ASSERT_TRUE(store.ok()) << store.error().message;
    RunRecord run = MakeRun("kill");
    run.total_cells = kCells;
    run_id = *(*store)->BeginRun(run);
  }
  // (reports to wait for, microseconds more): right after a commit, and inside the next cell's
  // transaction (its INSERT, its COPY of 20,000 steps, its COMMIT).
  const std::pair<int, int> moments[] = {{0, 0}, {1, 0}, {1, 3000}, {2, 8000}, {1, 15000}, {2, 30000}};
  std::set<int> reported;
  for (const auto& [reports, delay_us] : moments) {
    Killed child = RunWriter(db.url(), run_id, reports, delay_us);
    ASSERT_TRUE(child.killed) << "the writer should still be running when killed (exit " << child.exit_code
                              << ")";
    reported.insert(child.reported.begin(), child.reported.end());
    std::printf("[ info ] killed after %d reports + %d us: %zu cells reported so far\n", reports, delay_us,
                reported.size());
    ExpectWholeCells(db.url(), run_id, reported);
    if (::testing::Test::HasFailure()) return;
  }
  Killed last = RunWriter(db.url(), run_id, -1, 0);
  ASSERT_EQ(last.exit_code, 0);
  for (int index : last.reported) EXPECT_EQ(reported.count(index), 0u) << "cell " << index << " stored twice";
  reported.insert(last.reported.begin(), last.reported.end());
  ExpectWholeCells(db.url(), run_id, reported);
  auto store = PostgresStore::Open(db.url());
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->FinishedCellIds(run_id)->size(), static_cast<std::size_t>(kCells));
}

TEST(PgFaultTest, TheRunLockOfASigkilledHolderIsReleasedByTheServer) {
  DLBENCH_PG_CLUSTER_OR_SKIP(cluster);
  ScratchDatabase db(cluster, "lock");
  ASSERT_TRUE(db.ok()) << db.error();
  auto store = PostgresStore::Open(db.url());
  ASSERT_TRUE(store.ok()) << store.error().message;
  const std::int64_t run_id = *(*store)->BeginRun(MakeRun("locked"));
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    // The child's own connection: nothing of the parent's libpq state is used after fork.
    close(fds[0]);
    auto holder = PostgresStore::Open(db.url());
    if (!holder.ok()) _exit(2);
    auto taken = (*holder)->TryLockRun(run_id, RunLockOwner{getpid(), "child-host", 7});
    if (!taken.ok() || taken->has_value()) _exit(3);
    const char locked = 'L';
    if (write(fds[1], &locked, 1) != 1) _exit(4);
    for (;;) pause();
  }
  close(fds[1]);
  char got = 0;
  ssize_t n;
  do {
    n = read(fds[0], &got, 1);
  } while (n < 0 && errno == EINTR);
  close(fds[0]);
  ASSERT_EQ(n, 1) << "the child did not take the lock";

  auto refused = (*store)->TryLockRun(run_id, RunLockOwner{getpid(), "parent", 8});
  ASSERT_TRUE(refused.ok()) << refused.error().message;
  ASSERT_TRUE(refused->has_value()) << "the child's lock was not seen";
  EXPECT_EQ((*refused)->pid, pid);
  EXPECT_EQ((*refused)->host, "child-host");

  kill(pid, SIGKILL);
  const int status = WaitChild(pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  // The server ends the dead client's session when it reads the closed socket: at once, but not
  // synchronously with waitpid, so poll for a bounded time.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool free = false;
  while (!free && std::chrono::steady_clock::now() < deadline) {
    auto attempt = (*store)->TryLockRun(run_id, RunLockOwner{getpid(), "parent", 8});
    ASSERT_TRUE(attempt.ok()) << attempt.error().message;
    free = !attempt->has_value();
    if (!free) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(free) << "the lock of a SIGKILLed holder was not released";
}

TEST(PgFaultTest, EightConcurrentWritersLoseAndDuplicateNothing) {
  DLBENCH_PG_CLUSTER_OR_SKIP(cluster);
  ScratchDatabase db(cluster, "eight");
  ASSERT_TRUE(db.ok()) << db.error();
  constexpr int kWriters = 8;
  constexpr int kCellsPerWriter = 20;
  constexpr int kSteps = 2'000;
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> pids;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(go[1]);
      char byte = 0;
      if (read(go[0], &byte, 1) != 1) _exit(2);
      auto fail = [&](const char* what, const Error& e) {
        std::fprintf(stderr, "writer %d: %s: %s\n", w, what, e.message.c_str());
        _exit(1);
      };
      // They open the new database together: its schema is created once among them.
      auto store = PostgresStore::Open(db.url());
      if (!store.ok()) fail("open", store.error());
      auto run_id = (*store)->BeginRun(MakeRun("writer" + std::to_string(w)));
      if (!run_id.ok()) fail("BeginRun", run_id.error());
      for (int i = 0; i < kCellsPerWriter; ++i) {
        if (auto st = (*store)->PutCell(MakeCell(*run_id, i, kSteps)); !st.ok()) fail("PutCell", st.error());
        if (auto ids = (*store)->FinishedCellIds(*run_id); !ids.ok()) fail("FinishedCellIds", ids.error());
        if (auto runs = (*store)->ListRuns(); !runs.ok()) fail("ListRuns", runs.error());
      }
      if (auto st = (*store)->SetRunStatus(*run_id, record::RunStatus::kCompleted, 1); !st.ok())
        fail("SetRunStatus", st.error());
      _exit(0);
    }
    pids.push_back(pid);
  }
  close(go[0]);
  const std::string bytes(kWriters, 'g');
  ASSERT_EQ(write(go[1], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(go[1]);
  for (pid_t pid : pids) {
    const int status = WaitChild(pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a writer failed (its stderr says why)";
  }

  auto store = PostgresStore::Open(db.url());
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  ASSERT_EQ(runs->size(), static_cast<std::size_t>(kWriters));
  std::set<std::int64_t> ids;
  std::set<std::string> names, uuids;
  for (const RunRecord& run : *runs) {
    ids.insert(run.id);
    names.insert(run.name);
    uuids.insert(run.uuid);
    EXPECT_EQ(run.status, record::RunStatus::kCompleted) << run.name;
    auto cells = (*store)->GetCells(run.id, CellQuery{true, false, std::nullopt});
    ASSERT_TRUE(cells.ok()) << cells.error().message;
    EXPECT_EQ(cells->size(), static_cast<std::size_t>(kCellsPerWriter)) << run.name;
    std::set<std::string> cell_ids;
    for (const CellRecord& cell : *cells) {
      cell_ids.insert(cell.cell_id);
      EXPECT_EQ(cell.steps.size(), static_cast<std::size_t>(kSteps)) << run.name << " " << cell.cell_id;
    }
    EXPECT_EQ(cell_ids.size(), static_cast<std::size_t>(kCellsPerWriter))
        << "no duplicated cell in " << run.name;
  }
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kWriters)) << "run ids are unique";
  EXPECT_EQ(names.size(), static_cast<std::size_t>(kWriters)) << "each writer has its own run";
  EXPECT_EQ(uuids.size(), static_cast<std::size_t>(kWriters));
  EXPECT_EQ(One((*store)->connection(), "SELECT count(*) FROM cells"),
            std::to_string(kWriters * kCellsPerWriter));
  EXPECT_EQ(One((*store)->connection(), "SELECT count(*) FROM steps"),
            std::to_string(kWriters * kCellsPerWriter * kSteps));
}

TEST(PgFaultTest, AServerRestartDuringAWriteIsRetriedAndLosesNothing) {
  DLBENCH_PRIVATE_PG_CLUSTER_OR_SKIP(server);
  ScratchDatabase db(server.cluster(), "restart");
  ASSERT_TRUE(db.ok()) << db.error();
  PostgresStore::Options options;
  options.retry_s = 120;
  auto store = PostgresStore::Open(db.url(), options);
  ASSERT_TRUE(store.ok()) << store.error().message;
  const std::int64_t run_id = *(*store)->BeginRun(MakeRun("restart"));
  ASSERT_TRUE((*store)->PutCell(BigCell(run_id, 0)).ok());

  ASSERT_TRUE(server.Pause());
  // The server comes back while PutCell is retrying; how long it is away does not matter as long
  // as it is within the (generous) window.
  std::thread back([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    EXPECT_TRUE(server.Resume());
  });
  Status put = (*store)->PutCell(BigCell(run_id, 1));
  back.join();
  ASSERT_TRUE(put.ok()) << put.error().message;
  ASSERT_TRUE((*store)->SetRunStatus(run_id, record::RunStatus::kCompleted, 5).ok());
  auto cells = (*store)->GetCells(run_id, CellQuery{true, false, std::nullopt});
  ASSERT_TRUE(cells.ok()) << cells.error().message;
  ASSERT_EQ(cells->size(), 2u);
  for (const CellRecord& cell : *cells) EXPECT_EQ(cell.steps.size(), static_cast<std::size_t>(kStepsPerCell));
}

TEST(PgFaultTest, AServerThatStaysAwayEndsWithTheCellSpilledAndItIsStoredOnceBack) {
  DLBENCH_PRIVATE_PG_CLUSTER_OR_SKIP(server);
  ScratchDatabase db(server.cluster(), "away");
  ASSERT_TRUE(db.ok()) << db.error();
  ScratchDir spill;
  ASSERT_TRUE(spill.ok());
  OpenOptions options;
  options.mode = OpenMode::kCreate;
  options.retry_s = 1;
  options.spill_dir = spill.File("spill");
  auto opened = OpenStore(db.url(), options);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  auto* store = dynamic_cast<SpillingStore*>(opened->get());
  ASSERT_NE(store, nullptr) << "a writing PostgreSQL store spills";
  const std::int64_t run_id = *store->BeginRun(MakeRun("away"));
  ASSERT_TRUE(store->PutCell(BigCell(run_id, 0)).ok());

  ASSERT_TRUE(server.Pause());
  const CellRecord kept = BigCell(run_id, 1);
  Status put = store->PutCell(kept);
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.error().kind, ErrorKind::kUnavailable);
  const auto files = store->SpilledFiles(run_id);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(put.error().message.find(files[0]), std::string::npos) << put.error().message;
  EXPECT_NE(put.error().message.find("the PostgreSQL server " + db.url() + " could not be reached for 1 s"),
            std::string::npos)
      << put.error().message;
  EXPECT_NE(put.error().message.find("--resume " + std::to_string(run_id)), std::string::npos)
      << put.error().message;
  EXPECT_EQ(put.error().message.find('\n'), std::string::npos) << put.error().message;
  // The window is spent: the run's last words (its status) fail at once, not after another one.
  const auto before = std::chrono::steady_clock::now();
  EXPECT_FALSE(store->SetRunStatus(run_id, record::RunStatus::kFailed, 9).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(30));
  opened->reset();

  ASSERT_TRUE(server.Resume());
  // What `dlbench run --resume` does first: open the store and ask for the finished cells.
  auto resumed = OpenStore(db.url(), options);
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  auto finished = (*resumed)->FinishedCellIds(run_id);
  ASSERT_TRUE(finished.ok()) << finished.error().message;
  EXPECT_EQ(*finished, (std::set<std::string>{"c0", "c1"}));
  EXPECT_FALSE(std::filesystem::exists(files[0])) << "a stored spill file is removed";
  auto cells = (*resumed)->GetCells(run_id, CellQuery{true, true, 1});
  ASSERT_TRUE(cells.ok()) << cells.error().message;
  ASSERT_EQ(cells->size(), 1u);
  EXPECT_EQ(CellToJson((*cells)[0]), CellToJson(kept)) << "the spilled cell is stored exactly";
}

}  // namespace
}  // namespace dlbench::store
