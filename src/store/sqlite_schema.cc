#include "store/sqlite_schema.h"

#include "common/clock.h"
#include "store/store_codec.h"

namespace dlbench::store::sqlite {
namespace {

// Version 1. Conventions (docs/storage.md): times are integer nanoseconds in columns ending _ns
// (wall clock since the Unix epoch for *_wall_ns, CLOCK_MONOTONIC otherwise); JSON is stored as
// text; an absent value is NULL, never a sentinel.
const std::vector<std::string>& V1Statements() {
  static const std::vector<std::string> kStatements = {
      R"sql(CREATE TABLE schema_version (
        version INTEGER PRIMARY KEY,
        description TEXT NOT NULL,
        applied_wall_ns INTEGER NOT NULL))sql",

      R"sql(CREATE TABLE environments (
        id INTEGER PRIMARY KEY,
        hash TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        UNIQUE (hash, fingerprint)))sql",

      R"sql(CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        matrix_path TEXT NOT NULL,
        matrix_text TEXT NOT NULL,
        started_wall_ns INTEGER NOT NULL,
        finished_wall_ns INTEGER,
        status TEXT NOT NULL,
        environment_id INTEGER NOT NULL REFERENCES environments (id),
        tool_version TEXT NOT NULL,
        git_commit TEXT NOT NULL,
        total_cells INTEGER NOT NULL))sql",

      R"sql(CREATE TABLE tags (
        name TEXT PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs (id)))sql",
      "CREATE INDEX tags_by_run ON tags (run_id)",

      R"sql(CREATE TABLE cells (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs (id),
        idx INTEGER NOT NULL,
        cell_id TEXT NOT NULL,
        key TEXT NOT NULL,
        label TEXT NOT NULL,
        params TEXT NOT NULL,
        effective TEXT NOT NULL,
        hello TEXT NOT NULL,
        repetition INTEGER NOT NULL,
        seed TEXT NOT NULL,
        outcome TEXT NOT NULL,
        message TEXT NOT NULL,
        verdict TEXT NOT NULL,
        verdict_reasons TEXT NOT NULL,
        warmup_steps INTEGER,
        warmup_rule TEXT NOT NULL,
        stop_reason TEXT NOT NULL,
        stdout_path TEXT NOT NULL,
        stderr_path TEXT NOT NULL,
        started_wall_ns INTEGER NOT NULL,
        finished_wall_ns INTEGER NOT NULL,
        extras TEXT NOT NULL,
        UNIQUE (run_id, cell_id)))sql",
      "CREATE INDEX cells_by_run_idx ON cells (run_id, idx)",
      "CREATE INDEX cells_by_key ON cells (key, run_id)",

      R"sql(CREATE TABLE metrics (
        id INTEGER PRIMARY KEY,
        cell_id INTEGER NOT NULL REFERENCES cells (id),
        name TEXT NOT NULL,
        value REAL,
        unit TEXT NOT NULL,
        UNIQUE (cell_id, name)))sql",

      // WITHOUT ROWID: the rows are clustered by (cell_id, idx), so a cell's steps are one range
      // and each insert touches one b-tree instead of a table plus an index.
      R"sql(CREATE TABLE steps (
        cell_id INTEGER NOT NULL REFERENCES cells (id),
        idx INTEGER NOT NULL,
        rank INTEGER NOT NULL,
        start_ns INTEGER NOT NULL,
        end_ns INTEGER NOT NULL,
        samples INTEGER NOT NULL,
        data_wait_ns INTEGER,
        compute_ns INTEGER,
        comm_ns INTEGER,
        PRIMARY KEY (cell_id, idx)) WITHOUT ROWID)sql",

      R"sql(CREATE TABLE series (
        id INTEGER PRIMARY KEY,
        cell_id INTEGER NOT NULL REFERENCES cells (id),
        t_ns INTEGER NOT NULL,
        series TEXT NOT NULL,
        value REAL))sql",
      "CREATE INDEX series_by_cell ON series (cell_id, series, t_ns)",
  };
  return kStatements;
}

// Version 2: the cell selection a run was started with (--only, --shard) as a JSON object, so
// --resume can apply it again. Runs stored before read as '{}', the whole matrix: their selection
// was not recorded, and `run --resume` checks one given again as it always did.
const std::vector<std::string>& V2Statements() {
  static const std::vector<std::string> kStatements = {
      "ALTER TABLE runs ADD COLUMN selection TEXT NOT NULL DEFAULT '{}'",
  };
  return kStatements;
}

// Version 3: the measured window is data (record::MeasuredWindow). cells.warmup_steps already
// held its first step; measured_steps holds its length, decided once by the measurement policy.
// Cells stored before get it from their measured_steps metric, which the same policy wrote, or,
// without one, from their rank-0 steps after the cut (what every consumer derived before).
const std::vector<std::string>& V3Statements() {
  static const std::vector<std::string> kStatements = {
      "ALTER TABLE cells ADD COLUMN measured_steps INTEGER",
      R"sql(UPDATE cells SET measured_steps = coalesce(
          (SELECT CAST(m.value AS INTEGER) FROM metrics m WHERE m.cell_id = cells.id AND m.name = 'measured_steps'),
          max(0, (SELECT count(*) FROM steps s WHERE s.cell_id = cells.id AND s.rank = 0) - cells.warmup_steps))
        WHERE warmup_steps IS NOT NULL)sql",
  };
  return kStatements;
}

// Version 4: runs.uuid, the key `dlbench db copy` matches runs by (the same step as PostgreSQL's).
// Runs stored before get a fresh UUID each; dlbench writes one with every new run, so the column
// is never NULL after this step although SQLite cannot add it as NOT NULL without a default.
Status ApplyV4(Database& db) {
  DLBENCH_RETURN_IF_ERROR(db.Execute("ALTER TABLE runs ADD COLUMN uuid TEXT"));
  std::vector<std::int64_t> ids;
  {
    auto select = db.Prepare("SELECT id FROM runs WHERE uuid IS NULL ORDER BY id");
    if (!select.ok()) return select.error();
    for (;;) {
      auto row = select->Step();
      if (!row.ok()) return row.error();
      if (!*row) break;
      ids.push_back(select->Int64(0));
    }
  }
  auto update = db.Prepare("UPDATE runs SET uuid = ?1 WHERE id = ?2");
  if (!update.ok()) return update.error();
  for (std::int64_t id : ids) {
    const std::string uuid = codec::NewRunUuid();
    update->Bind(1, std::string_view(uuid)).Bind(2, id);
    DLBENCH_RETURN_IF_ERROR(update->Run());
  }
  return db.Execute("CREATE UNIQUE INDEX runs_by_uuid ON runs (uuid)");
}

// Version 5: the sweep a run is a shard of (`run --shard K/N --sweep NAME`, or the launcher's job)
// and the cells of the whole sweep, so that its shards read as one run (store/sweep.h). Runs stored
// before are in no sweep (NULL): nothing recorded which of them belonged together.
std::vector<std::string> V5Statements() {
  return {
      "ALTER TABLE runs ADD COLUMN sweep TEXT",
      "ALTER TABLE runs ADD COLUMN sweep_cells INTEGER",
      "CREATE INDEX runs_by_sweep ON runs (sweep, id)",
  };
}

Result<bool> TableExists(Database& db, const std::string& name) {
  auto stmt = db.Prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1");
  if (!stmt.ok()) return stmt.error();
  stmt->Bind(1, std::string_view(name));
  auto row = stmt->Step();
  if (!row.ok()) return row.error();
  return stmt->Int64(0) > 0;
}

}  // namespace

const std::vector<Migration>& SchemaMigrations() {
  static const std::vector<Migration> kMigrations = {
      {1, "initial schema: environments, runs, tags, cells, metrics, steps, series",
       [](Database& db) { return ExecuteAll(db, V1Statements()); }},
      {2, "runs.selection: the --only/--shard a run was started with",
       [](Database& db) { return ExecuteAll(db, V2Statements()); }},
      {3, "cells.measured_steps: the measured window's length, decided once by the measurement policy",
       [](Database& db) { return ExecuteAll(db, V3Statements()); }},
      {4, "runs.uuid: a key that names a run in every store (db copy)", ApplyV4},
      {5, "runs.sweep, runs.sweep_cells: the sweep a run is a shard of",
       [](Database& db) { return ExecuteAll(db, V5Statements()); }},
  };
  return kMigrations;
}

int LatestVersion(const std::vector<Migration>& migrations) {
  return migrations.empty() ? 0 : migrations.back().version;
}

Status ExecuteAll(Database& db, const std::vector<std::string>& statements) {
  for (const std::string& sql : statements) DLBENCH_RETURN_IF_ERROR(db.Execute(sql));
  return Status::Ok();
}

namespace {

Error NotAStore(Database& db, const std::string& why) {
  return MakeError(ErrorKind::kStore, "SQLite database '" + db.path() + "' is not a dlbench store: " + why);
}

Error NewerThanKnown(Database& db, std::int64_t version, int latest) {
  return MakeError(ErrorKind::kStore, "SQLite database '" + db.path() + "' has schema version " +
                                          std::to_string(version) + ", newer than this dlbench knows (" +
                                          std::to_string(latest) +
                                          "): it was created by a newer dlbench; use that one or a newer "
                                          "one, or another database file");
}

}  // namespace

Result<std::int64_t> ReadSchemaVersion(Database& db) {
  auto has_version = TableExists(db, "schema_version");
  if (!has_version.ok()) return has_version.error();
  if (!*has_version) {
    auto tables = db.Prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    if (!tables.ok()) return tables.error();
    std::string names;
    for (;;) {
      auto row = tables->Step();
      if (!row.ok()) return row.error();
      if (!*row) break;
      names += (names.empty() ? "" : ", ") + tables->Text(0);
    }
    if (names.empty()) return std::int64_t{0};
    return NotAStore(db, "it has no schema_version table (its tables: " + names + ")");
  }
  // Another program may name a table schema_version too: ours has exactly these columns.
  auto shape = db.Prepare(
      "SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info('schema_version') ORDER BY "
      "cid)");
  if (!shape.ok()) return shape.error();
  auto shape_row = shape->Step();
  if (!shape_row.ok()) return shape_row.error();
  if (shape->Text(0) != "version,description,applied_wall_ns") {
    return NotAStore(db, "its schema_version table has the columns (" + shape->Text(0) +
                             "), not dlbench's (version, description, applied_wall_ns)");
  }
  auto stmt = db.Prepare(
      "SELECT count(*), coalesce(sum(typeof(version) <> 'integer'), 0), max(version), min(version) "
      "FROM schema_version");
  if (!stmt.ok()) return stmt.error();
  auto row = stmt->Step();
  if (!row.ok()) return row.error();
  if (stmt->Int64(0) == 0) return NotAStore(db, "its schema_version table is empty");
  if (stmt->Int64(1) != 0)
    return NotAStore(db, "its schema_version table holds versions that are not integers");
  const std::int64_t newest = stmt->Int64(2);
  const std::int64_t oldest = stmt->Int64(3);
  if (oldest < 1) {
    return MakeError(ErrorKind::kStore, "SQLite database '" + db.path() +
                                            "' has an invalid schema version (" + std::to_string(oldest) +
                                            "); it is damaged or not a dlbench store");
  }
  return newest;
}

Result<std::int64_t> CheckSchema(Database& db, const std::vector<Migration>& migrations) {
  // One snapshot: another process may be creating the schema right now, and two separate reads
  // could see no schema_version table and then every table (and call it a foreign database).
  auto read = Transaction::Begin(db, Transaction::Mode::kDeferred);
  if (!read.ok()) return read.error();
  auto current = ReadSchemaVersion(db);
  if (!current.ok()) return current.error();
  DLBENCH_RETURN_IF_ERROR(read->Commit());
  const int latest = LatestVersion(migrations);
  if (*current > latest) return NewerThanKnown(db, *current, latest);
  return current;
}

Status Migrate(Database& db, const std::vector<Migration>& migrations) {
  for (std::size_t i = 0; i < migrations.size(); ++i) {
    DLBENCH_CHECK(migrations[i].version == static_cast<int>(i) + 1 && migrations[i].apply,
                  "schema migrations must be numbered 1, 2, 3, ... and each must have a step");
  }
  const int latest = LatestVersion(migrations);
  Result<std::int64_t> current = CheckSchema(db, migrations);
  if (!current.ok()) return current.error();

  for (const Migration& step : migrations) {
    if (step.version <= *current) continue;
    auto tx = Transaction::Begin(db, Transaction::Mode::kImmediate);
    if (!tx.ok()) return tx.error();
    // Another process may have migrated between our read and our write lock; re-read under it.
    current = ReadSchemaVersion(db);
    if (!current.ok()) return current.error();
    if (*current > latest) return NewerThanKnown(db, *current, latest);
    if (step.version <= *current) continue;
    Status applied = step.apply(db);
    if (!applied.ok()) {
      return MakeError(ErrorKind::kStore, "migrating '" + db.path() + "' to schema version " +
                                              std::to_string(step.version) +
                                              " failed: " + applied.error().message);
    }
    auto record =
        db.Prepare("INSERT INTO schema_version (version, description, applied_wall_ns) VALUES (?1, ?2, ?3)");
    if (!record.ok()) return record.error();
    record->Bind(1, step.version).Bind(2, std::string_view(step.description)).Bind(3, WallNowNs());
    DLBENCH_RETURN_IF_ERROR(record->Run());
    DLBENCH_RETURN_IF_ERROR(tx->Commit());
    *current = step.version;
  }
  return Status::Ok();
}

}  // namespace dlbench::store::sqlite
