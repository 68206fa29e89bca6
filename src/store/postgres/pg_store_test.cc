// The PostgreSQL store's own promises (the store-level ones are StoreTest's, for both backends):
// both backends have the same schema versions; a fresh database gets the schema, an older one is
// migrated in a transaction, a newer or foreign one is refused with nothing changed, and commands
// that must not create a store do not; every way of naming a server wrongly is one line without
// the password; text reaches the server as valid UTF-8 and COPY fields escaped.
#include "store/postgres/pg_store.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "store/open_store.h"
#include "store/postgres/pg_schema.h"
#include "store/postgres/pg_test_util.h"
#include "store/sqlite_schema.h"
#include "store/store_codec.h"
#include "store/store_test_util.h"

namespace dlbench::store {
namespace {

using testing::MakeCell;
using testing::MakeRun;
using testing::ScratchDatabase;

// postgresql://user@host... -> postgresql://user:PASSWORD@host...
std::string WithPassword(const std::string& url, const std::string& password) {
  const std::size_t at = url.find('@');
  return url.substr(0, at) + ":" + password + url.substr(at);
}

std::string One(pg::Connection& connection, const std::string& sql) {
  auto rows = connection.Query(sql);
  EXPECT_TRUE(rows.ok()) << sql << ": " << rows.error().message;
  return rows.ok() && rows->size() > 0 ? rows->Text(0, 0) : "";
}

// Every table of the public schema with its row count, and the recorded versions: what "nothing
// changed" compares.
std::string Snapshot(pg::Connection& connection) {
  auto tables = connection.Query(
      "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename");
  EXPECT_TRUE(tables.ok());
  std::string out;
  for (int i = 0; tables.ok() && i < tables->size(); ++i) {
    const std::string name = tables->Text(i, 0);
    out += name + "=" + One(connection, "SELECT count(*) FROM " + name) + ";";
  }
  return out + One(connection, "SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_version");
}

TEST(SchemaLockstepTest, BothBackendsHaveEveryVersionWithTheSameDescription) {
  const auto& lite = sqlite::SchemaMigrations();
  const auto& postgres = pg::SchemaMigrations();
  ASSERT_EQ(sqlite::LatestVersion(lite), pg::LatestVersion(postgres))
      << "a schema version exists on one backend only: add its step to both "
         "(src/store/sqlite_schema.cc, src/store/postgres/pg_schema.cc)";
  ASSERT_EQ(lite.size(), postgres.size());
  for (std::size_t i = 0; i < lite.size(); ++i) {
    EXPECT_EQ(lite[i].version, postgres[i].version);
    EXPECT_EQ(lite[i].description, postgres[i].description) << "version " << lite[i].version;
  }
}

TEST(PgTextTest, Utf8ForPostgresReplacesOnlyWhatTextCannotHold) {
  struct Case {
    std::string in, out;
  };
  const std::string r = "\xEF\xBF\xBD";
  const Case cases[] = {
      {"plain ascii", "plain ascii"},
      {"\xC2\xB5s \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x9A\x80",
       "\xC2\xB5s \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x9A\x80"},
      {std::string("a\0b", 3), "a" + r + "b"},
      {"\xFF\xFE", r + r},
      {"\xC0\xAF", r + r},                  // an overlong '/'
      {"\xED\xA0\x80", r + r + r},          // a surrogate
      {"\xF4\x90\x80\x80", r + r + r + r},  // above U+10FFFF
      {"cut \xE6\x97", "cut " + r + r},     // a sequence cut short
      {"", ""},
  };
  for (const Case& c : cases) EXPECT_EQ(pg::Utf8ForPostgres(c.in), c.out) << c.in;

  std::string copy;
  pg::AppendCopyField(copy, "a\tb\nc\\d\re");
  EXPECT_EQ(copy, "a\\tb\\nc\\\\d\\re");
}

TEST(PgRetryTest, BackoffDoublesFromATenthOfASecondToFiveSeconds) {
  const int expected_ms[] = {100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000};
  for (int attempt = 0; attempt < 9; ++attempt) {
    EXPECT_EQ(RetryBackoff(attempt).count(), expected_ms[attempt]) << attempt;
  }
  EXPECT_EQ(RetryBackoff(-1).count(), 100);
  EXPECT_EQ(RetryBackoff(1'000'000).count(), 5000);
}

TEST(PgConnectTest, EveryBadLocationIsOneLineWithoutThePassword) {
  DLBENCH_PG_CLUSTER_OR_SKIP(cluster);
  ASSERT_FALSE(cluster.password_url.empty()) << "the test cluster has the password role";
  struct Case {
    std::string what;
    std::string url;
    std::string secret;
    ErrorKind kind;
    std::string says;
  };
  const std::string host_part = cluster.admin_url.substr(cluster.admin_url.find('@'));
  const Case cases[] = {
      {"a port that is not a number", "postgresql://dlbench:s3cret-port@127.0.0.1:notaport/postgres",
       "s3cret-port", ErrorKind::kStore, "port"},
      {"an unknown parameter", "postgresql://dlbench:s3cret-param@127.0.0.1/postgres?nosuch=1",
       "s3cret-param", ErrorKind::kInvalidInput, "nosuch"},
      {"a wrong password", WithPassword(cluster.password_url, "s3cret-wrong"), "s3cret-wrong",
       ErrorKind::kStore, "password authentication failed"},
      {"a database that does not exist",
       WithPassword(cluster.admin_url.substr(0, cluster.admin_url.rfind('/')) + "/no_such_database",
                    "s3cret-db"),
       "s3cret-db", ErrorKind::kStore, "does not exist"},
      {"a server that is down", "postgresql://dlbench:s3cret-down@127.0.0.1:1/postgres", "s3cret-down",
       ErrorKind::kUnavailable, "refused"},
  };
  for (const Case& c : cases) {
    auto store = PostgresStore::Open(c.url);
    ASSERT_FALSE(store.ok()) << c.what;
    const std::string& message = store.error().message;
    EXPECT_EQ(store.error().kind, c.kind) << c.what << ": " << message;
    EXPECT_NE(message.find(c.says), std::string::npos) << c.what << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << c.what << ": " << message;
    EXPECT_EQ(message.find(c.secret), std::string::npos) << c.what << ": " << message;
  }

  // The right password connects, and the store still never shows it (in a database of the role's
  // own: it may not create tables in another's).
  ScratchDatabase own(cluster, "pw");
  ASSERT_TRUE(own.ok()) << own.error();
  {
    auto admin = pg::Connection::Open(own.url());
    ASSERT_TRUE(admin.ok());
    ASSERT_TRUE(admin->Execute("ALTER SCHEMA public OWNER TO dlbench_pw").ok());
  }
  const std::string own_url =
      cluster.password_url.substr(0, cluster.password_url.rfind('/') + 1) + own.name();
  auto store = PostgresStore::Open(WithPassword(own_url, cluster.password));
  ASSERT_TRUE(store.ok()) << store.error().message;
  const std::string shown = (*store)->Describe();
  EXPECT_EQ(shown.find(cluster.password), std::string::npos) << shown;
  EXPECT_NE(shown.find("dlbench_pw:***@"), std::string::npos) << shown;
  EXPECT_NE(shown.find(host_part.substr(1, host_part.rfind('/') - 1)), std::string::npos) << shown;
}

TEST(PgMigrationTest, AFreshDatabaseGetsTheSchemaOnceAndAnEmptyOneIsNotCreatedByReaders) {
  DLBENCH_PG_CLUSTER_OR_SKIP(cluster);
  ScratchDatabase db(cluster);
  ASSERT_TRUE(db.ok()) << db.error();
  auto admin = pg::Connection::Open(db.url());
  ASSERT_TRUE(admin.ok());

  OpenOptions reading;
  reading.mode = OpenMode::kExisting;
  auto refused = OpenStore(db.url(), reading);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kStore);
  EXPECT_NE(refused.error().message.find("holds no dlbench store"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(One(*admin, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"), "0")
      << "a reading command created tables";

  auto store = PostgresStore::Open(db.url());
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(*pg::ReadSchemaVersion(*admin), pg::LatestVersion(pg::SchemaMigrations()));
  store->reset();
  auto again = OpenStore(db.url(), reading);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(One(*admin, "SELECT count(*) FROM schema_version"),
            std::to_string(pg::SchemaMigrations().size()));
  EXPECT_EQ(One(*admin, "SELECT description FROM schema_version WHERE version = 4"),
            "runs.uuid: a key that names a run in every store (db copy)");
}

TEST(PgSchemaTest, ACellDeletedByHandTakesItsStepsAndSeriesWithIt) {
  DLBENCH_PG_CLUSTER_OR_SKIP(cluster);
  ScratchDatabase db(cluster);
  ASSERT_TRUE(db.ok()) << db.error();
  auto store = PostgresStore::Open(db.url());
  ASSERT_TRUE(store.ok()) << store.error().message;
  const std::int64_t run_id = *(*store)->BeginRun(MakeRun("r"));
  ASSERT_TRUE((*store)->PutCell(MakeCell(run_id, 0, 30)).ok());
  ASSERT_TRUE((*store)->PutCell(MakeCell(run_id, 1, 20)).ok());
  pg::Connection& c = (*store)->connection();
  ASSERT_EQ(One(c, "SELECT count(*) FROM steps"), "50");
  ASSERT_TRUE(
      c.Execute("DELETE FROM metrics WHERE cell_id = (SELECT id FROM cells WHERE cell_id = 'c0')").ok());
  ASSERT_TRUE(c.Execute("DELETE FROM cells WHERE cell_id = 'c0'").ok());
  EXPECT_EQ(One(c, "SELECT count(*) FROM steps"), "20");
  EXPECT_EQ(One(c, "SELECT count(*) FROM series"), "2");
  // Replacing a cell (PutCell of the same cell_id) leaves only the new rows.
  ASSERT_TRUE((*store)->PutCell(MakeCell(run_id, 1, 5)).ok());
  EXPECT_EQ(One(c, "SELECT count(*) FROM steps"), "5");
  EXPECT_EQ(One(c, "SELECT count(*) FROM series"), "2");
}

TEST(PgMigrationTest, AnOlderStoreIsMigratedAndKeepsItsRuns) {
  DLBENCH_PG_CLUSTER_OR_SKIP(cluster);
  ScratchDatabase db(cluster);
  ASSERT_TRUE(db.ok()) << db.error();
  const std::vector<pg::Migration> v3(pg::SchemaMigrations().begin(), pg::SchemaMigrations().begin() + 3);
  {
    PostgresStore::Options old;
    old.migrations = v3;
    auto store = PostgresStore::Open(db.url(), old);
    ASSERT_TRUE(store.ok()) << store.error().message;
    pg::Connection& c = (*store)->connection();
    ASSERT_EQ(*pg::ReadSchemaVersion(c), 3);
    // Rows as a version-3 dlbench wrote them: no uuid column yet.
    for (const char* sql :
         {"INSERT INTO environments (hash, fingerprint) VALUES ('h1', '{}')",
          "INSERT INTO runs (name, matrix_path, matrix_text, started_wall_ns, status, environment_id, "
          "tool_version, "
          "git_commit, total_cells) VALUES ('old-a', 'm.yaml', 'runner: null', 1, 'completed', 1, '0.1.0', "
          "'abc', 1)",
          "INSERT INTO runs (name, matrix_path, matrix_text, started_wall_ns, status, environment_id, "
          "tool_version, "
          "git_commit, total_cells) VALUES ('old-b', 'm.yaml', 'runner: null', 2, 'interrupted', 1, '0.1.0', "
          "'abc', 1)",
          "INSERT INTO cells (run_id, idx, cell_id, key, label, params, effective, hello, repetition, seed, "
          "outcome, "
          "message, verdict, verdict_reasons, warmup_steps, warmup_rule, stop_reason, stdout_path, "
          "stderr_path, "
          "started_wall_ns, finished_wall_ns, extras, measured_steps) VALUES (1, 0, 'c0', 'k', 'l', '{}', "
          "'{}', '{}', "
          "0, '7', 'ok', '', 'valid', '[]', 2, 'mser5', 'ci_target', '', '', 1, 2, '{}', 3)"}) {
      ASSERT_TRUE(c.Execute(sql).ok()) << sql;
    }
  }
  auto store = PostgresStore::Open(db.url());
  ASSERT_TRUE(store.ok()) << store.error().message;
  pg::Connection& c = (*store)->connection();
  EXPECT_EQ(*pg::ReadSchemaVersion(c), pg::LatestVersion(pg::SchemaMigrations()));
  auto runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  ASSERT_EQ(runs->size(), 2u);
  // Runs stored before version 5 are in no sweep.
  EXPECT_EQ((*runs)[0].sweep, "");
  EXPECT_EQ((*runs)[0].sweep_cells, 0);
  EXPECT_TRUE(codec::IsRunUuid((*runs)[0].uuid)) << (*runs)[0].uuid;
  EXPECT_TRUE(codec::IsRunUuid((*runs)[1].uuid)) << (*runs)[1].uuid;
  EXPECT_NE((*runs)[0].uuid, (*runs)[1].uuid);
  auto cells = (*store)->GetCells(1, CellQuery{});
  ASSERT_TRUE(cells.ok()) << cells.error().message;
  ASSERT_EQ(cells->size(), 1u);
  EXPECT_EQ((*cells)[0].window, (record::MeasuredWindow{2, 3}));
  // And the migrated store takes new runs as any other.
  EXPECT_TRUE((*store)->BeginRun(MakeRun("new")).ok());
}

TEST(PgMigrationTest, ANewerStoreIsRefusedWithNothingChanged) {
  DLBENCH_PG_CLUSTER_OR_SKIP(cluster);
  ScratchDatabase db(cluster);
  ASSERT_TRUE(db.ok()) << db.error();
  {
    auto store = PostgresStore::Open(db.url());
    ASSERT_TRUE(store.ok()) << store.error().message;
    auto run = (*store)->BeginRun(MakeRun("r"));
    ASSERT_TRUE(run.ok());
    ASSERT_TRUE((*store)->PutCell(MakeCell(*run, 0, 10)).ok());
    ASSERT_TRUE((*store)
                    ->connection()
                    .Execute("INSERT INTO schema_version (version, description, applied_wall_ns) VALUES "
                             "($1, 'from a newer dlbench', 1)",
                             pg::Params().Add(pg::LatestVersion(pg::SchemaMigrations()) + 1))
                    .ok());
  }
  auto admin = pg::Connection::Open(db.url());
  ASSERT_TRUE(admin.ok());
  const std::string before = Snapshot(*admin);
  for (OpenMode mode : {OpenMode::kExisting, OpenMode::kCreate}) {
    OpenOptions options;
    options.mode = mode;
    options.spill = false;
    auto refused = OpenStore(db.url(), options);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().kind, ErrorKind::kStore);
    const int latest = pg::LatestVersion(pg::SchemaMigrations());
    EXPECT_NE(refused.error().message.find(
                  fmt::format("schema version {}, newer than this dlbench knows ({})", latest + 1, latest)),
              std::string::npos)
        << refused.error().message;
  }
  EXPECT_EQ(Snapshot(*admin), before);
}

TEST(PgMigrationTest, AForeignDatabaseIsRefusedAndAFailedStepLeavesTheOldVersion) {
  DLBENCH_PG_CLUSTER_OR_SKIP(cluster);
  ScratchDatabase foreign(cluster);
  ASSERT_TRUE(foreign.ok()) << foreign.error();
  {
    auto c = pg::Connection::Open(foreign.url());
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c->Execute("CREATE TABLE accounts (id integer)").ok());
  }
  auto refused = PostgresStore::Open(foreign.url());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kStore);
  EXPECT_NE(refused.error().message.find("is not a dlbench store"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("accounts"), std::string::npos) << refused.error().message;

  ScratchDatabase db(cluster);
  ASSERT_TRUE(db.ok()) << db.error();
  ASSERT_TRUE(PostgresStore::Open(db.url()).ok());
  PostgresStore::Options failing;
  failing.migrations = pg::SchemaMigrations();
  const int latest = pg::LatestVersion(pg::SchemaMigrations());
  failing.migrations.push_back({latest + 1, "a step that fails half-way", [](pg::Connection& c) -> Status {
                                  DLBENCH_RETURN_IF_ERROR(c.Execute("CREATE TABLE half_done (x integer)"));
                                  return c.Execute("SELECT 1 / 0");
                                }});
  auto failed = PostgresStore::Open(db.url(), failing);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("to schema version " + std::to_string(latest + 1) + " failed"),
            std::string::npos)
      << failed.error().message;
  auto admin = pg::Connection::Open(db.url());
  ASSERT_TRUE(admin.ok());
  EXPECT_EQ(*pg::ReadSchemaVersion(*admin), latest);
  EXPECT_EQ(One(*admin, "SELECT count(*) FROM pg_tables WHERE tablename = 'half_done'"), "0")
      << "the failed step's DDL was rolled back with it";
}

TEST(PgMigrationTest, ProcessesOpeningOneNewDatabaseTogetherApplyEachStepOnce) {
  DLBENCH_PG_CLUSTER_OR_SKIP(cluster);
  ScratchDatabase db(cluster);
  ASSERT_TRUE(db.ok()) << db.error();
  constexpr int kProcesses = 6;
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcesses; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(go[1]);
      char byte = 0;
      if (read(go[0], &byte, 1) != 1) _exit(2);
      auto store = PostgresStore::Open(db.url());
      if (!store.ok()) {
        std::fprintf(stderr, "opener %d: %s\n", i, store.error().message.c_str());
        _exit(1);
      }
      _exit((*store)->BeginRun(MakeRun("opener" + std::to_string(i))).ok() ? 0 : 3);
    }
    pids.push_back(pid);
  }
  close(go[0]);
  const std::string bytes(kProcesses, 'g');
  ASSERT_EQ(write(go[1], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(go[1]);
  for (pid_t pid : pids) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "an opener failed (its stderr says why)";
  }
  auto admin = pg::Connection::Open(db.url());
  ASSERT_TRUE(admin.ok());
  EXPECT_EQ(One(*admin, "SELECT count(*) FROM schema_version"),
            std::to_string(pg::SchemaMigrations().size()));
  EXPECT_EQ(One(*admin, "SELECT count(DISTINCT id) FROM runs"), std::to_string(kProcesses));
}

}  // namespace
}  // namespace dlbench::store
