// PostgresStore: connecting and migrating, and the writes (runs, cells with their children as COPY
// streams, statuses, tags), each one transaction retried on a lost connection. The reads are in
// pg_store_read.cc, the run locks in pg_store_locks.cc, the removals in pg_store_admin.cc.
#include "store/postgres/pg_store.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "store/postgres/pg_store_retrying.h"
#include "store/store_codec.h"

namespace dlbench::store {
namespace {

using pg::Connection;
using pg::Params;
using pg::Transaction;

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
  auto json_text = codec::DumpCellJson(cell, what);
  if (!json_text.ok()) return json_text.error();
  const std::string seed_text = std::to_string(cell.seed);
  return Retrying([&]() -> Status { return PutCellOnce(cell, *json_text, seed_text); });
}

Status PostgresStore::PutCellOnce(const CellRecord& cell, const std::array<std::string, 5>& json_text,
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

}  // namespace dlbench::store
