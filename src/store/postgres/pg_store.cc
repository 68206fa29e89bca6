#include "store/postgres/pg_store.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <thread>

#include "common/log.h"
#include "store/postgres/pg_store_retrying.h"
#include "store/store_codec.h"

namespace dlbench::store {
namespace {

using pg::Connection;
using pg::Params;
using pg::Rows;
using pg::Transaction;

// As in the SQLite store: the column lists are shared by every query that reads a whole row.
constexpr const char* kRunSelect =
    "SELECT r.id, r.name, r.matrix_path, r.matrix_text, r.started_wall_ns, r.finished_wall_ns, "
    "r.status, e.hash, e.fingerprint, r.tool_version, r.git_commit, r.total_cells, r.selection, r.uuid, "
    "r.sweep, r.sweep_cells FROM runs r JOIN environments e ON e.id = r.environment_id ";

constexpr const char* kCellSelect =
    "SELECT id, run_id, idx, cell_id, key, label, params, effective, hello, repetition, seed, outcome, "
    "message, verdict, verdict_reasons, warmup_steps, warmup_rule, stop_reason, stdout_path, stderr_path, "
    "started_wall_ns, finished_wall_ns, extras, measured_steps FROM cells ";

// Rows fetched per round trip when reading a cell's steps or series through a cursor: the memory
// of a million-step cell is its records, not a million-row result held at once.
constexpr int kFetchRows = 20'000;

// {1,2,3}: an array parameter ($1::bigint[]) of row ids the store read itself.
std::string IdArray(const std::vector<std::int64_t>& ids) {
  std::string text = "{";
  for (std::size_t i = 0; i < ids.size(); ++i) text += (i ? "," : "") + std::to_string(ids[i]);
  return text + "}";
}

Result<RunRecord> ReadRunRow(const Rows& rows, int i) {
  RunRecord run;
  run.id = rows.Int64(i, 0);
  run.name = rows.Text(i, 1);
  run.matrix_path = rows.Text(i, 2);
  run.matrix_text = rows.Text(i, 3);
  run.started_wall_ns = rows.Int64(i, 4);
  run.finished_wall_ns = rows.OptionalInt64(i, 5);
  const std::string status = rows.Text(i, 6);
  auto parsed_status = record::ParseRunStatus(status);
  if (!parsed_status) return codec::UnknownStoredName("status", status, " of run " + std::to_string(run.id));
  run.status = *parsed_status;
  run.environment_hash = rows.Text(i, 7);
  auto fingerprint =
      codec::ParseJson(rows.Text(i, 8), "environment fingerprint of run " + std::to_string(run.id));
  if (!fingerprint.ok()) return fingerprint.error();
  run.environment = std::move(*fingerprint);
  run.tool_version = rows.Text(i, 9);
  run.git_commit = rows.Text(i, 10);
  run.total_cells = static_cast<int>(rows.Int64(i, 11));
  auto selection_json = codec::ParseJson(rows.Text(i, 12), "selection of run " + std::to_string(run.id));
  if (!selection_json.ok()) return selection_json.error();
  auto selection = record::RunSelectionFromJson(*selection_json);
  if (!selection.ok()) {
    return MakeError(ErrorKind::kStore, "the stored selection of run " + std::to_string(run.id) + ": " +
                                            selection.error().message);
  }
  run.selection = std::move(*selection);
  run.uuid = rows.Text(i, 13);
  if (!rows.IsNull(i, 14)) run.sweep = rows.Text(i, 14);
  if (!rows.IsNull(i, 15)) run.sweep_cells = static_cast<int>(rows.Int64(i, 15));
  return run;
}

Result<CellRecord> ReadCellRow(const Rows& rows, int i) {
  CellRecord cell;
  cell.id = rows.Int64(i, 0);
  cell.run_id = rows.Int64(i, 1);
  cell.index = static_cast<int>(rows.Int64(i, 2));
  cell.cell_id = rows.Text(i, 3);
  cell.key = rows.Text(i, 4);
  cell.label = rows.Text(i, 5);
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
    auto value = codec::ParseJson(rows.Text(i, c.column), std::string(c.name) + where);
    if (!value.ok()) return value.error();
    *c.target = std::move(*value);
  }
  cell.repetition = static_cast<int>(rows.Int64(i, 9));
  auto seed = codec::ParseSeed(rows.Text(i, 10), cell.id);
  if (!seed.ok()) return seed.error();
  cell.seed = *seed;
  const std::string outcome = rows.Text(i, 11);
  auto parsed_outcome = record::ParseOutcome(outcome);
  if (!parsed_outcome) return codec::UnknownStoredName("outcome", outcome, where);
  cell.outcome = *parsed_outcome;
  cell.message = rows.Text(i, 12);
  const std::string verdict = rows.Text(i, 13);
  auto parsed_verdict = record::ParseVerdict(verdict);
  if (!parsed_verdict) return codec::UnknownStoredName("verdict", verdict, where);
  cell.verdict = *parsed_verdict;
  const std::optional<std::int64_t> first_step = rows.OptionalInt64(i, 15);
  if (first_step) cell.window = record::MeasuredWindow{*first_step, rows.OptionalInt64(i, 23).value_or(0)};
  cell.warmup_rule = rows.Text(i, 16);
  cell.stop_reason = rows.Text(i, 17);
  cell.stdout_path = rows.Text(i, 18);
  cell.stderr_path = rows.Text(i, 19);
  cell.started_wall_ns = rows.Int64(i, 20);
  cell.finished_wall_ns = rows.Int64(i, 21);
  return cell;
}

Result<std::vector<CellRecord>> ReadCells(const Rows& rows) {
  std::vector<CellRecord> cells;
  cells.reserve(static_cast<std::size_t>(rows.size()));
  for (int i = 0; i < rows.size(); ++i) {
    auto cell = ReadCellRow(rows, i);
    if (!cell.ok()) return cell.error();
    cells.push_back(std::move(*cell));
  }
  return cells;
}

// COPY's text format: fields separated by tabs, \N for NULL, one row per line.
void AppendInt(std::string& out, std::int64_t value) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, end);
}

void AppendOptionalInt(std::string& out, bool present, std::int64_t value) {
  if (present) {
    AppendInt(out, value);
  } else {
    out += "\\N";
  }
}

void AppendDouble(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "\\N";
  } else if (std::isinf(value)) {
    out += value > 0 ? "Infinity" : "-Infinity";
  } else {
    // Not fmt::format_to(std::back_inserter(out), ...): clang 14 mangles the fmt 9 function that
    // calls differently from the gcc-built libfmt, so the sanitizer build (clang) could not link.
    out += fmt::format("{}", value);
  }
}

}  // namespace

std::chrono::milliseconds RetryBackoff(int attempt) {
  const int capped = std::clamp(attempt, 0, 6);
  return std::min(std::chrono::milliseconds(100 << capped), std::chrono::milliseconds(5000));
}

Result<std::unique_ptr<PostgresStore>> PostgresStore::Open(const std::string& url, const Options& options) {
  auto connection = Connection::Open(url);
  if (!connection.ok()) return connection.error();
  if (connection->server_version() < 110000) {
    return MakeError(
        ErrorKind::kUnsupported,
        fmt::format("PostgreSQL {} is version {}.{}; dlbench needs 11 or newer", connection->display(),
                    connection->server_version() / 10000, connection->server_version() % 10000));
  }
  DLBENCH_RETURN_IF_ERROR(pg::Migrate(*connection, options.migrations, options.create));
  return std::unique_ptr<PostgresStore>(new PostgresStore(url, std::move(*connection), options));
}

std::string PostgresStore::Describe() const { return display_; }

namespace {

// The first key of every run lock ("dlbr"); the second is the run id's low 32 bits. The two-key
// form never meets the schema's migration lock (one bigint key: a different objsubid).
constexpr std::int64_t kRunLockClass = 0x646C6272;
constexpr std::string_view kLockApplicationPrefix = "dlbench-lock ";
constexpr std::size_t kApplicationNameMax = 63;  // PostgreSQL's NAMEDATALEN - 1

std::int64_t RunLockKey(std::int64_t run_id) {
  return static_cast<std::int32_t>(
      static_cast<std::uint32_t>(static_cast<std::uint64_t>(run_id) & 0xFFFFFFFFu));
}

std::string LockApplicationName(const RunLockOwner& owner) {
  std::string name = std::string(kLockApplicationPrefix) + std::to_string(owner.pid) + " " +
                     std::to_string(owner.since_wall_ns) + " ";
  for (char c : owner.host) {
    if (name.size() >= kApplicationNameMax) break;
    // application_name keeps printable ASCII only; anything else would read back as '?'.
    name.push_back(c > ' ' && c < 127 ? c : '?');
  }
  return name;
}

RunLockOwner ParseLockApplicationName(const std::string& name) {
  RunLockOwner owner;
  if (name.compare(0, kLockApplicationPrefix.size(), kLockApplicationPrefix) != 0) return owner;
  const char* p = name.data() + kLockApplicationPrefix.size();
  const char* end = name.data() + name.size();
  auto pid = std::from_chars(p, end, owner.pid);
  if (pid.ec != std::errc() || pid.ptr == end || *pid.ptr != ' ') return RunLockOwner{};
  auto since = std::from_chars(pid.ptr + 1, end, owner.since_wall_ns);
  if (since.ec != std::errc() || since.ptr == end || *since.ptr != ' ') return RunLockOwner{};
  owner.host.assign(since.ptr + 1, end);
  return owner;
}

}  // namespace

Result<std::optional<RunLockOwner>> PostgresStore::TryLockRun(std::int64_t run_id,
                                                              const RunLockOwner& owner) {
  if (locked_runs_.count(run_id) != 0 && lock_connection_ && !lock_connection_->broken()) {
    return std::optional<RunLockOwner>();
  }
  if (!lock_connection_ || lock_connection_->broken()) {
    // A broken lock session has lost every lock it held.
    locked_runs_.clear();
    lock_connection_.reset();
    auto opened = Connection::Open(url_);
    if (!opened.ok()) return opened.error();
    DLBENCH_RETURN_IF_ERROR(opened->Execute("SELECT set_config('application_name', $1, false)",
                                            Params().Add(LockApplicationName(owner))));
    lock_connection_.emplace(std::move(*opened));
  }
  const std::int64_t key = RunLockKey(run_id);
  auto taken = lock_connection_->Query("SELECT pg_try_advisory_lock($1::integer, $2::integer)",
                                       Params().Add(kRunLockClass).Add(key));
  if (!taken.ok()) return taken.error();
  if (taken->Text(0, 0) == "t") {
    locked_runs_.insert(run_id);
    return std::optional<RunLockOwner>();
  }
  auto holder = lock_connection_->Query(
      "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
      "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::bigint::oid AND l.objid = "
      "($2::bigint & 4294967295)::oid AND l.objsubid = 2 AND l.database = "
      "(SELECT oid FROM pg_database WHERE datname = current_database()) LIMIT 1",
      Params().Add(kRunLockClass).Add(key));
  if (!holder.ok()) return holder.error();
  return std::optional<RunLockOwner>(holder->size() > 0 ? ParseLockApplicationName(holder->Text(0, 0))
                                                        : RunLockOwner{});
}

Status PostgresStore::UnlockRun(std::int64_t run_id) {
  if (locked_runs_.erase(run_id) == 0 || !lock_connection_) return Status::Ok();
  if (lock_connection_->broken()) return Status::Ok();  // the server dropped it with the session
  auto released = lock_connection_->Query("SELECT pg_advisory_unlock($1::integer, $2::integer)",
                                          Params().Add(kRunLockClass).Add(RunLockKey(run_id)));
  if (!released.ok()) return released.error();
  if (locked_runs_.empty()) lock_connection_.reset();
  return Status::Ok();
}

Result<bool> PostgresStore::RunExists(std::int64_t run_id) {
  auto rows = connection_.Query("SELECT 1 FROM runs WHERE id = $1", Params().Add(run_id));
  if (!rows.ok()) return rows.error();
  return rows->size() > 0;
}

Result<std::int64_t> PostgresStore::BeginRun(const RunRecord& run) {
  for (const std::string& tag : run.tags) DLBENCH_RETURN_IF_ERROR(codec::ValidateTagName(tag));
  auto fingerprint = codec::DumpJson(run.environment, "the environment fingerprint");
  if (!fingerprint.ok()) return fingerprint.error();
  auto selection = codec::DumpJson(record::RunSelectionToJson(run.selection), "the run's selection");
  if (!selection.ok()) return selection.error();
  if (!run.uuid.empty() && !codec::IsRunUuid(run.uuid)) {
    return MakeError(ErrorKind::kInvalidInput, "run uuid '" + run.uuid + "' is not a lower-case UUID");
  }
  // Made once, outside the retries: a BeginRun whose COMMIT was sent when the connection broke is
  // found by its uuid on the next attempt instead of being stored twice.
  const std::string uuid = run.uuid.empty() ? codec::NewRunUuid() : run.uuid;

  return Retrying([&]() -> Result<std::int64_t> {
    auto tx = Transaction::Begin(connection_, Transaction::Mode::kReadWrite);
    if (!tx.ok()) return tx.error();
    auto stored = connection_.Query("SELECT id FROM runs WHERE uuid = $1", Params().Add(uuid));
    if (!stored.ok()) return stored.error();
    if (stored->size() > 0) {
      DLBENCH_RETURN_IF_ERROR(tx->Commit());
      return stored->Int64(0, 0);
    }
    // Deduplicated on the whole fingerprint, as in the SQLite store (R13).
    DLBENCH_RETURN_IF_ERROR(
        connection_.Execute("INSERT INTO environments (hash, fingerprint) VALUES ($1, $2) "
                            "ON CONFLICT (hash, md5(fingerprint)) DO NOTHING",
                            Params().Add(run.environment_hash).Add(*fingerprint)));
    auto env = connection_.Query(
        "SELECT id FROM environments WHERE hash = $1 AND md5(fingerprint) = md5($2) AND fingerprint = $2",
        Params().Add(run.environment_hash).Add(*fingerprint));
    if (!env.ok()) return env.error();
    if (env->size() != 1) {
      return MakeError(ErrorKind::kStore, "the environment row of run '" + run.name +
                                              "' was not found after "
                                              "storing it in " +
                                              Describe());
    }
    Params params;
    params.Add(run.name)
        .Add(run.matrix_path)
        .Add(run.matrix_text)
        .Add(run.started_wall_ns)
        .Add(run.finished_wall_ns)
        .Add(record::Name(run.status))
        .Add(env->Int64(0, 0))
        .Add(run.tool_version)
        .Add(run.git_commit)
        .Add(run.total_cells)
        .Add(*selection)
        .Add(uuid);
    if (run.sweep.empty()) {
      params.Add(std::nullopt).Add(std::nullopt);
    } else {
      params.Add(run.sweep).Add(run.sweep_cells);
    }
    auto inserted = connection_.Query(
        "INSERT INTO runs (name, matrix_path, matrix_text, started_wall_ns, finished_wall_ns, status, "
        "environment_id, tool_version, git_commit, total_cells, selection, uuid, sweep, sweep_cells) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id",
        params);
    if (!inserted.ok()) return inserted.error();
    const std::int64_t run_id = inserted->Int64(0, 0);
    for (const std::string& tag : run.tags) {
      DLBENCH_RETURN_IF_ERROR(
          connection_.Execute("INSERT INTO tags (name, run_id) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE "
                              "SET run_id = excluded.run_id",
                              Params().Add(tag).Add(run_id)));
    }
    DLBENCH_RETURN_IF_ERROR(tx->Commit());
    return run_id;
  });
}

Status PostgresStore::PutCell(const CellRecord& cell) {
  const std::string what = "cell '" + cell.cell_id + "' of run " + std::to_string(cell.run_id);
  DLBENCH_RETURN_IF_ERROR(codec::CheckUniqueMetricNames(cell, what));
  std::string json_text[5];
  const std::pair<const nlohmann::json*, const char*> json_fields[5] = {
      {&cell.params, "params"},
      {&cell.effective, "effective"},
      {&cell.hello, "hello"},
      {&cell.verdict_reasons, "verdict_reasons"},
      {&cell.extras, "extras"}};
  for (int i = 0; i < 5; ++i) {
    auto text = codec::DumpJson(*json_fields[i].first, std::string(json_fields[i].second) + " of " + what);
    if (!text.ok()) return text.error();
    json_text[i] = std::move(*text);
  }
  const std::string seed_text = std::to_string(cell.seed);
  return Retrying([&]() -> Status { return PutCellOnce(cell, json_text, seed_text); });
}

Status PostgresStore::PutCellOnce(const CellRecord& cell, const std::string (&json_text)[5],
                                  const std::string& seed_text) {
  auto tx = Transaction::Begin(connection_, Transaction::Mode::kReadWrite);
  if (!tx.ok()) return tx.error();
  // The run's row is locked for the transaction: the run cannot vanish under the cell, and two
  // writers of one cell_id take turns instead of colliding on UNIQUE (run_id, cell_id).
  auto found = connection_.Query(
      "SELECT c.id FROM runs r LEFT JOIN cells c ON c.run_id = r.id AND c.cell_id = $2 WHERE r.id = $1 "
      "FOR UPDATE OF r",
      Params().Add(cell.run_id).Add(cell.cell_id));
  if (!found.ok()) return found.error();
  if (found->size() == 0) {
    return MakeError(ErrorKind::kNotFound, "cannot store cell '" + cell.cell_id + "' of run " +
                                               std::to_string(cell.run_id) + ": there is no such run");
  }
  if (!found->IsNull(0, 0)) {
    // Replace, all in this transaction: the metrics first (their foreign key), then the cell,
    // whose trigger deletes its steps and series (pg_schema.cc says why they have no foreign key).
    const std::int64_t old_id = found->Int64(0, 0);
    for (const char* sql : {"DELETE FROM metrics WHERE cell_id = $1", "DELETE FROM cells WHERE id = $1"}) {
      DLBENCH_RETURN_IF_ERROR(connection_.Execute(sql, Params().Add(old_id)));
    }
  }
  auto inserted = connection_.Query(
      "INSERT INTO cells (run_id, idx, cell_id, key, label, params, effective, hello, repetition, seed, "
      "outcome, message, verdict, verdict_reasons, warmup_steps, warmup_rule, stop_reason, stdout_path, "
      "stderr_path, started_wall_ns, finished_wall_ns, extras, measured_steps) VALUES "
      "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, "
      "$23) "
      "RETURNING id",
      Params()
          .Add(cell.run_id)
          .Add(cell.index)
          .Add(cell.cell_id)
          .Add(cell.key)
          .Add(cell.label)
          .Add(json_text[0])
          .Add(json_text[1])
          .Add(json_text[2])
          .Add(cell.repetition)
          .Add(seed_text)
          .Add(record::Name(cell.outcome))
          .Add(cell.message)
          .Add(record::Name(cell.verdict))
          .Add(json_text[3])
          .Add(cell.warmup_steps())
          .Add(cell.warmup_rule)
          .Add(cell.stop_reason)
          .Add(cell.stdout_path)
          .Add(cell.stderr_path)
          .Add(cell.started_wall_ns)
          .Add(cell.finished_wall_ns)
          .Add(json_text[4])
          .Add(cell.window ? std::optional<std::int64_t>(cell.window->steps) : std::nullopt));
  if (!inserted.ok()) return inserted.error();
  const std::int64_t row_id = inserted->Int64(0, 0);

  // The children travel as COPY streams: one round trip per table however many rows (a cell may
  // carry a million steps), the rows in the order given, so ids (metrics, series) and idx (steps)
  // keep that order.
  std::string id_field;
  AppendInt(id_field, row_id);
  id_field.push_back('\t');
  std::string data;
  if (!cell.metrics.empty()) {
    for (const MetricRecord& m : cell.metrics) {
      data += id_field;
      pg::AppendCopyField(data, m.name);
      data.push_back('\t');
      AppendDouble(data, m.value);
      data.push_back('\t');
      pg::AppendCopyField(data, m.unit);
      data.push_back('\n');
    }
    DLBENCH_RETURN_IF_ERROR(connection_.CopyIn("COPY metrics (cell_id, name, value, unit) FROM STDIN", data));
  }
  if (!cell.steps.empty()) {
    data.clear();
    data.reserve(cell.steps.size() * 72);
    for (std::size_t i = 0; i < cell.steps.size(); ++i) {
      const record::StepRecord& r = cell.steps[i].record;
      data += id_field;
      AppendInt(data, static_cast<std::int64_t>(i));
      data.push_back('\t');
      AppendInt(data, cell.steps[i].rank);
      data.push_back('\t');
      AppendInt(data, r.start_ns);
      data.push_back('\t');
      AppendInt(data, r.end_ns);
      data.push_back('\t');
      AppendInt(data, r.samples);
      data.push_back('\t');
      AppendOptionalInt(data, (r.present & record::kHasDataWait) != 0, r.data_wait_ns);
      data.push_back('\t');
      AppendOptionalInt(data, (r.present & record::kHasCompute) != 0, r.compute_ns);
      data.push_back('\t');
      AppendOptionalInt(data, (r.present & record::kHasComm) != 0, r.comm_ns);
      data.push_back('\n');
    }
    DLBENCH_RETURN_IF_ERROR(
        connection_.CopyIn("COPY steps (cell_id, idx, rank, start_ns, end_ns, samples, data_wait_ns, "
                           "compute_ns, comm_ns) FROM STDIN",
                           data));
  }
  if (!cell.series.empty()) {
    data.clear();
    for (const SeriesPoint& p : cell.series) {
      data += id_field;
      AppendInt(data, p.t_ns);
      data.push_back('\t');
      pg::AppendCopyField(data, p.series);
      data.push_back('\t');
      AppendDouble(data, p.value);
      data.push_back('\n');
    }
    DLBENCH_RETURN_IF_ERROR(
        connection_.CopyIn("COPY series (cell_id, t_ns, series, value) FROM STDIN", data));
  }
  return tx->Commit();
}

Status PostgresStore::SetRunStatus(std::int64_t run_id, record::RunStatus status,
                                   std::optional<std::int64_t> finished_wall_ns) {
  auto updated = Retrying([&]() {
    return connection_.Query("UPDATE runs SET status = $1, finished_wall_ns = $2 WHERE id = $3 RETURNING id",
                             Params().Add(record::Name(status)).Add(finished_wall_ns).Add(run_id));
  });
  if (!updated.ok()) return updated.error();
  if (updated->size() == 0) {
    return MakeError(ErrorKind::kNotFound, "no run with id " + std::to_string(run_id) + " in " + Describe());
  }
  return Status::Ok();
}

Status PostgresStore::LoadTags(std::vector<RunRecord>& runs) {
  if (runs.empty()) return Status::Ok();
  std::vector<std::int64_t> ids;
  std::map<std::int64_t, std::vector<RunRecord*>> by_id;
  for (RunRecord& run : runs) {
    run.tags.clear();
    ids.push_back(run.id);
    by_id[run.id].push_back(&run);
  }
  auto rows = connection_.Query(
      "SELECT run_id, name FROM tags WHERE run_id = ANY($1::bigint[]) ORDER BY run_id, name",
      Params().Add(IdArray(ids)));
  if (!rows.ok()) return rows.error();
  for (int i = 0; i < rows->size(); ++i) {
    for (RunRecord* run : by_id[rows->Int64(i, 0)]) run->tags.push_back(rows->Text(i, 1));
  }
  return Status::Ok();
}

Result<std::vector<RunRecord>> PostgresStore::QueryRuns(const char* where_sql, const Params& params) {
  auto rows = connection_.Query(std::string(kRunSelect) + where_sql, params);
  if (!rows.ok()) return rows.error();
  std::vector<RunRecord> runs;
  for (int i = 0; i < rows->size(); ++i) {
    auto run = ReadRunRow(*rows, i);
    if (!run.ok()) return run.error();
    runs.push_back(std::move(*run));
  }
  DLBENCH_RETURN_IF_ERROR(LoadTags(runs));
  return runs;
}

Result<std::vector<RunRecord>> PostgresStore::ListRuns() {
  return Retrying([&]() -> Result<std::vector<RunRecord>> {
    // One snapshot for the runs and their tags while others write.
    auto tx = Transaction::Begin(connection_, Transaction::Mode::kReadOnlySnapshot);
    if (!tx.ok()) return tx.error();
    auto runs = QueryRuns("ORDER BY r.id DESC", Params());
    if (!runs.ok()) return runs.error();
    DLBENCH_RETURN_IF_ERROR(tx->Commit());
    return runs;
  });
}

Result<RunRecord> PostgresStore::GetRun(std::int64_t run_id) {
  auto runs = Retrying([&]() -> Result<std::vector<RunRecord>> {
    auto tx = Transaction::Begin(connection_, Transaction::Mode::kReadOnlySnapshot);
    if (!tx.ok()) return tx.error();
    auto found = QueryRuns("WHERE r.id = $1", Params().Add(run_id));
    if (!found.ok()) return found.error();
    DLBENCH_RETURN_IF_ERROR(tx->Commit());
    return found;
  });
  if (!runs.ok()) return runs.error();
  if (runs->empty()) {
    return MakeError(ErrorKind::kNotFound, "no run with id " + std::to_string(run_id) + " in " + Describe());
  }
  return std::move(runs->front());
}

Status PostgresStore::LoadMetrics(std::vector<CellRecord>& cells, const char* where_sql,
                                  const Params& params) {
  if (cells.empty()) return Status::Ok();
  std::map<std::int64_t, std::size_t> position;
  for (std::size_t i = 0; i < cells.size(); ++i) position[cells[i].id] = i;
  auto rows = connection_.Query(
      std::string(
          "SELECT m.cell_id, m.name, m.value, m.unit FROM metrics m JOIN cells c ON c.id = m.cell_id ") +
          where_sql + " ORDER BY m.cell_id, m.id",
      params);
  if (!rows.ok()) return rows.error();
  for (int i = 0; i < rows->size(); ++i) {
    auto it = position.find(rows->Int64(i, 0));
    if (it == position.end()) continue;
    cells[it->second].metrics.push_back(
        MetricRecord{rows->Text(i, 1), rows->DoubleOrNan(i, 2), rows->Text(i, 3)});
  }
  return Status::Ok();
}

Status PostgresStore::LoadSteps(CellRecord& cell) {
  DLBENCH_RETURN_IF_ERROR(connection_.Execute(
      "DECLARE dlbench_steps NO SCROLL CURSOR FOR SELECT rank, start_ns, end_ns, samples, data_wait_ns, "
      "compute_ns, comm_ns FROM steps WHERE cell_id = $1 ORDER BY idx",
      Params().Add(cell.id)));
  for (;;) {
    auto rows = connection_.Query("FETCH FORWARD " + std::to_string(kFetchRows) + " FROM dlbench_steps");
    if (!rows.ok()) return rows.error();
    for (int i = 0; i < rows->size(); ++i) {
      StepRow step;
      step.rank = static_cast<std::uint32_t>(rows->Int64(i, 0));
      step.record.start_ns = rows->Int64(i, 1);
      step.record.end_ns = rows->Int64(i, 2);
      step.record.samples = static_cast<std::uint32_t>(rows->Int64(i, 3));
      const std::pair<std::int64_t*, std::uint32_t> phases[] = {
          {&step.record.data_wait_ns, record::kHasDataWait},
          {&step.record.compute_ns, record::kHasCompute},
          {&step.record.comm_ns, record::kHasComm}};
      for (int k = 0; k < 3; ++k) {
        if (rows->IsNull(i, 4 + k)) continue;
        *phases[k].first = rows->Int64(i, 4 + k);
        step.record.present |= phases[k].second;
      }
      cell.steps.push_back(step);
    }
    if (rows->size() < kFetchRows) break;
  }
  return connection_.Execute("CLOSE dlbench_steps");
}

Status PostgresStore::LoadSeries(CellRecord& cell) {
  DLBENCH_RETURN_IF_ERROR(connection_.Execute(
      "DECLARE dlbench_series NO SCROLL CURSOR FOR SELECT t_ns, series, value FROM series WHERE cell_id = $1 "
      "ORDER BY id",
      Params().Add(cell.id)));
  for (;;) {
    auto rows = connection_.Query("FETCH FORWARD " + std::to_string(kFetchRows) + " FROM dlbench_series");
    if (!rows.ok()) return rows.error();
    for (int i = 0; i < rows->size(); ++i) {
      cell.series.push_back(SeriesPoint{rows->Int64(i, 0), rows->Text(i, 1), rows->DoubleOrNan(i, 2)});
    }
    if (rows->size() < kFetchRows) break;
  }
  return connection_.Execute("CLOSE dlbench_series");
}

Result<std::vector<CellRecord>> PostgresStore::GetCells(std::int64_t run_id, const CellQuery& query) {
  auto cells = Retrying([&]() -> Result<std::vector<CellRecord>> {
    auto tx = Transaction::Begin(connection_, Transaction::Mode::kReadOnlySnapshot);
    if (!tx.ok()) return tx.error();
    auto exists = RunExists(run_id);
    if (!exists.ok()) return exists.error();
    if (!*exists) {
      return MakeError(ErrorKind::kNotFound,
                       "no run with id " + std::to_string(run_id) + " in " + Describe());
    }
    Params params;
    params.Add(run_id);
    if (query.index) params.Add(*query.index);
    auto rows = connection_.Query(std::string(kCellSelect) +
                                      (query.index ? "WHERE run_id = $1 AND idx = $2" : "WHERE run_id = $1") +
                                      " ORDER BY idx, id",
                                  params);
    if (!rows.ok()) return rows.error();
    auto read = ReadCells(*rows);
    if (!read.ok()) return read.error();
    DLBENCH_RETURN_IF_ERROR(LoadMetrics(
        *read, query.index ? "WHERE c.run_id = $1 AND c.idx = $2" : "WHERE c.run_id = $1", params));
    for (CellRecord& cell : *read) {
      if (query.with_steps) DLBENCH_RETURN_IF_ERROR(LoadSteps(cell));
      if (query.with_series) DLBENCH_RETURN_IF_ERROR(LoadSeries(cell));
    }
    DLBENCH_RETURN_IF_ERROR(tx->Commit());
    return read;
  });
  if (!cells.ok()) return cells.error();
  return cells;
}

Result<std::set<std::string>> PostgresStore::FinishedCellIds(std::int64_t run_id) {
  auto rows = Retrying([&]() {
    return connection_.Query("SELECT cell_id FROM cells WHERE run_id = $1 AND outcome <> $2",
                             Params().Add(run_id).Add(record::Name(record::Outcome::kInterrupted)));
  });
  if (!rows.ok()) return rows.error();
  std::set<std::string> ids;
  for (int i = 0; i < rows->size(); ++i) ids.insert(rows->Text(i, 0));
  return ids;
}

Status PostgresStore::SetTag(std::int64_t run_id, const std::string& tag) {
  DLBENCH_RETURN_IF_ERROR(codec::ValidateTagName(tag));
  return Retrying([&]() -> Status {
    auto tx = Transaction::Begin(connection_, Transaction::Mode::kReadWrite);
    if (!tx.ok()) return tx.error();
    auto exists = RunExists(run_id);
    if (!exists.ok()) return exists.error();
    if (!*exists) {
      return MakeError(ErrorKind::kNotFound,
                       "cannot tag run " + std::to_string(run_id) + ": no such run in " + Describe());
    }
    DLBENCH_RETURN_IF_ERROR(
        connection_.Execute("INSERT INTO tags (name, run_id) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE "
                            "SET run_id = excluded.run_id",
                            Params().Add(tag).Add(run_id)));
    return tx->Commit();
  });
}

Result<std::int64_t> PostgresStore::ResolveRunName(const std::string& ref) {
  if (ref.empty()) {
    return MakeError(ErrorKind::kInvalidInput, "an empty run reference (expected an id, a tag or 'latest')");
  }
  return Retrying([&]() { return ResolveRunOnce(ref); });
}

Result<std::int64_t> PostgresStore::ResolveRunOnce(const std::string& ref) {
  if (ref == "latest") {
    auto rows = connection_.Query("SELECT max(id) FROM runs");
    if (!rows.ok()) return rows.error();
    if (rows->size() == 0 || rows->IsNull(0, 0)) {
      return MakeError(ErrorKind::kNotFound, "no runs are stored yet in " + Describe());
    }
    return rows->Int64(0, 0);
  }
  if (codec::AllDigits(ref)) {
    std::int64_t id = 0;
    auto [end, ec] = std::from_chars(ref.data(), ref.data() + ref.size(), id);
    auto exists = ec == std::errc() ? RunExists(id) : Result<bool>(false);
    if (!exists.ok()) return exists.error();
    if (!*exists) return MakeError(ErrorKind::kNotFound, "no run with id " + ref + " in " + Describe());
    return id;
  }
  auto tagged = connection_.Query("SELECT run_id FROM tags WHERE name = $1", Params().Add(ref));
  if (!tagged.ok()) return tagged.error();
  if (tagged->size() > 0) return tagged->Int64(0, 0);
  auto names = connection_.Query("SELECT name FROM tags ORDER BY name");
  if (!names.ok()) return names.error();
  std::string known;
  for (int i = 0; i < names->size(); ++i) known += (known.empty() ? "" : ", ") + names->Text(i, 0);
  return MakeError(
      ErrorKind::kNotFound,
      "no run is tagged '" + ref + "' in " + Describe() +
          (known.empty() ? "; there are no tags yet (use a run id or 'latest')" : "; known tags: " + known));
}

Result<std::vector<std::pair<RunRecord, CellRecord>>> PostgresStore::CellHistory(const std::string& key) {
  return Retrying([&]() -> Result<std::vector<std::pair<RunRecord, CellRecord>>> {
    auto tx = Transaction::Begin(connection_, Transaction::Mode::kReadOnlySnapshot);
    if (!tx.ok()) return tx.error();
    // Run ids grow with creation (one sequence for every writer), so ordering by run_id is "oldest
    // run first" without trusting the wall clocks of the machines that wrote the runs.
    auto rows = connection_.Query(std::string(kCellSelect) + "WHERE key = $1 ORDER BY run_id, idx, id",
                                  Params().Add(key));
    if (!rows.ok()) return rows.error();
    auto cells = ReadCells(*rows);
    if (!cells.ok()) return cells.error();
    DLBENCH_RETURN_IF_ERROR(LoadMetrics(*cells, "WHERE c.key = $1", Params().Add(key)));
    auto runs = QueryRuns("WHERE r.id IN (SELECT run_id FROM cells WHERE key = $1)", Params().Add(key));
    if (!runs.ok()) return runs.error();
    std::map<std::int64_t, const RunRecord*> by_id;
    for (const RunRecord& run : *runs) by_id[run.id] = &run;
    std::vector<std::pair<RunRecord, CellRecord>> history;
    history.reserve(cells->size());
    for (CellRecord& cell : *cells) {
      auto it = by_id.find(cell.run_id);
      DLBENCH_CHECK(it != by_id.end(), "a cell's run exists (foreign key)");
      history.emplace_back(*it->second, std::move(cell));
    }
    DLBENCH_RETURN_IF_ERROR(tx->Commit());
    return history;
  });
}

}  // namespace dlbench::store
