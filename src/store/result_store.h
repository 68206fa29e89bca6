// Where results live (DESIGN.md "Storage model"). One interface; SQLite is the embedded
// default (store/sqlite_store.h). Every write that finishes a cell is one transaction, so a
// killed `dlbench run` leaves every finished cell and nothing half-written.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "protocol/wire.h"

namespace dlbench::store {

// The cells a run was started with: `dlbench run MATRIX --only F... --shard K/N`. Stored with the
// run so `run --resume` can apply it again and `show` can name it. Empty (no --only, no --shard)
// means the whole matrix; runs stored before schema version 2 read as empty too.
struct RunSelection {
  std::vector<std::string> only;  // --only filters as given, in order (a cell matching any is kept)
  std::string shard;              // "K/N" as ShardText writes it, or empty for no sharding

  bool empty() const { return only.empty() && shard.empty(); }
  bool operator==(const RunSelection& other) const { return only == other.only && shard == other.shard; }
  bool operator!=(const RunSelection& other) const { return !(*this == other); }
};

// The JSON form of a selection (runs.selection, the run object of `export --format json`):
// {"only": [...], "shard": "K/N"}, each key present only when set, so an empty selection is {}.
nlohmann::json RunSelectionToJson(const RunSelection& selection);
// The inverse; missing keys are empty. kStore when `json` is not an object of that shape (a
// stored value only a foreign writer could have produced).
Result<RunSelection> RunSelectionFromJson(const nlohmann::json& json);

struct RunRecord {
  std::int64_t id = 0;
  std::string name;  // the matrix's name, or its file name
  std::string matrix_path;
  std::string matrix_text;
  std::int64_t started_wall_ns = 0;
  std::optional<std::int64_t> finished_wall_ns;
  std::string status = "running";                         // running | completed | interrupted | failed
  std::string environment_hash;                           // hash of the comparability-relevant fields
  nlohmann::json environment = nlohmann::json::object();  // the full fingerprint
  std::string tool_version;
  std::string git_commit;
  int total_cells = 0;
  RunSelection selection;  // the --only/--shard the run was started with
  std::vector<std::string> tags;
};

struct MetricRecord {
  std::string name;  // snake_case with the unit in it: "step_time_mean_ns", "samples_per_s"
  double value = 0;
  std::string unit;  // "ns", "1/s", "bytes", "J", "%", "ratio", ...
};

struct StepRow {
  std::uint32_t rank = 0;
  protocol::StepRecord record;
};

// One sampled value of one series: "gpu0.sm_util_pct", "host.cpu_util_pct", "proc.rss_bytes".
struct SeriesPoint {
  std::int64_t t_ns = 0;  // CLOCK_MONOTONIC, the step records' clock
  std::string series;
  double value = 0;
};

struct CellRecord {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  int index = 0;
  std::string cell_id;  // plan::Cell::id, unique within the run
  std::string key;      // plan::Cell::key, the same cell across runs
  std::string label;
  nlohmann::json params = nlohmann::json::object();     // requested
  nlohmann::json effective = nlohmann::json::object();  // what ran (from READY)
  nlohmann::json hello = nlohmann::json::object();      // the runner's HELLO
  int repetition = 0;
  std::uint64_t seed = 0;
  std::string outcome;  // ok | error | crashed | timeout | invalid | oom | unsupported | interrupted
  std::string message;
  std::string verdict;  // valid | invalid | n/a
  nlohmann::json verdict_reasons = nlohmann::json::array();
  std::optional<std::int64_t> warmup_steps;
  std::string warmup_rule;
  std::string stop_reason;
  std::string stdout_path;
  std::string stderr_path;
  std::int64_t started_wall_ns = 0;
  std::int64_t finished_wall_ns = 0;
  nlohmann::json extras = nlohmann::json::object();  // runner EXTRAS and MEMORY snapshots
  std::vector<MetricRecord> metrics;
  std::vector<StepRow> steps;       // loaded only when asked
  std::vector<SeriesPoint> series;  // loaded only when asked
};

struct CellQuery {
  bool with_steps = false;
  bool with_series = false;
  std::optional<int> index;  // one cell only
};

class ResultStore {
 public:
  virtual ~ResultStore() = default;
  // Creates the run; returns its id.
  virtual Result<std::int64_t> BeginRun(const RunRecord& run) = 0;
  // Stores a finished cell with its metrics, steps and series in one transaction. A cell of the
  // same run and cell_id already stored (an interrupted one, on --resume) is replaced.
  virtual Status PutCell(const CellRecord& cell) = 0;
  virtual Status SetRunStatus(std::int64_t run_id, const std::string& status,
                              std::optional<std::int64_t> finished_wall_ns) = 0;
  virtual Result<std::vector<RunRecord>> ListRuns() = 0;
  virtual Result<RunRecord> GetRun(std::int64_t run_id) = 0;
  virtual Result<std::vector<CellRecord>> GetCells(std::int64_t run_id, const CellQuery& query) = 0;
  // cell_ids of the run's cells whose outcome is final (anything but "interrupted").
  virtual Result<std::set<std::string>> FinishedCellIds(std::int64_t run_id) = 0;
  // Tags name runs: `dlbench tag 12 baseline`. A tag names one run; setting it again moves it.
  virtual Status SetTag(std::int64_t run_id, const std::string& tag) = 0;
  // A run id, a tag, or "latest" -> run id. kNotFound with the known tags when nothing matches.
  virtual Result<std::int64_t> ResolveRun(const std::string& ref) = 0;
  // Every stored cell with this key, oldest run first, with its run (for trends and estimates).
  virtual Result<std::vector<std::pair<RunRecord, CellRecord>>> CellHistory(const std::string& key) = 0;
  virtual std::string Describe() const = 0;  // "sqlite:/path/to/dlbench.db"
};

// Opens (creating and migrating as needed) a SQLite store at path.
Result<std::unique_ptr<ResultStore>> OpenSqliteStore(const std::string& path);
// The same for commands that only read: a store that cannot be written here (a read-only file or
// filesystem) is opened read-only instead (SqliteStore::OpenForReading).
Result<std::unique_ptr<ResultStore>> OpenSqliteStoreForReading(const std::string& path);

}  // namespace dlbench::store
