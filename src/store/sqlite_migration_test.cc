// Schema versions: a fresh database gets the code's schema; a v1 database (as released) migrates
// to the code's version with its runs reading as the whole matrix; a database migrates in place to
// an injected next step and keeps its data; a failed step leaves the database at its old version;
// a newer database and a foreign one are refused with clear messages.
#include <gtest/gtest.h>

#include "store/sqlite_schema.h"
#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace dlbench::store {
namespace {

using sqlite::Database;
using sqlite::Migration;
using testing::MakeCell;
using testing::MakeRun;
using testing::ScratchDir;

std::vector<Migration> WithStep(Migration step) {
  std::vector<Migration> migrations = sqlite::SchemaMigrations();
  step.version = sqlite::LatestVersion(migrations) + 1;
  migrations.push_back(std::move(step));
  return migrations;
}

// Creates a store at the code's own version holding one run with one cell; returns the run id.
std::int64_t CreateCurrentStore(const std::string& path) {
  auto store = SqliteStore::Open(path);
  EXPECT_TRUE(store.ok()) << store.error().message;
  auto run_id = (*store)->BeginRun(MakeRun("before-migration"));
  EXPECT_TRUE(run_id.ok());
  EXPECT_TRUE((*store)->PutCell(MakeCell(*run_id, 0, 10)).ok());
  return *run_id;
}

TEST(SqliteMigrationTest, FreshDatabaseGetsTheCodeSchemaVersion) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  auto store = SqliteStore::Open(dir.File("fresh.db"));
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto version = sqlite::ReadSchemaVersion((*store)->database());
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(*version, sqlite::LatestVersion(sqlite::SchemaMigrations()));
  EXPECT_EQ(*(*store)->database().QueryText("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(*(*store)->database().QueryText("PRAGMA foreign_keys"), "1");
  // Reopening applies nothing twice (schema_version's primary key would refuse a second row).
  store->reset();
  auto again = SqliteStore::Open(dir.File("fresh.db"));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(*(*again)->database().QueryText("SELECT count(*) FROM schema_version"),
            std::to_string(sqlite::SchemaMigrations().size()));
}

TEST(SqliteMigrationTest, V1DatabaseMigratesAndItsRunsReadAsTheWholeMatrix) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("v1.db");
  const std::vector<Migration> v1 = {sqlite::SchemaMigrations().front()};
  ASSERT_EQ(v1.front().version, 1);
  {
    // The v1 schema as released; its runs table has no selection column, so the run is inserted
    // with v1's own columns, as a v1 dlbench did.
    auto old = SqliteStore::Open(path, v1);
    ASSERT_TRUE(old.ok()) << old.error().message;
    Database& db = (*old)->database();
    ASSERT_EQ(*sqlite::ReadSchemaVersion(db), 1);
    ASSERT_TRUE(db.Execute("INSERT INTO environments (hash, fingerprint) VALUES ('h1', '{}')").ok());
    ASSERT_TRUE(db.Execute("INSERT INTO runs (name, matrix_path, matrix_text, started_wall_ns, "
                           "finished_wall_ns, status, environment_id, tool_version, git_commit, total_cells) "
                           "VALUES ('old', 'm.yaml', 'runner: null', 1700000000000000000, NULL, "
                           "'interrupted', 1, '0.1.0', 'abc', 4)")
                    .ok());
    ASSERT_TRUE((*old)->PutCell(MakeCell(1, 0, 5)).ok());
  }

  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  Database& db = (*store)->database();
  EXPECT_EQ(*sqlite::ReadSchemaVersion(db), sqlite::LatestVersion(sqlite::SchemaMigrations()));
  EXPECT_EQ(*db.QueryText("SELECT description FROM schema_version WHERE version = 2"),
            "runs.selection: the --only/--shard a run was started with");
  EXPECT_EQ(*db.QueryText("SELECT selection FROM runs WHERE id = 1"), "{}");
  EXPECT_EQ(*db.QueryText("PRAGMA integrity_check"), "ok");

  auto run = (*store)->GetRun(1);
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->name, "old");
  EXPECT_EQ(run->status, "interrupted");
  EXPECT_EQ(run->total_cells, 4);
  EXPECT_TRUE(run->selection.empty());
  auto cells = (*store)->GetCells(1, CellQuery{true, true, std::nullopt});
  ASSERT_TRUE(cells.ok()) << cells.error().message;
  ASSERT_EQ(cells->size(), 1u);
  EXPECT_EQ((*cells)[0].steps.size(), 5u);

  // New runs in the migrated file keep their selection.
  RunRecord sharded = MakeRun("new");
  sharded.selection.shard = "2/2";
  auto id = (*store)->BeginRun(sharded);
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ((*store)->GetRun(*id)->selection.shard, "2/2");
}

TEST(SqliteMigrationTest, OldDatabaseMigratesInPlaceAndKeepsItsData) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("old.db");
  const std::int64_t run_id = CreateCurrentStore(path);

  auto v2 = WithStep({0, "cells get a note column, filled from the label", [](Database& db) {
                        return sqlite::ExecuteAll(db, {"ALTER TABLE cells ADD COLUMN note TEXT",
                                                       "UPDATE cells SET note = 'was ' || label"});
                      }});
  auto store = SqliteStore::Open(path, v2);
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(*sqlite::ReadSchemaVersion((*store)->database()), sqlite::LatestVersion(v2));
  EXPECT_EQ(*(*store)->database().QueryText("SELECT description FROM schema_version ORDER BY version DESC"),
            "cells get a note column, filled from the label");
  EXPECT_EQ(*(*store)->database().QueryText("SELECT note FROM cells"), "was resnet50 bs=32");

  auto cells = (*store)->GetCells(run_id, CellQuery{true, true, std::nullopt});
  ASSERT_TRUE(cells.ok()) << cells.error().message;
  ASSERT_EQ(cells->size(), 1u);
  EXPECT_EQ((*cells)[0].steps.size(), 10u);
  EXPECT_EQ((*cells)[0].params, MakeCell(run_id, 0).params);
  EXPECT_EQ((*(*store)->GetRun(run_id)).name, "before-migration");
}

TEST(SqliteMigrationTest, FailedStepLeavesTheOldVersionUntouched) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("old.db");
  CreateCurrentStore(path);
  auto broken = WithStep({0, "half a step", [](Database& db) {
                            return sqlite::ExecuteAll(db, {"CREATE TABLE half_done (x INTEGER)",
                                                           "INSERT INTO no_such_table VALUES (1)"});
                          }});
  auto store = SqliteStore::Open(path, broken);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().kind, ErrorKind::kStore);
  EXPECT_NE(store.error().message.find("migrating"), std::string::npos) << store.error().message;

  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(*sqlite::ReadSchemaVersion(*db), sqlite::LatestVersion(sqlite::SchemaMigrations()));
  EXPECT_EQ(*db->QueryText("SELECT count(*) FROM sqlite_master WHERE name = 'half_done'"), "0");
}

TEST(SqliteMigrationTest, NewerDatabaseIsRefused) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("new.db");
  {
    auto newer = SqliteStore::Open(path, WithStep({0, "a future step", [](Database& db) {
                                                     return db.Execute("CREATE TABLE future (x INTEGER)");
                                                   }}));
    ASSERT_TRUE(newer.ok()) << newer.error().message;
  }
  auto store = OpenSqliteStore(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().kind, ErrorKind::kStore);
  const int code_version = sqlite::LatestVersion(sqlite::SchemaMigrations());
  const std::string expected = "has schema version " + std::to_string(code_version + 1) +
                               ", newer than this dlbench knows (" + std::to_string(code_version) + ")";
  EXPECT_NE(store.error().message.find(expected), std::string::npos) << store.error().message;
}

TEST(SqliteMigrationTest, ForeignDatabaseIsRefused) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("other.db");
  {
    auto db = Database::Open(path);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)").ok());
  }
  auto store = OpenSqliteStore(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().kind, ErrorKind::kStore);
  EXPECT_NE(store.error().message.find("not a dlbench store"), std::string::npos) << store.error().message;
  EXPECT_NE(store.error().message.find("invoices"), std::string::npos) << store.error().message;
}

}  // namespace
}  // namespace dlbench::store
