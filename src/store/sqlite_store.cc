// SqliteStore: opening (WAL, schema check and migration, read-only fallback), run locks, and the
// writes (runs, cells with their children, statuses, tags). The reads are in sqlite_store_read.cc,
// the removals in sqlite_store_admin.cc.
#include "store/sqlite_store.h"

#include <unistd.h>

#include <filesystem>
#include <utility>

#include "common/log.h"
#include "store/store_codec.h"

namespace dlbench::store {

using sqlite::Database;
using sqlite::Transaction;

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path,
                                                       const std::vector<sqlite::Migration>& migrations) {
  auto db = Database::Open(path, kBusyTimeoutMs);
  if (!db.ok()) return db.error();
  // Before anything writes to the file: a foreign database, a damaged or newer schema is refused
  // and left byte for byte as it was (the switch to WAL below rewrites the header).
  auto version = sqlite::CheckSchema(*db, migrations);
  if (!version.ok()) return version.error();
  // Several processes may open a new file at once (`dlbench run --shard` per GPU); the switch to
  // WAL is the one step that does not wait through the busy timeout by itself.
  auto mode = db->QueryTextWaitingForLocks("PRAGMA journal_mode = WAL");
  if (!mode.ok()) return mode.error();
  if (*mode != "wal" && path != ":memory:") {
    // Still safe against a killed process (the rollback journal is synced as well), only slower
    // and readers block the writer; worth saying, not worth refusing.
    LogWarning("SQLite database '{}' could not switch to WAL (journal mode is '{}')", path, *mode);
  }
  // NORMAL: in WAL mode a commit is a write() to the WAL; only a checkpoint fsyncs. A killed
  // process loses nothing the kernel already has, so this is durable against SIGKILL.
  DLBENCH_RETURN_IF_ERROR(db->Execute("PRAGMA synchronous = NORMAL"));
  DLBENCH_RETURN_IF_ERROR(db->Execute("PRAGMA foreign_keys = ON"));
  // A cell with a million steps grows the WAL to tens of MiB; give the space back after a
  // checkpoint instead of keeping the largest size ever reached.
  DLBENCH_RETURN_IF_ERROR(db->Execute("PRAGMA journal_size_limit = 67108864"));
  DLBENCH_RETURN_IF_ERROR(sqlite::Migrate(*db, migrations));
  return std::unique_ptr<SqliteStore>(new SqliteStore(std::move(*db)));
}

namespace {

// Whether this process could write the database and the journal files next to it. access()
// answers for the real user (root passes whatever the mode bits say) and says EROFS on a
// read-only filesystem.
bool CanWrite(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  return ::access(path.c_str(), W_OK) == 0 && ::access(dir.c_str(), W_OK) == 0;
}

}  // namespace

Result<std::unique_ptr<SqliteStore>> SqliteStore::OpenForReading(
    const std::string& path, const std::vector<sqlite::Migration>& migrations) {
  std::error_code ec;
  if (path == ":memory:" || !std::filesystem::exists(path, ec) || CanWrite(path))
    return Open(path, migrations);
  auto db = Database::Open(path, kBusyTimeoutMs, sqlite::OpenMode::kReadOnly);
  if (!db.ok()) {
    // A WAL database read-only needs a -shm file; where none exists and none can be created (a
    // read-only directory or filesystem), nobody can be writing it either: read it as immutable.
    std::string dir = std::filesystem::path(path).parent_path().string();
    if (::access(dir.empty() ? "." : dir.c_str(), W_OK) == 0) return db.error();
    db = Database::Open(path, kBusyTimeoutMs, sqlite::OpenMode::kImmutable);
    if (!db.ok()) return db.error();
  }
  auto version = sqlite::CheckSchema(*db, migrations);
  if (!version.ok()) return version.error();
  const int latest = sqlite::LatestVersion(migrations);
  if (*version < latest) {
    return MakeError(ErrorKind::kStore,
                     "SQLite database '" + path + "' has schema version " + std::to_string(*version) +
                         ", older than this dlbench's " + std::to_string(latest) +
                         ", and cannot be migrated: it is read-only here. Open it once with this dlbench "
                         "where it can be written (any command migrates it)");
  }
  DLBENCH_RETURN_IF_ERROR(db->Execute("PRAGMA foreign_keys = ON"));
  return std::unique_ptr<SqliteStore>(new SqliteStore(std::move(*db)));
}

Result<std::unique_ptr<ResultStore>> OpenSqliteStore(const std::string& path) {
  auto store = SqliteStore::Open(path);
  if (!store.ok()) return store.error();
  return std::unique_ptr<ResultStore>(std::move(*store));
}

Result<std::unique_ptr<ResultStore>> OpenSqliteStoreForReading(const std::string& path) {
  auto store = SqliteStore::OpenForReading(path);
  if (!store.ok()) return store.error();
  return std::unique_ptr<ResultStore>(std::move(*store));
}

std::string SqliteStore::Describe() const { return "sqlite:" + db_.path(); }

Result<std::optional<RunLockOwner>> SqliteStore::TryLockRun(std::int64_t run_id, const RunLockOwner& owner) {
  return locks_.TryLock(run_id, owner);
}

Status SqliteStore::UnlockRun(std::int64_t run_id) { return locks_.Unlock(run_id); }

Result<bool> SqliteStore::RunExists(std::int64_t run_id) {
  auto stmt = db_.Prepare("SELECT 1 FROM runs WHERE id = ?1");
  if (!stmt.ok()) return stmt.error();
  stmt->Bind(1, run_id);
  return stmt->Step();
}

Status SqliteStore::StoreTag(std::int64_t run_id, const std::string& tag) {
  DLBENCH_RETURN_IF_ERROR(codec::ValidateTagName(tag));
  auto stmt = db_.Prepare(
      "INSERT INTO tags (name, run_id) VALUES (?1, ?2) "
      "ON CONFLICT (name) DO UPDATE SET run_id = excluded.run_id");
  if (!stmt.ok()) return stmt.error();
  stmt->Bind(1, std::string_view(tag)).Bind(2, run_id);
  return stmt->Run();
}

Result<std::int64_t> SqliteStore::BeginRun(const RunRecord& run) {
  for (const std::string& tag : run.tags) DLBENCH_RETURN_IF_ERROR(codec::ValidateTagName(tag));
  auto fingerprint = codec::DumpJson(run.environment, "the environment fingerprint");
  if (!fingerprint.ok()) return fingerprint.error();
  auto selection = codec::DumpJson(record::RunSelectionToJson(run.selection), "the run's selection");
  if (!selection.ok()) return selection.error();
  if (!run.uuid.empty() && !codec::IsRunUuid(run.uuid)) {
    return MakeError(ErrorKind::kInvalidInput, "run uuid '" + run.uuid + "' is not a lower-case UUID");
  }
  const std::string uuid = run.uuid.empty() ? codec::NewRunUuid() : run.uuid;

  auto tx = Transaction::Begin(db_, Transaction::Mode::kImmediate);
  if (!tx.ok()) return tx.error();
  // A run is stored once: the same uuid again (db copy, a retried BeginRun) names the stored run.
  auto find_run = db_.Prepare("SELECT id FROM runs WHERE uuid = ?1");
  if (!find_run.ok()) return find_run.error();
  find_run->Bind(1, std::string_view(uuid));
  auto stored = find_run->Step();
  if (!stored.ok()) return stored.error();
  if (*stored) {
    const std::int64_t existing = find_run->Int64(0);
    find_run->Reset();
    DLBENCH_RETURN_IF_ERROR(tx->Commit());
    return existing;
  }
  // Deduplicated on the whole fingerprint, not the hash alone: two machines whose comparable
  // fields agree (one hash) still differ in what was recorded (host name, ...), and R13 wants
  // every result's own environment kept.
  auto insert_env = db_.Prepare(
      "INSERT INTO environments (hash, fingerprint) VALUES (?1, ?2) ON CONFLICT (hash, fingerprint) DO "
      "NOTHING");
  if (!insert_env.ok()) return insert_env.error();
  insert_env->Bind(1, std::string_view(run.environment_hash)).Bind(2, std::string_view(*fingerprint));
  DLBENCH_RETURN_IF_ERROR(insert_env->Run());
  auto find_env = db_.Prepare("SELECT id FROM environments WHERE hash = ?1 AND fingerprint = ?2");
  if (!find_env.ok()) return find_env.error();
  find_env->Bind(1, std::string_view(run.environment_hash)).Bind(2, std::string_view(*fingerprint));
  auto found = find_env->Step();
  if (!found.ok()) return found.error();
  DLBENCH_CHECK(*found, "the environment row was just inserted");
  const std::int64_t environment_id = find_env->Int64(0);

  auto insert_run = db_.Prepare(
      "INSERT INTO runs (name, matrix_path, matrix_text, started_wall_ns, finished_wall_ns, status, "
      "environment_id, tool_version, git_commit, total_cells, selection, uuid, sweep, sweep_cells) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
  if (!insert_run.ok()) return insert_run.error();
  insert_run->Bind(1, std::string_view(run.name))
      .Bind(2, std::string_view(run.matrix_path))
      .Bind(3, std::string_view(run.matrix_text))
      .Bind(4, run.started_wall_ns)
      .Bind(5, run.finished_wall_ns)
      .Bind(6, record::Name(run.status))
      .Bind(7, environment_id)
      .Bind(8, std::string_view(run.tool_version))
      .Bind(9, std::string_view(run.git_commit))
      .Bind(10, run.total_cells)
      .Bind(11, std::string_view(*selection))
      .Bind(12, std::string_view(uuid));
  if (run.sweep.empty()) {
    insert_run->Bind(13, std::nullopt).Bind(14, std::nullopt);
  } else {
    insert_run->Bind(13, std::string_view(run.sweep)).Bind(14, run.sweep_cells);
  }
  DLBENCH_RETURN_IF_ERROR(insert_run->Run());
  const std::int64_t run_id = db_.LastInsertRowId();
  for (const std::string& tag : run.tags) DLBENCH_RETURN_IF_ERROR(StoreTag(run_id, tag));
  DLBENCH_RETURN_IF_ERROR(tx->Commit());
  return run_id;
}

Status SqliteStore::PutCell(const CellRecord& cell) {
  const std::string what = "cell '" + cell.cell_id + "' of run " + std::to_string(cell.run_id);
  DLBENCH_RETURN_IF_ERROR(codec::CheckUniqueMetricNames(cell, what));
  // Serialise before taking the write lock: the transaction should hold nothing but writes.
  auto json_text = codec::DumpCellJson(cell, what);
  if (!json_text.ok()) return json_text.error();
  const std::string seed_text = std::to_string(cell.seed);

  auto tx = Transaction::Begin(db_, Transaction::Mode::kImmediate);
  if (!tx.ok()) return tx.error();
  auto exists = RunExists(cell.run_id);
  if (!exists.ok()) return exists.error();
  if (!*exists) return MakeError(ErrorKind::kNotFound, "cannot store " + what + ": there is no such run");

  // Replace: the old row's children go first (the foreign keys forbid orphans), all inside this
  // transaction, so a reader sees the old cell or the new one, never a mix.
  auto find_old = db_.Prepare("SELECT id FROM cells WHERE run_id = ?1 AND cell_id = ?2");
  if (!find_old.ok()) return find_old.error();
  find_old->Bind(1, cell.run_id).Bind(2, std::string_view(cell.cell_id));
  auto old = find_old->Step();
  if (!old.ok()) return old.error();
  if (*old) {
    const std::int64_t old_id = find_old->Int64(0);
    find_old->Reset();
    for (const char* sql : {"DELETE FROM steps WHERE cell_id = ?1", "DELETE FROM series WHERE cell_id = ?1",
                            "DELETE FROM metrics WHERE cell_id = ?1", "DELETE FROM cells WHERE id = ?1"}) {
      auto del = db_.Prepare(sql);
      if (!del.ok()) return del.error();
      del->Bind(1, old_id);
      DLBENCH_RETURN_IF_ERROR(del->Run());
    }
  }

  auto insert_cell = db_.Prepare(
      "INSERT INTO cells (run_id, idx, cell_id, key, label, params, effective, hello, repetition, seed, "
      "outcome, message, verdict, verdict_reasons, warmup_steps, warmup_rule, stop_reason, stdout_path, "
      "stderr_path, started_wall_ns, finished_wall_ns, extras, measured_steps) VALUES "
      "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, "
      "?22, ?23)");
  if (!insert_cell.ok()) return insert_cell.error();
  insert_cell->Bind(1, cell.run_id)
      .Bind(2, cell.index)
      .Bind(3, std::string_view(cell.cell_id))
      .Bind(4, std::string_view(cell.key))
      .Bind(5, std::string_view(cell.label))
      .Bind(6, std::string_view((*json_text)[0]))
      .Bind(7, std::string_view((*json_text)[1]))
      .Bind(8, std::string_view((*json_text)[2]))
      .Bind(9, cell.repetition)
      .Bind(10, std::string_view(seed_text))
      .Bind(11, record::Name(cell.outcome))
      .Bind(12, std::string_view(cell.message))
      .Bind(13, record::Name(cell.verdict))
      .Bind(14, std::string_view((*json_text)[3]))
      .Bind(15, cell.warmup_steps())
      .Bind(16, std::string_view(cell.warmup_rule))
      .Bind(17, std::string_view(cell.stop_reason))
      .Bind(18, std::string_view(cell.stdout_path))
      .Bind(19, std::string_view(cell.stderr_path))
      .Bind(20, cell.started_wall_ns)
      .Bind(21, cell.finished_wall_ns)
      .Bind(22, std::string_view((*json_text)[4]))
      .Bind(23, cell.window ? std::optional<std::int64_t>(cell.window->steps) : std::nullopt);
  DLBENCH_RETURN_IF_ERROR(insert_cell->Run());
  const std::int64_t row_id = db_.LastInsertRowId();

  auto insert_metric =
      db_.Prepare("INSERT INTO metrics (cell_id, name, value, unit) VALUES (?1, ?2, ?3, ?4)");
  if (!insert_metric.ok()) return insert_metric.error();
  insert_metric->Bind(1, row_id);
  for (const MetricRecord& m : cell.metrics) {
    insert_metric->Bind(2, std::string_view(m.name)).Bind(3, m.value).Bind(4, std::string_view(m.unit));
    DLBENCH_RETURN_IF_ERROR(insert_metric->Run());
  }

  // One prepared insert reused for every step (a cell may carry a million): only the values
  // change between rows, so SQLite parses and plans the statement once.
  auto insert_step = db_.Prepare(
      "INSERT INTO steps (cell_id, idx, rank, start_ns, end_ns, samples, data_wait_ns, compute_ns, comm_ns) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  if (!insert_step.ok()) return insert_step.error();
  insert_step->Bind(1, row_id);
  auto phase = [](const record::StepRecord& r, std::uint32_t bit, std::int64_t value) {
    return (r.present & bit) != 0 ? std::optional<std::int64_t>(value) : std::nullopt;
  };
  for (std::size_t i = 0; i < cell.steps.size(); ++i) {
    const record::StepRecord& r = cell.steps[i].record;
    insert_step->Bind(2, static_cast<std::int64_t>(i))
        .Bind(3, cell.steps[i].rank)
        .Bind(4, r.start_ns)
        .Bind(5, r.end_ns)
        .Bind(6, r.samples)
        .Bind(7, phase(r, record::kHasDataWait, r.data_wait_ns))
        .Bind(8, phase(r, record::kHasCompute, r.compute_ns))
        .Bind(9, phase(r, record::kHasComm, r.comm_ns));
    DLBENCH_RETURN_IF_ERROR(insert_step->Run());
  }

  auto insert_point =
      db_.Prepare("INSERT INTO series (cell_id, t_ns, series, value) VALUES (?1, ?2, ?3, ?4)");
  if (!insert_point.ok()) return insert_point.error();
  insert_point->Bind(1, row_id);
  for (const SeriesPoint& p : cell.series) {
    insert_point->Bind(2, p.t_ns).Bind(3, std::string_view(p.series)).Bind(4, p.value);
    DLBENCH_RETURN_IF_ERROR(insert_point->Run());
  }
  return tx->Commit();
}

Status SqliteStore::SetRunStatus(std::int64_t run_id, record::RunStatus status,
                                 std::optional<std::int64_t> finished_wall_ns) {
  auto stmt = db_.Prepare("UPDATE runs SET status = ?1, finished_wall_ns = ?2 WHERE id = ?3");
  if (!stmt.ok()) return stmt.error();
  stmt->Bind(1, record::Name(status)).Bind(2, finished_wall_ns).Bind(3, run_id);
  DLBENCH_RETURN_IF_ERROR(stmt->Run());
  if (db_.Changes() == 0) {
    return MakeError(ErrorKind::kNotFound, "no run with id " + std::to_string(run_id) + " in " + Describe());
  }
  return Status::Ok();
}

Status SqliteStore::SetTag(std::int64_t run_id, const std::string& tag) {
  DLBENCH_RETURN_IF_ERROR(codec::ValidateTagName(tag));
  auto tx = Transaction::Begin(db_, Transaction::Mode::kImmediate);
  if (!tx.ok()) return tx.error();
  auto exists = RunExists(run_id);
  if (!exists.ok()) return exists.error();
  if (!*exists) {
    return MakeError(ErrorKind::kNotFound,
                     "cannot tag run " + std::to_string(run_id) + ": no such run in " + Describe());
  }
  DLBENCH_RETURN_IF_ERROR(StoreTag(run_id, tag));
  return tx->Commit();
}

}  // namespace dlbench::store
