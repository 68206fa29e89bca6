// The SQLite ResultStore (the embedded default; docs/storage.md).
//
// Durability: the database runs in WAL mode with synchronous=NORMAL, so a committed transaction
// survives the writing process being killed at any instant (SIGKILL included); only an OS crash
// or power loss can lose the last few commits, never consistency. Every PutCell is one
// transaction, so a cell is either wholly stored (row, metrics, steps, series) or absent.
// Readers (`dlbench show`) may open the same file while a run writes; a connection waits up to
// kBusyTimeoutMs for a lock before failing.
//
// Value encodings (both directions exact):
// - JSON fields are stored as UTF-8 text (nlohmann's dump()); unsigned 64-bit integers and
//   doubles in them come back unchanged.
// - CellRecord::seed (uint64) is stored as its decimal text, so the shell shows the real seed.
// - A metric or series value that is NaN is stored as NULL and reads back as NaN.
// - A step's data_wait_ns/compute_ns/comm_ns is NULL when its `present` bit is clear; on reading,
//   `present` is rebuilt from which columns are non-NULL (bits outside StepFieldBits are not
//   kept, and an absent phase reads back as 0).
//
// A SqliteStore is used by one thread at a time; open one per thread or process.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "store/result_store.h"
#include "store/run_lock_file.h"
#include "store/sqlite_db.h"
#include "store/sqlite_schema.h"

namespace dlbench::store {

inline constexpr int kBusyTimeoutMs = 10'000;

class SqliteStore final : public ResultStore {
 public:
  // Opens (creating if needed) the database at `path`, sets WAL/synchronous/busy timeout/foreign
  // keys, and migrates it with `migrations` (the code's own by default; tests inject others).
  // kStore when the directory is missing, the file is not a SQLite database or not a dlbench
  // store, or its schema is newer than `migrations` knows.
  static Result<std::unique_ptr<SqliteStore>> Open(
      const std::string& path, const std::vector<sqlite::Migration>& migrations = sqlite::SchemaMigrations());

  // For commands that only read: Open, unless the database exists and this process cannot write
  // it or its directory (a read-only file or filesystem). Then it is opened read-only, or, where
  // not even a -shm file can be created, immutable (sqlite_db.h, OpenMode), and nothing is
  // migrated: a schema older than `migrations` is a kStore error saying why. Writes through such a
  // store fail with kStore.
  static Result<std::unique_ptr<SqliteStore>> OpenForReading(
      const std::string& path, const std::vector<sqlite::Migration>& migrations = sqlite::SchemaMigrations());

  // BeginRun: stores the environment (one row per distinct (hash, fingerprint)), the run and its
  // RunRecord::tags, in one transaction. `run.id` is ignored; `run.uuid` is kept (kInvalidInput
  // unless a lower-case UUID) or, when empty, a new one is made; a uuid already stored returns that
  // run's id and stores nothing. kInvalidInput for an unknown status.
  Result<std::int64_t> BeginRun(const RunRecord& run) override;
  // kNotFound when cell.run_id names no run; kInvalidInput for duplicate metric names or JSON
  // that cannot be written as UTF-8 text.
  Status PutCell(const CellRecord& cell) override;
  Status SetRunStatus(std::int64_t run_id, record::RunStatus status,
                      std::optional<std::int64_t> finished_wall_ns) override;
  // Newest first (by id, i.e. by creation order), each with its tags sorted by name.
  Result<std::vector<RunRecord>> ListRuns() override;
  Result<RunRecord> GetRun(std::int64_t run_id) override;
  // The run's cells ordered by index; metrics always, steps and series when asked, each in the
  // order they were stored. kNotFound when the run does not exist.
  Result<std::vector<CellRecord>> GetCells(std::int64_t run_id, const CellQuery& query) override;
  Result<std::set<std::string>> FinishedCellIds(std::int64_t run_id) override;
  // Tag names are non-empty, not all digits (those are run ids) and not "latest": kInvalidInput.
  Status SetTag(std::int64_t run_id, const std::string& tag) override;
  Status DeleteTag(const std::string& tag) override;  // in *_admin.cc
  Status DeleteRun(std::int64_t run_id) override;
  Result<std::int64_t> ResolveRunName(const std::string& ref) override;
  // Cells carry their metrics, not their steps or series.
  Result<std::vector<std::pair<RunRecord, CellRecord>>> CellHistory(const std::string& key) override;
  std::string Describe() const override;
  // A lock file per run next to the database (store/run_lock_file.h).
  Result<std::optional<RunLockOwner>> TryLockRun(std::int64_t run_id, const RunLockOwner& owner) override;
  Status UnlockRun(std::int64_t run_id) override;

  // The underlying connection, for diagnostics and tests (PRAGMA integrity_check).
  sqlite::Database& database() { return db_; }

 private:
  explicit SqliteStore(sqlite::Database db) : db_(std::move(db)), locks_(db_.path()) {}
  Result<std::vector<RunRecord>> QueryRuns(const char* where_sql, std::optional<std::int64_t> run_id);
  Status LoadTags(RunRecord& run);
  Status LoadChildren(CellRecord& cell, const CellQuery& query);
  Result<bool> RunExists(std::int64_t run_id);
  Status StoreTag(std::int64_t run_id, const std::string& tag);

  sqlite::Database db_;
  RunLockFiles locks_;
};

}  // namespace dlbench::store
