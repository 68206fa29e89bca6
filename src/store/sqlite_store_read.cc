// SqliteStore's reads: runs with their tags, cells with their metrics, steps and series, finished
// cell ids, run names, a key's history. Each read of more than one statement is one read
// transaction, so it sees one snapshot while another process writes.
#include <charconv>
#include <map>
#include <utility>

#include "store/sqlite_store.h"
#include "store/store_codec.h"
#include "store/store_rows.h"

namespace dlbench::store {
namespace {

using sqlite::Statement;
using sqlite::Transaction;

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

// The cells of `stmt`'s rows (codec::kCellSelect's columns) in order, without their children.
Result<std::vector<CellRecord>> ReadCells(Statement& stmt) {
  std::vector<CellRecord> cells;
  DLBENCH_RETURN_IF_ERROR(ForEachRow(stmt, [&](const Statement& row) -> Status {
    auto cell = codec::ReadCellRow(row);
    if (!cell.ok()) return cell.error();
    cells.push_back(std::move(*cell));
    return Status::Ok();
  }));
  return cells;
}

}  // namespace

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
  auto stmt = db_.Prepare(std::string(codec::kRunSelect) + where_sql);
  if (!stmt.ok()) return stmt.error();
  if (run_id) stmt->Bind(1, *run_id);
  std::vector<RunRecord> runs;
  DLBENCH_RETURN_IF_ERROR(ForEachRow(*stmt, [&](const Statement& row) -> Status {
    auto run = codec::ReadRunRow(row);
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
      cell.steps.push_back(codec::ReadStepRow(row));
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
  auto stmt =
      query.index
          ? db_.Prepare(std::string(codec::kCellSelect) + "WHERE run_id = ?1 AND idx = ?2 ORDER BY idx, id")
          : db_.Prepare(std::string(codec::kCellSelect) + "WHERE run_id = ?1 ORDER BY idx, id");
  if (!stmt.ok()) return stmt.error();
  stmt->Bind(1, run_id);
  if (query.index) stmt->Bind(2, *query.index);
  auto cells = ReadCells(*stmt);
  if (!cells.ok()) return cells.error();
  for (CellRecord& cell : *cells) DLBENCH_RETURN_IF_ERROR(LoadChildren(cell, query));
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
  auto stmt = db_.Prepare(std::string(codec::kCellSelect) + "WHERE key = ?1 ORDER BY run_id, idx, id");
  if (!stmt.ok()) return stmt.error();
  stmt->Bind(1, std::string_view(key));
  auto cells = ReadCells(*stmt);
  if (!cells.ok()) return cells.error();
  std::map<std::int64_t, RunRecord> runs;
  std::vector<std::pair<RunRecord, CellRecord>> history;
  history.reserve(cells->size());
  for (CellRecord& cell : *cells) {
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
