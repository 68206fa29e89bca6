// Schema versions: a fresh database gets the code's schema; a v1 database (as released) migrates
// to the code's version with its runs reading as the whole matrix; a database migrates in place to
// an injected next step and keeps its data; a failed step leaves the database at its old version;
// a newer database and a foreign one are refused with clear messages.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "record/metrics.h"
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

// Inserts a finished cell the way a version 1 or 2 dlbench did (no measured_steps column): `steps`
// rank-0 steps, the warm-up cut, and, when given, the measured_steps metric that policy wrote.
void InsertOldCell(Database& db, std::int64_t run_id, const std::string& cell_id, int steps,
                   std::optional<int> warmup, std::optional<int> measured_metric) {
  auto cell = db.Prepare(
      "INSERT INTO cells (run_id, idx, cell_id, key, label, params, effective, hello, repetition, seed, "
      "outcome, "
      "message, verdict, verdict_reasons, warmup_steps, warmup_rule, stop_reason, stdout_path, stderr_path, "
      "started_wall_ns, finished_wall_ns, extras) VALUES (?1, 0, ?2, 'k', 'l', '{}', '{}', '{}', 0, '7', "
      "'ok', "
      "'', 'valid', '[]', ?3, 'mser5', 'ci_reached', '', '', 1, 2, '{}')");
  ASSERT_TRUE(cell.ok()) << cell.error().message;
  cell->Bind(1, run_id).Bind(2, std::string_view(cell_id));
  cell->Bind(3, warmup ? std::optional<std::int64_t>(*warmup) : std::nullopt);
  ASSERT_TRUE(cell->Run().ok());
  const std::int64_t row = db.LastInsertRowId();
  for (int i = 0; i < steps; ++i) {
    ASSERT_TRUE(db.Execute(fmt::format("INSERT INTO steps (cell_id, idx, rank, start_ns, end_ns, samples) "
                                       "VALUES ({}, {}, 0, {}, {}, 1)",
                                       row, i, 1000 * i, 1000 * i + 500))
                    .ok());
  }
  if (measured_metric) {
    ASSERT_TRUE(db.Execute(fmt::format("INSERT INTO metrics (cell_id, name, value, unit) VALUES ({}, "
                                       "'measured_steps', {}, 'steps')",
                                       row, *measured_metric))
                    .ok());
  }
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
    InsertOldCell(db, 1, "c0", 5, 2, std::nullopt);
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
  EXPECT_EQ(run->status, record::RunStatus::kInterrupted);
  EXPECT_EQ(run->total_cells, 4);
  EXPECT_TRUE(run->selection.empty());
  EXPECT_EQ(run->sweep, "") << "runs stored before version 5 are in no sweep";
  EXPECT_EQ(run->sweep_cells, 0);
  EXPECT_EQ(*db.QueryText("SELECT count(*) FROM runs WHERE sweep IS NULL AND sweep_cells IS NULL"), "1");
  auto cells = (*store)->GetCells(1, CellQuery{true, true, std::nullopt});
  ASSERT_TRUE(cells.ok()) << cells.error().message;
  ASSERT_EQ(cells->size(), 1u);
  EXPECT_EQ((*cells)[0].steps.size(), 5u);
  // v1 recorded no measured_steps metric: the window is every rank-0 step after the cut (v3).
  EXPECT_EQ((*cells)[0].window, (record::MeasuredWindow{2, 3}));

  // New runs in the migrated file keep their selection.
  RunRecord sharded = MakeRun("new");
  sharded.selection.shard = "2/2";
  sharded.sweep = "nightly";
  sharded.sweep_cells = 7;
  auto id = (*store)->BeginRun(sharded);
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ((*store)->GetRun(*id)->selection.shard, "2/2");
  EXPECT_EQ((*store)->GetRun(*id)->sweep, "nightly");
  EXPECT_EQ((*store)->GetRun(*id)->sweep_cells, 7);
}

// Version 3 makes the measured window data. A v2 cell's window comes from the measured_steps
// metric its policy wrote (a ci_reached cell stores steps after the window), else from its steps.
TEST(SqliteMigrationTest, V2CellsGetTheirMeasuredWindow) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("v2.db");
  std::vector<Migration> v2 = sqlite::SchemaMigrations();
  v2.resize(2);
  {
    auto old = SqliteStore::Open(path, v2);
    ASSERT_TRUE(old.ok()) << old.error().message;
    Database& db = (*old)->database();
    ASSERT_TRUE(db.Execute("INSERT INTO environments (hash, fingerprint) VALUES ('h1', '{}')").ok());
    ASSERT_TRUE(db.Execute("INSERT INTO runs (name, matrix_path, matrix_text, started_wall_ns, status, "
                           "environment_id, tool_version, git_commit, total_cells) VALUES ('v2', 'm.yaml', "
                           "'runner: null', 1, 'completed', 1, '0.1.0', 'abc', 3)")
                    .ok());
    InsertOldCell(db, 1, "stopped-on-ci", 30, 4, 22);  // 4 steps arrived after the decision
    InsertOldCell(db, 1, "no-metric", 10, 3, std::nullopt);
    InsertOldCell(db, 1, "no-steps", 0, std::nullopt, std::nullopt);
  }
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(*sqlite::ReadSchemaVersion((*store)->database()),
            sqlite::LatestVersion(sqlite::SchemaMigrations()));
  auto cells = (*store)->GetCells(1, CellQuery{true, false, std::nullopt});
  ASSERT_TRUE(cells.ok()) << cells.error().message;
  ASSERT_EQ(cells->size(), 3u);
  std::map<std::string, std::optional<record::MeasuredWindow>> windows;
  for (const auto& c : *cells) windows[c.cell_id] = c.window;
  EXPECT_EQ(windows["stopped-on-ci"], (record::MeasuredWindow{4, 22}));
  EXPECT_EQ(windows["no-metric"], (record::MeasuredWindow{3, 7}));
  EXPECT_FALSE(windows["no-steps"].has_value());
  for (const auto& c : *cells) {
    if (c.cell_id == "stopped-on-ci") {
      EXPECT_EQ(record::MeasuredSteps(c).size(), 22u);
    }
  }
}

// A store written by the released code (commit deb7ad4, schema 2; tests/data/store-v2-deb7ad4.yaml
// is the matrix it ran): after migration, every cell's window holds exactly the steps the old
// policy measured, so its stored mean step time recomputes from MeasuredSteps.
TEST(SqliteMigrationTest, AStoreWrittenByTheReleasedCodeKeepsItsMeasuredWindows) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("released.db");
  std::filesystem::copy_file(std::string(DLBENCH_SOURCE_DIR) + "/tests/data/store-v2-deb7ad4.sqlite", path);
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(*sqlite::ReadSchemaVersion((*store)->database()),
            sqlite::LatestVersion(sqlite::SchemaMigrations()));
  auto cells = (*store)->GetCells(1, CellQuery{true, false, std::nullopt});
  ASSERT_TRUE(cells.ok()) << cells.error().message;
  ASSERT_EQ(cells->size(), 3u);
  int compared = 0;
  for (const auto& c : *cells) {
    ASSERT_TRUE(c.window.has_value()) << c.cell_id;
    const auto measured_metric = record::MetricValue(c, record::metric::kMeasuredSteps);
    ASSERT_TRUE(measured_metric.has_value()) << c.cell_id;
    EXPECT_EQ(c.window->steps, static_cast<std::int64_t>(*measured_metric)) << c.cell_id;
    EXPECT_EQ(c.window->first_step, *record::MetricValue(c, record::metric::kWarmupSteps)) << c.cell_id;
    const auto steps = record::MeasuredSteps(c);
    ASSERT_EQ(static_cast<std::int64_t>(steps.size()), c.window->steps) << c.cell_id;
    if (c.outcome != record::Outcome::kOk) continue;
    // These cells stopped on ci_reached with steps stored after the window.
    EXPECT_LT(c.window->first_step + c.window->steps, static_cast<std::int64_t>(c.steps.size())) << c.cell_id;
    double sum = 0;
    for (const auto& r : steps) sum += static_cast<double>(r.end_ns - r.start_ns);
    EXPECT_NEAR(sum / static_cast<double>(steps.size()),
                *record::MetricValue(c, record::metric::kStepTimeMeanNs), 1e-6)
        << c.cell_id;
    ++compared;
  }
  EXPECT_EQ(compared, 2);
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
