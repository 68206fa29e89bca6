// PostgresStore's reads: runs with their tags, cells with their metrics, steps and series (the
// last two through cursors), finished cell ids, run names, a key's history. Each is one
// read-only snapshot transaction, retried on a lost connection.
#include <charconv>
#include <map>
#include <utility>

#include "store/postgres/pg_store.h"
#include "store/postgres/pg_store_retrying.h"
#include "store/store_codec.h"
#include "store/store_rows.h"

namespace dlbench::store {
namespace {

using pg::Params;
using pg::Rows;
using pg::Transaction;

// Rows fetched per round trip when reading a cell's steps or series through a cursor: the memory
// of a million-step cell is its records, not a million-row result held at once.
constexpr int kFetchRows = 20'000;

// {1,2,3}: an array parameter ($1::bigint[]) of row ids the store read itself.
std::string IdArray(const std::vector<std::int64_t>& ids) {
  std::string text = "{";
  for (std::size_t i = 0; i < ids.size(); ++i) text += (i ? "," : "") + std::to_string(ids[i]);
  return text + "}";
}

// Row `row` of `rows`, with the column accessors store_rows.h's readers take.
class RowAt {
 public:
  RowAt(const Rows& rows, int row) : rows_(rows), row_(row) {}
  bool IsNull(int column) const { return rows_.IsNull(row_, column); }
  std::string Text(int column) const { return rows_.Text(row_, column); }
  std::int64_t Int64(int column) const { return rows_.Int64(row_, column); }
  std::optional<std::int64_t> OptionalInt64(int column) const { return rows_.OptionalInt64(row_, column); }

 private:
  const Rows& rows_;
  int row_;
};

Result<std::vector<CellRecord>> ReadCells(const Rows& rows) {
  std::vector<CellRecord> cells;
  cells.reserve(static_cast<std::size_t>(rows.size()));
  for (int i = 0; i < rows.size(); ++i) {
    auto cell = codec::ReadCellRow(RowAt(rows, i));
    if (!cell.ok()) return cell.error();
    cells.push_back(std::move(*cell));
  }
  return cells;
}

}  // namespace

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
  auto rows = connection_.Query(std::string(codec::kRunSelect) + where_sql, params);
  if (!rows.ok()) return rows.error();
  std::vector<RunRecord> runs;
  for (int i = 0; i < rows->size(); ++i) {
    auto run = codec::ReadRunRow(RowAt(*rows, i));
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
      cell.steps.push_back(codec::ReadStepRow(RowAt(*rows, i)));
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

Status PostgresStore::RequireRun(std::int64_t run_id) {
  auto exists = RunExists(run_id);
  if (!exists.ok()) return exists.error();
  if (!*exists)
    return MakeError(ErrorKind::kNotFound, "no run with id " + std::to_string(run_id) + " in " + Describe());
  return Status::Ok();
}

Result<std::vector<CellRecord>> PostgresStore::GetCells(std::int64_t run_id, const CellQuery& query) {
  auto cells = Retrying([&]() -> Result<std::vector<CellRecord>> {
    auto tx = Transaction::Begin(connection_, Transaction::Mode::kReadOnlySnapshot);
    if (!tx.ok()) return tx.error();
    DLBENCH_RETURN_IF_ERROR(RequireRun(run_id));
    Params params;
    params.Add(run_id);
    if (query.index) params.Add(*query.index);
    auto rows = connection_.Query(std::string(codec::kCellSelect) +
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
    auto rows = connection_.Query(std::string(codec::kCellSelect) + "WHERE key = $1 ORDER BY run_id, idx, id",
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
