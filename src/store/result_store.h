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
#include "record/records.h"

namespace dlbench::store {

// The data model lives in record/ (records.h); the store persists it.
using record::CellRecord;
using record::MetricRecord;
using record::RunRecord;
using record::RunSelection;
using record::SeriesPoint;
using record::StepRow;

// Who runs a run's cells now: the `dlbench run` that started it, or one that resumes it.
struct RunLockOwner {
  std::int64_t pid = 0;
  std::string host;
  std::int64_t since_wall_ns = 0;
};

// This process as a lock holder (its pid, host name and the wall clock now), and a holder in
// words: "pid 4242 on host gpu-3 (since 12 s ago)". Defined in run_owner.cc.
RunLockOwner ThisProcessAsOwner();
std::string DescribeHolder(const RunLockOwner& owner);

struct CellQuery {
  bool with_steps = false;
  bool with_series = false;
  std::optional<int> index;  // one cell only
};

class ResultStore {
 public:
  virtual ~ResultStore() = default;
  // Creates the run; returns its id. The run keeps `run.uuid` when given, else gets a new one; a
  // run whose uuid is already stored is not stored again: its id is returned (so a retried
  // BeginRun and `dlbench db copy` never duplicate a run).
  virtual Result<std::int64_t> BeginRun(const RunRecord& run) = 0;
  // Stores a finished cell with its metrics, steps and series in one transaction. A cell of the
  // same run and cell_id already stored (an interrupted one, on --resume) is replaced.
  virtual Status PutCell(const CellRecord& cell) = 0;
  virtual Status SetRunStatus(std::int64_t run_id, record::RunStatus status,
                              std::optional<std::int64_t> finished_wall_ns) = 0;
  virtual Result<std::vector<RunRecord>> ListRuns() = 0;
  virtual Result<RunRecord> GetRun(std::int64_t run_id) = 0;
  virtual Result<std::vector<CellRecord>> GetCells(std::int64_t run_id, const CellQuery& query) = 0;
  // cell_ids of the run's cells whose outcome is final (anything but "interrupted").
  virtual Result<std::set<std::string>> FinishedCellIds(std::int64_t run_id) = 0;
  // Tags name runs: `dlbench tag 12 baseline`. A tag names one run; setting it again moves it.
  virtual Status SetTag(std::int64_t run_id, const std::string& tag) = 0;
  // Removes a tag (the run stays); kNotFound, naming the known tags, when no run has it.
  virtual Status DeleteTag(const std::string& tag) = 0;
  // Removes a run with its cells, metrics, steps, series and tags in one transaction, and any
  // environment no run refers to any more; kNotFound when there is no such run. The caller holds
  // the run's lock (TryLockRun), so a live run is never deleted under its driver.
  virtual Status DeleteRun(std::int64_t run_id) = 0;
  // A run reference -> run id: an id, a tag, "latest", "previous" (the run before the latest),
  // or any of these followed by ~N, the run N places before it in id order ("latest~2",
  // "baseline~1"). kNotFound with the known tags when nothing matches or too few runs come
  // before; kInvalidInput for a malformed ~N. Defined in run_ref.cc over ResolveRunName.
  Result<std::int64_t> ResolveRun(const std::string& ref);
  // A run id, a tag, or "latest" (no ~N) -> run id, as ResolveRun says.
  virtual Result<std::int64_t> ResolveRunName(const std::string& name) = 0;
  // Every stored cell with this key, oldest run first, with its run (for trends and estimates).
  virtual Result<std::vector<std::pair<RunRecord, CellRecord>>> CellHistory(const std::string& key) = 0;
  // "sqlite:/path/to/dlbench.db", "postgresql://user@host:5432/db": never a password.
  virtual std::string Describe() const = 0;

  // Run locks: one process at a time runs a run's cells, so that two resumes of one run (or a
  // resume while the run is alive) never run a cell twice. TryLockRun takes the lock of `run_id`
  // for `owner` and returns nullopt; when another live process holds it, it returns that holder
  // and takes nothing; an error when the store cannot tell. A holder that died (even by SIGKILL,
  // even on another host when the store is shared) must not block for long: an implementation
  // ties the lock to its holder's life (a file lock, a database session) or checks its liveness.
  // The lock is held until UnlockRun, the store object's destruction or the holder's death.
  // Taking a lock this store object already holds succeeds. Unlocking one it does not hold is Ok.
  virtual Result<std::optional<RunLockOwner>> TryLockRun(std::int64_t run_id, const RunLockOwner& owner) = 0;
  virtual Status UnlockRun(std::int64_t run_id) = 0;
};

// Opens (creating and migrating as needed) a SQLite store at path.
Result<std::unique_ptr<ResultStore>> OpenSqliteStore(const std::string& path);
// The same for commands that only read: a store that cannot be written here (a read-only file or
// filesystem) is opened read-only instead (SqliteStore::OpenForReading).
Result<std::unique_ptr<ResultStore>> OpenSqliteStoreForReading(const std::string& path);

}  // namespace dlbench::store
