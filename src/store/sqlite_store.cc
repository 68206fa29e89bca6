#include "store/sqlite_store.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <utility>

#include "common/log.h"
#include "store/store_codec.h"

namespace dlbench::store {
namespace {

using sqlite::Database;
using sqlite::Statement;
using sqlite::Transaction;

// The column lists are constants shared by every query that reads a whole row, so a row reader
// and its SELECT cannot disagree about positions.
constexpr const char* kRunSelect =
    "SELECT r.id, r.name, r.matrix_path, r.matrix_text, r.started_wall_ns, r.finished_wall_ns, "
    "r.status, e.hash, e.fingerprint, r.tool_version, r.git_commit, r.total_cells, r.selection, r.uuid, "
    "r.sweep, r.sweep_cells FROM runs r JOIN environments e ON e.id = r.environment_id ";

constexpr const char* kCellSelect =
    "SELECT id, run_id, idx, cell_id, key, label, params, effective, hello, repetition, seed, outcome, "
    "message, verdict, verdict_reasons, warmup_steps, warmup_rule, stop_reason, stdout_path, stderr_path, "
    "started_wall_ns, finished_wall_ns, extras, measured_steps FROM cells ";

// A stored vocabulary word (outcome, verdict, run status) that this build does not know: only a
// foreign or newer writer could have put it there.
Error UnknownStoredName(const char* what, const std::string& text, const std::string& where) {
  return MakeError(ErrorKind::kStore, "the stored " + std::string(what) + where + " is '" + text +
                                          "', which this dlbench does not know");
}

Result<std::string> DumpJson(const nlohmann::json& value, const std::string& what) {
  try {
    return value.dump();
  } catch (const nlohmann::json::exception& e) {
    // dump() throws only for strings that are not valid UTF-8.
    return MakeError(ErrorKind::kInvalidInput, "cannot store " + what + " as JSON text: " + e.what());
  }
}

Result<nlohmann::json> ParseJson(const std::string& text, const std::string& what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return MakeError(ErrorKind::kStore, "the stored " + what + " is not valid JSON: " + e.what());
  }
}

Result<std::uint64_t> ParseSeed(const std::string& text, std::int64_t cell_row_id) {
  std::uint64_t seed = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seed);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return MakeError(ErrorKind::kStore, "cells.seed of cell row " + std::to_string(cell_row_id) + " is '" +
                                            text + "', not a decimal unsigned 64-bit integer");
  }
  return seed;
}

Result<RunRecord> ReadRunRow(const Statement& stmt) {
  RunRecord run;
  run.id = stmt.Int64(0);
  run.name = stmt.Text(1);
  run.matrix_path = stmt.Text(2);
  run.matrix_text = stmt.Text(3);
  run.started_wall_ns = stmt.Int64(4);
  run.finished_wall_ns = stmt.OptionalInt64(5);
  const std::string status = stmt.Text(6);
  auto parsed_status = record::ParseRunStatus(status);
  if (!parsed_status) return UnknownStoredName("status", status, " of run " + std::to_string(run.id));
  run.status = *parsed_status;
  run.environment_hash = stmt.Text(7);
  auto fingerprint = ParseJson(stmt.Text(8), "environment fingerprint of run " + std::to_string(run.id));
  if (!fingerprint.ok()) return fingerprint.error();
  run.environment = std::move(*fingerprint);
  run.tool_version = stmt.Text(9);
  run.git_commit = stmt.Text(10);
  run.total_cells = static_cast<int>(stmt.Int64(11));
  auto selection_json = ParseJson(stmt.Text(12), "selection of run " + std::to_string(run.id));
  if (!selection_json.ok()) return selection_json.error();
  auto selection = record::RunSelectionFromJson(*selection_json);
  if (!selection.ok()) {
    return MakeError(ErrorKind::kStore, "the stored selection of run " + std::to_string(run.id) + ": " +
                                            selection.error().message);
  }
  run.selection = std::move(*selection);
  run.uuid = stmt.Text(13);
  if (!stmt.IsNull(14)) run.sweep = stmt.Text(14);
  run.sweep_cells = static_cast<int>(stmt.OptionalInt64(15).value_or(0));
  return run;
}

Result<CellRecord> ReadCellRow(const Statement& stmt) {
  CellRecord cell;
  cell.id = stmt.Int64(0);
  cell.run_id = stmt.Int64(1);
  cell.index = static_cast<int>(stmt.Int64(2));
  cell.cell_id = stmt.Text(3);
  cell.key = stmt.Text(4);
  cell.label = stmt.Text(5);
  const std::string where = " of cell '" + cell.cell_id + "' in run " + std::to_string(cell.run_id);
  struct JsonColumn {
    int column;
    const char* name;
    nlohmann::json* target;
  };
  const JsonColumn json_columns[] = {{6, "params", &cell.params},
                                     {7, "effective", &cell.effective},
                                     {8, "hello", &cell.hello},
                                     {14, "verdict_reasons", &cell.verdict_reasons},
                                     {22, "extras", &cell.extras}};
  for (const JsonColumn& c : json_columns) {
    auto value = ParseJson(stmt.Text(c.column), std::string(c.name) + where);
    if (!value.ok()) return value.error();
    *c.target = std::move(*value);
  }
  cell.repetition = static_cast<int>(stmt.Int64(9));
  auto seed = ParseSeed(stmt.Text(10), cell.id);
  if (!seed.ok()) return seed.error();
  cell.seed = *seed;
  const std::string outcome = stmt.Text(11);
  auto parsed_outcome = record::ParseOutcome(outcome);
  if (!parsed_outcome) return UnknownStoredName("outcome", outcome, where);
  cell.outcome = *parsed_outcome;
  cell.message = stmt.Text(12);
  const std::string verdict = stmt.Text(13);
  auto parsed_verdict = record::ParseVerdict(verdict);
  if (!parsed_verdict) return UnknownStoredName("verdict", verdict, where);
  cell.verdict = *parsed_verdict;
  // The measured window: warmup_steps is its first step, measured_steps its length (schema 3);
  // both are NULL for a cell that produced no step.
  const std::optional<std::int64_t> first_step = stmt.OptionalInt64(15);
  if (first_step) cell.window = record::MeasuredWindow{*first_step, stmt.OptionalInt64(23).value_or(0)};
  cell.warmup_rule = stmt.Text(16);
  cell.stop_reason = stmt.Text(17);
  cell.stdout_path = stmt.Text(18);
  cell.stderr_path = stmt.Text(19);
  cell.started_wall_ns = stmt.Int64(20);
  cell.finished_wall_ns = stmt.Int64(21);
  return cell;
}

// Runs `stmt` (already bound) and hands each row to `on_row`, stopping at the first error.
template <class OnRow>
Status ForEachRow(Statement& stmt, OnRow&& on_row) {
  for (;;) {
    auto row = stmt.Step();
    if (!row.ok()) return row.error();
    if (!*row) return Status::Ok();
    DLBENCH_RETURN_IF_ERROR(on_row(stmt));
  }
}

}  // namespace

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
  auto fingerprint = DumpJson(run.environment, "the environment fingerprint");
  if (!fingerprint.ok()) return fingerprint.error();
  auto selection = DumpJson(record::RunSelectionToJson(run.selection), "the run's selection");
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
  {
    std::set<std::string> names;
    for (const MetricRecord& m : cell.metrics) {
      if (!names.insert(m.name).second) {
        return MakeError(ErrorKind::kInvalidInput, "metric '" + m.name + "' appears twice in " + what);
      }
    }
  }
  // Serialise before taking the write lock: the transaction should hold nothing but writes.
  std::string json_text[5];
  const std::pair<const nlohmann::json*, const char*> json_fields[5] = {
      {&cell.params, "params"},
      {&cell.effective, "effective"},
      {&cell.hello, "hello"},
      {&cell.verdict_reasons, "verdict_reasons"},
      {&cell.extras, "extras"}};
  for (int i = 0; i < 5; ++i) {
    auto text = DumpJson(*json_fields[i].first, std::string(json_fields[i].second) + " of " + what);
    if (!text.ok()) return text.error();
    json_text[i] = std::move(*text);
  }
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
      .Bind(6, std::string_view(json_text[0]))
      .Bind(7, std::string_view(json_text[1]))
      .Bind(8, std::string_view(json_text[2]))
      .Bind(9, cell.repetition)
      .Bind(10, std::string_view(seed_text))
      .Bind(11, record::Name(cell.outcome))
      .Bind(12, std::string_view(cell.message))
      .Bind(13, record::Name(cell.verdict))
      .Bind(14, std::string_view(json_text[3]))
      .Bind(15, cell.warmup_steps())
      .Bind(16, std::string_view(cell.warmup_rule))
      .Bind(17, std::string_view(cell.stop_reason))
      .Bind(18, std::string_view(cell.stdout_path))
      .Bind(19, std::string_view(cell.stderr_path))
      .Bind(20, cell.started_wall_ns)
      .Bind(21, cell.finished_wall_ns)
      .Bind(22, std::string_view(json_text[4]))
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

Status SqliteStore::LoadTags(RunRecord& run) {
  auto stmt = db_.Prepare("SELECT name FROM tags WHERE run_id = ?1 ORDER BY name");
  if (!stmt.ok()) return stmt.error();
  stmt->Bind(1, run.id);
  run.tags.clear();
  return ForEachRow(*stmt, [&](const Statement& row) {
    run.tags.push_back(row.Text(0));
    return Status::Ok();
  });
}

Result<std::vector<RunRecord>> SqliteStore::QueryRuns(const char* where_sql,
                                                      std::optional<std::int64_t> run_id) {
  auto stmt = db_.Prepare(std::string(kRunSelect) + where_sql);
  if (!stmt.ok()) return stmt.error();
  if (run_id) stmt->Bind(1, *run_id);
  std::vector<RunRecord> runs;
  DLBENCH_RETURN_IF_ERROR(ForEachRow(*stmt, [&](const Statement& row) -> Status {
    auto run = ReadRunRow(row);
    if (!run.ok()) return run.error();
    runs.push_back(std::move(*run));
    return Status::Ok();
  }));
  for (RunRecord& run : runs) DLBENCH_RETURN_IF_ERROR(LoadTags(run));
  return runs;
}

Result<std::vector<RunRecord>> SqliteStore::ListRuns() {
  // A read transaction makes the runs and their tags one snapshot while another process writes.
  auto tx = Transaction::Begin(db_, Transaction::Mode::kDeferred);
  if (!tx.ok()) return tx.error();
  auto runs = QueryRuns("ORDER BY r.id DESC", std::nullopt);
  if (!runs.ok()) return runs.error();
  DLBENCH_RETURN_IF_ERROR(tx->Commit());
  return runs;
}

Result<RunRecord> SqliteStore::GetRun(std::int64_t run_id) {
  auto tx = Transaction::Begin(db_, Transaction::Mode::kDeferred);
  if (!tx.ok()) return tx.error();
  auto runs = QueryRuns("WHERE r.id = ?1", run_id);
  if (!runs.ok()) return runs.error();
  DLBENCH_RETURN_IF_ERROR(tx->Commit());
  if (runs->empty()) {
    return MakeError(ErrorKind::kNotFound, "no run with id " + std::to_string(run_id) + " in " + Describe());
  }
  return std::move(runs->front());
}

Status SqliteStore::LoadChildren(CellRecord& cell, const CellQuery& query) {
  auto metrics = db_.Prepare("SELECT name, value, unit FROM metrics WHERE cell_id = ?1 ORDER BY id");
  if (!metrics.ok()) return metrics.error();
  metrics->Bind(1, cell.id);
  DLBENCH_RETURN_IF_ERROR(ForEachRow(*metrics, [&](const Statement& row) {
    cell.metrics.push_back(MetricRecord{row.Text(0), row.DoubleOrNan(1), row.Text(2)});
    return Status::Ok();
  }));
  if (query.with_steps) {
    auto steps = db_.Prepare(
        "SELECT rank, start_ns, end_ns, samples, data_wait_ns, compute_ns, comm_ns "
        "FROM steps WHERE cell_id = ?1 ORDER BY idx");
    if (!steps.ok()) return steps.error();
    steps->Bind(1, cell.id);
    DLBENCH_RETURN_IF_ERROR(ForEachRow(*steps, [&](const Statement& row) {
      StepRow step;
      step.rank = static_cast<std::uint32_t>(row.Int64(0));
      step.record.start_ns = row.Int64(1);
      step.record.end_ns = row.Int64(2);
      step.record.samples = static_cast<std::uint32_t>(row.Int64(3));
      const std::pair<std::int64_t*, std::uint32_t> phases[] = {
          {&step.record.data_wait_ns, record::kHasDataWait},
          {&step.record.compute_ns, record::kHasCompute},
          {&step.record.comm_ns, record::kHasComm}};
      for (int i = 0; i < 3; ++i) {
        if (row.IsNull(4 + i)) continue;
        *phases[i].first = row.Int64(4 + i);
        step.record.present |= phases[i].second;
      }
      cell.steps.push_back(step);
      return Status::Ok();
    }));
  }
  if (query.with_series) {
    auto series = db_.Prepare("SELECT t_ns, series, value FROM series WHERE cell_id = ?1 ORDER BY id");
    if (!series.ok()) return series.error();
    series->Bind(1, cell.id);
    DLBENCH_RETURN_IF_ERROR(ForEachRow(*series, [&](const Statement& row) {
      cell.series.push_back(SeriesPoint{row.Int64(0), row.Text(1), row.DoubleOrNan(2)});
      return Status::Ok();
    }));
  }
  return Status::Ok();
}

Result<std::vector<CellRecord>> SqliteStore::GetCells(std::int64_t run_id, const CellQuery& query) {
  auto tx = Transaction::Begin(db_, Transaction::Mode::kDeferred);
  if (!tx.ok()) return tx.error();
  auto exists = RunExists(run_id);
  if (!exists.ok()) return exists.error();
  if (!*exists) {
    return MakeError(ErrorKind::kNotFound, "no run with id " + std::to_string(run_id) + " in " + Describe());
  }
  auto stmt = query.index
                  ? db_.Prepare(std::string(kCellSelect) + "WHERE run_id = ?1 AND idx = ?2 ORDER BY idx, id")
                  : db_.Prepare(std::string(kCellSelect) + "WHERE run_id = ?1 ORDER BY idx, id");
  if (!stmt.ok()) return stmt.error();
  stmt->Bind(1, run_id);
  if (query.index) stmt->Bind(2, *query.index);
  std::vector<CellRecord> cells;
  DLBENCH_RETURN_IF_ERROR(ForEachRow(*stmt, [&](const Statement& row) -> Status {
    auto cell = ReadCellRow(row);
    if (!cell.ok()) return cell.error();
    cells.push_back(std::move(*cell));
    return Status::Ok();
  }));
  for (CellRecord& cell : cells) DLBENCH_RETURN_IF_ERROR(LoadChildren(cell, query));
  DLBENCH_RETURN_IF_ERROR(tx->Commit());
  return cells;
}

Result<std::set<std::string>> SqliteStore::FinishedCellIds(std::int64_t run_id) {
  auto stmt = db_.Prepare("SELECT cell_id FROM cells WHERE run_id = ?1 AND outcome <> ?2");
  if (!stmt.ok()) return stmt.error();
  stmt->Bind(1, run_id).Bind(2, record::Name(record::Outcome::kInterrupted));
  std::set<std::string> ids;
  DLBENCH_RETURN_IF_ERROR(ForEachRow(*stmt, [&](const Statement& row) {
    ids.insert(row.Text(0));
    return Status::Ok();
  }));
  return ids;
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

Result<std::int64_t> SqliteStore::ResolveRunName(const std::string& ref) {
  if (ref.empty())
    return MakeError(ErrorKind::kInvalidInput, "an empty run reference (expected an id, a tag or 'latest')");
  if (ref == "latest") {
    auto stmt = db_.Prepare("SELECT max(id) FROM runs");
    if (!stmt.ok()) return stmt.error();
    auto row = stmt->Step();
    if (!row.ok()) return row.error();
    if (!*row || stmt->IsNull(0))
      return MakeError(ErrorKind::kNotFound, "no runs are stored yet in " + Describe());
    return stmt->Int64(0);
  }
  if (codec::AllDigits(ref)) {
    std::int64_t id = 0;
    auto [end, ec] = std::from_chars(ref.data(), ref.data() + ref.size(), id);
    auto exists = ec == std::errc() ? RunExists(id) : Result<bool>(false);
    if (!exists.ok()) return exists.error();
    if (!*exists) return MakeError(ErrorKind::kNotFound, "no run with id " + ref + " in " + Describe());
    return id;
  }
  auto stmt = db_.Prepare("SELECT run_id FROM tags WHERE name = ?1");
  if (!stmt.ok()) return stmt.error();
  stmt->Bind(1, std::string_view(ref));
  auto row = stmt->Step();
  if (!row.ok()) return row.error();
  if (*row) return stmt->Int64(0);

  auto names = db_.Prepare("SELECT name FROM tags ORDER BY name");
  if (!names.ok()) return names.error();
  std::string known;
  DLBENCH_RETURN_IF_ERROR(ForEachRow(*names, [&](const Statement& r) {
    known += (known.empty() ? "" : ", ") + r.Text(0);
    return Status::Ok();
  }));
  return MakeError(
      ErrorKind::kNotFound,
      "no run is tagged '" + ref + "' in " + Describe() +
          (known.empty() ? "; there are no tags yet (use a run id or 'latest')" : "; known tags: " + known));
}

Result<std::vector<std::pair<RunRecord, CellRecord>>> SqliteStore::CellHistory(const std::string& key) {
  auto tx = Transaction::Begin(db_, Transaction::Mode::kDeferred);
  if (!tx.ok()) return tx.error();
  // Run ids grow with creation, so ordering by run_id is "oldest run first" without trusting the
  // wall clocks of the machines that wrote the runs.
  auto stmt = db_.Prepare(std::string(kCellSelect) + "WHERE key = ?1 ORDER BY run_id, idx, id");
  if (!stmt.ok()) return stmt.error();
  stmt->Bind(1, std::string_view(key));
  std::vector<CellRecord> cells;
  DLBENCH_RETURN_IF_ERROR(ForEachRow(*stmt, [&](const Statement& row) -> Status {
    auto cell = ReadCellRow(row);
    if (!cell.ok()) return cell.error();
    cells.push_back(std::move(*cell));
    return Status::Ok();
  }));
  std::map<std::int64_t, RunRecord> runs;
  std::vector<std::pair<RunRecord, CellRecord>> history;
  history.reserve(cells.size());
  for (CellRecord& cell : cells) {
    DLBENCH_RETURN_IF_ERROR(LoadChildren(cell, CellQuery{}));
    auto it = runs.find(cell.run_id);
    if (it == runs.end()) {
      auto run = QueryRuns("WHERE r.id = ?1", cell.run_id);
      if (!run.ok()) return run.error();
      DLBENCH_CHECK(run->size() == 1, "a cell's run exists (foreign key)");
      it = runs.emplace(cell.run_id, std::move(run->front())).first;
    }
    history.emplace_back(it->second, std::move(cell));
  }
  DLBENCH_RETURN_IF_ERROR(tx->Commit());
  return history;
}

}  // namespace dlbench::store
