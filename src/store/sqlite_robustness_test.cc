// Opening what is not, or not yet, a store of this build: a foreign SQLite file and a newer or
// damaged schema version are refused before anything is written to the file; a store on a
// read-only filesystem is read through a read-only (or immutable) connection.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "store/sqlite_schema.h"
#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace dlbench::store {
namespace {

using testing::MakeCell;
using testing::MakeRun;
using testing::ScratchDir;

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs SQL on a file with the plain C API, as another program would.
void RawSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  EXPECT_EQ(rc, SQLITE_OK) << (error != nullptr ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

TEST(SqliteRobustnessTest, ForeignSqliteFileIsRefusedBeforeAnythingIsWritten) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("invoices.db");
  RawSql(path,
         "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices VALUES (1, 9.5);");
  const std::string before = Bytes(path);
  ASSERT_FALSE(before.empty());
  ASSERT_EQ(before[18], 1) << "a rollback-journal database to begin with";

  for (auto open : {+[](const std::string& p) { return OpenSqliteStore(p); },
                    +[](const std::string& p) { return OpenSqliteStoreForReading(p); }}) {
    auto store = open(path);
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.error().kind, ErrorKind::kStore);
    EXPECT_NE(store.error().message.find("is not a dlbench store"), std::string::npos)
        << store.error().message;
    // Byte for byte as it was: in particular not switched to WAL (header bytes 18/19 stay 1).
    EXPECT_EQ(Bytes(path), before);
    EXPECT_FALSE(Exists(path + "-wal"));
    EXPECT_FALSE(Exists(path + "-shm"));
  }

  // A foreign program's own schema_version table (Flyway's old default name) is not ours either.
  const std::string flyway = dir.File("flyway.db");
  RawSql(flyway,
         "CREATE TABLE schema_version (installed_rank INTEGER, version TEXT, script TEXT);"
         "INSERT INTO schema_version VALUES (1, '1.0.3', 'V1__init.sql');");
  const std::string flyway_before = Bytes(flyway);
  auto store = OpenSqliteStore(flyway);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message.find("is not a dlbench store"), std::string::npos) << store.error().message;
  EXPECT_EQ(Bytes(flyway), flyway_before);
}

TEST(SqliteRobustnessTest, NewerOrDamagedSchemaVersionIsRefusedAndTheFileLeftUnchanged) {
  const std::int64_t known = sqlite::LatestVersion(sqlite::SchemaMigrations());
  struct Case {
    std::int64_t version;
    std::string expected;
  };
  const Case cases[] = {
      {known + 1, "has schema version " + std::to_string(known + 1) + ", newer than this dlbench knows (" +
                      std::to_string(known) + "): it was created by a newer dlbench"},
      // 2^31 used to wrap to a negative int and be "migrated" (failing with a bogus message).
      {std::int64_t{1} << 31, "has schema version 2147483648, newer than this dlbench knows (" +
                                  std::to_string(known) + "): it was created by a newer dlbench"},
      {std::int64_t{1} << 62, "has schema version 4611686018427387904, newer than this dlbench knows"},
      {-5, "has an invalid schema version (-5)"},
  };
  for (const Case& c : cases) {
    ScratchDir dir;
    ASSERT_TRUE(dir.ok());
    const std::string path = dir.File("store.db");
    {
      auto store = SqliteStore::Open(path);
      ASSERT_TRUE(store.ok()) << store.error().message;
      ASSERT_TRUE((*store)->BeginRun(MakeRun("kept")).ok());
    }
    RawSql(path, "INSERT INTO schema_version (version, description, applied_wall_ns) VALUES (" +
                     std::to_string(c.version) + ", 'from elsewhere', 0)");
    if (c.version < 0) RawSql(path, "DELETE FROM schema_version WHERE version > 0");
    const std::string before = Bytes(path);
    auto store = OpenSqliteStore(path);
    ASSERT_FALSE(store.ok()) << c.version;
    EXPECT_EQ(store.error().kind, ErrorKind::kStore);
    EXPECT_NE(store.error().message.find(c.expected), std::string::npos) << store.error().message;
    EXPECT_EQ(Bytes(path), before) << c.version;
    auto reading = OpenSqliteStoreForReading(path);
    ASSERT_FALSE(reading.ok());
    EXPECT_NE(reading.error().message.find(c.expected), std::string::npos) << reading.error().message;
  }
}

// Runs `body` in a child process whose mount namespace has `dir` bind-mounted read-only onto
// itself; the child's exit code is the result. -1 when this machine does not allow it (no
// CAP_SYS_ADMIN): the caller skips.
template <class Body>
int InReadOnlyMount(const std::string& dir, Body body) {
  int probe[2];
  if (::pipe(probe) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::close(probe[0]);
    const bool mounted =
        ::unshare(CLONE_NEWNS) == 0 && ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
        ::mount(dir.c_str(), dir.c_str(), nullptr, MS_BIND, nullptr) == 0 &&
        ::mount(nullptr, dir.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0;
    const char flag = mounted ? 1 : 0;
    (void)!::write(probe[1], &flag, 1);
    ::close(probe[1]);
    if (!mounted) _exit(0);
    _exit(body());
  }
  ::close(probe[1]);
  char flag = 0;
  const bool mounted = ::read(probe[0], &flag, 1) == 1 && flag == 1;
  ::close(probe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!mounted) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// In the child: 0 when the store reads back run "kept" with one cell, else a code naming the step.
int ReadKeptRun(const std::string& path) {
  if (::access(path.c_str(), W_OK) == 0 || errno != EROFS) return 10;  // the mount is not read-only
  auto store = OpenSqliteStoreForReading(path);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.error().message.c_str());
    return 12;
  }
  auto runs = (*store)->ListRuns();
  if (!runs.ok() || runs->size() != 1 || runs->front().name != "kept") return 13;
  auto cells = (*store)->GetCells(runs->front().id, CellQuery{});
  if (!cells.ok() || cells->size() != 1) return 14;
  // Writes fail as values, not crashes.
  if ((*store)->BeginRun(MakeRun("not stored")).ok()) return 15;
  return 0;
}

TEST(SqliteRobustnessTest, StoreOnAReadOnlyFilesystemIsReadable) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("store.db");
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.error().message;
    auto run_id = (*store)->BeginRun(MakeRun("kept"));
    ASSERT_TRUE(run_id.ok());
    ASSERT_TRUE((*store)->PutCell(MakeCell(*run_id, 0, 5)).ok());
  }
  // Closed cleanly: no -wal or -shm left, which a read-only WAL connection would need to create.
  ASSERT_FALSE(Exists(path + "-wal"));
  const std::string before = Bytes(path);
  const int code = InReadOnlyMount(dir.File(""), [&] {
    // The ordinary open cannot work here (it fails for want of a -shm file), the reading one can.
    if (OpenSqliteStore(path).ok()) return 11;
    return ReadKeptRun(path);
  });
  if (code == -1) GTEST_SKIP() << "no mount namespace here (needs CAP_SYS_ADMIN); see docs/testing.md";
  EXPECT_EQ(code, 0);
  EXPECT_EQ(Bytes(path), before);
}

TEST(SqliteRobustnessTest, StoreWhoseWriterWasKilledIsReadWithItsWalOnAReadOnlyFilesystem) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("store.db");
  // A writer that dies without closing leaves its commits in the -wal file.
  const pid_t writer = ::fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    auto store = SqliteStore::Open(path);
    if (!store.ok()) _exit(2);
    auto run_id = (*store)->BeginRun(MakeRun("kept"));
    if (!run_id.ok() || !(*store)->PutCell(MakeCell(*run_id, 0, 5)).ok()) _exit(3);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(writer, &status, 0), writer);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_TRUE(Exists(path + "-wal"));
  const int code = InReadOnlyMount(dir.File(""), [&] { return ReadKeptRun(path); });
  if (code == -1) GTEST_SKIP() << "no mount namespace here (needs CAP_SYS_ADMIN); see docs/testing.md";
  EXPECT_EQ(code, 0);
}

TEST(SqliteRobustnessTest, ReadOnlyStoreOfAnOlderSchemaSaysItCannotBeMigrated) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("v1.db");
  {
    auto v1 = SqliteStore::Open(path, {sqlite::SchemaMigrations().front()});
    ASSERT_TRUE(v1.ok()) << v1.error().message;
  }
  const int code = InReadOnlyMount(dir.File(""), [&] {
    auto store = OpenSqliteStoreForReading(path);
    if (store.ok()) return 20;
    std::fprintf(stderr, "%s\n", store.error().message.c_str());
    return store.error().message.find("has schema version 1, older than this dlbench's") !=
                       std::string::npos &&
                   store.error().message.find("read-only") != std::string::npos
               ? 0
               : 21;
  });
  if (code == -1) GTEST_SKIP() << "no mount namespace here (needs CAP_SYS_ADMIN); see docs/testing.md";
  EXPECT_EQ(code, 0);
}

TEST(SqliteRobustnessTest, ReadingOpenOfAWritableStoreIsTheOrdinaryOne) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("store.db");
  {
    auto v1 = SqliteStore::Open(path, {sqlite::SchemaMigrations().front()});
    ASSERT_TRUE(v1.ok()) << v1.error().message;
  }
  // Writable: opened (and migrated) as before, so reading commands keep working on old stores.
  auto store = OpenSqliteStoreForReading(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  ASSERT_TRUE((*store)->BeginRun(MakeRun("written")).ok());
}

}  // namespace
}  // namespace dlbench::store
