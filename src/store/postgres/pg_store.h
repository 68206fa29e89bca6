// The PostgreSQL ResultStore, for a team, a CI fleet or a multi-node job writing one database
// (docs/storage.md, "PostgreSQL"). Same records, same answers as the SQLite store: the parameterised
// StoreTest suite runs every store-level test against both.
//
// Several writers: any number of processes on any number of machines may write one database at
// once. Ids come from identity sequences (unique, in creation order); BeginRun and PutCell are one
// READ COMMITTED transaction each; PutCell locks its run's row, so two writers of one run (never
// the case in dlbench, which stores a run from one process) still cannot interleave a cell.
//
// Lost connections: every operation is one transaction, and one that fails because the connection
// is gone or the server is restarting (kUnavailable) is retried on a new connection, with backoff
// (RetryBackoff), for up to Options::retry_s; then it fails with kUnavailable, and later calls
// try once each until one reaches the server again (the window is per outage, not per call). Retrying is safe
// because every write is idempotent: PutCell replaces the same cell, BeginRun of a uuid already
// stored returns that run, tags and statuses are set, not added. Callers that must not lose a cell
// when the server stays away wrap the store in a SpillingStore (store/spill_store.h).
//
// Value encodings are the SQLite store's (store/sqlite_store.h): JSON as TEXT exactly as written,
// seeds as decimal text, NaN as NULL. PostgreSQL's TEXT holds only valid UTF-8 without NUL, so
// plain text fields (messages, labels, paths, metric and series names) are stored with each
// invalid byte or NUL replaced by U+FFFD (SQLite keeps the bytes); JSON fields are always valid.
//
// A PostgresStore is used by one thread at a time; open one per thread or process.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "store/postgres/pg_connection.h"
#include "store/postgres/pg_schema.h"
#include "store/result_store.h"

namespace dlbench::store {

// The pause before retry number `attempt` (0-based): 100 ms doubling per attempt, at most 5 s.
std::chrono::milliseconds RetryBackoff(int attempt);

class PostgresStore final : public ResultStore {
 public:
  struct Options {
    bool create = true;    // give a database without tables the schema (false: refuse it)
    double retry_s = 120;  // how long an operation that lost the server is retried
    std::vector<pg::Migration> migrations = pg::SchemaMigrations();  // tests inject others
  };

  // Connects to `url` (postgresql://... or postgres://...) and migrates its schema. Connecting is
  // not retried: a server that is down now is a kUnavailable error at once, a malformed URL
  // kInvalidInput, a wrong password or a database that does not exist kStore, each one line that
  // names the server by its masked URL. A schema newer than `migrations` is refused (kStore).
  static Result<std::unique_ptr<PostgresStore>> Open(const std::string& url, const Options& options);
  static Result<std::unique_ptr<PostgresStore>> Open(const std::string& url) { return Open(url, Options()); }

  Result<std::int64_t> BeginRun(const RunRecord& run) override;
  Status PutCell(const CellRecord& cell) override;
  Status SetRunStatus(std::int64_t run_id, record::RunStatus status,
                      std::optional<std::int64_t> finished_wall_ns) override;
  Result<std::vector<RunRecord>> ListRuns() override;
  Result<RunRecord> GetRun(std::int64_t run_id) override;
  Result<std::vector<CellRecord>> GetCells(std::int64_t run_id, const CellQuery& query) override;
  Result<std::set<std::string>> FinishedCellIds(std::int64_t run_id) override;
  Status SetTag(std::int64_t run_id, const std::string& tag) override;
  Status DeleteTag(const std::string& tag) override;  // in *_admin.cc
  Status DeleteRun(std::int64_t run_id) override;
  Result<std::int64_t> ResolveRunName(const std::string& ref) override;
  Result<std::vector<std::pair<RunRecord, CellRecord>>> CellHistory(const std::string& key) override;
  // The URL with its password masked: "postgresql://alice:***@db:5432/bench".
  std::string Describe() const override;

  // Run locks as session-level advisory locks (pg_try_advisory_lock(kRunLockClass, run id)) held
  // by a connection of their own, opened at the first TryLockRun: the server drops them when that
  // session ends, so a holder that exits, is SIGKILLed or loses its host releases them. The
  // session's application_name carries the owner ("dlbench-lock <pid> <since_wall_ns> <host>",
  // the host cut to fit 63 bytes), which a refused TryLockRun reads back from pg_stat_activity
  // (pid 0 and an empty host when the server does not show it to this role). Locks are not
  // retried: a lost lock connection loses the locks with it (a server restart), and TryLockRun
  // fails with kUnavailable when the server cannot be reached. Run ids are mapped to the lock's
  // 32-bit key by their low 32 bits.
  Result<std::optional<RunLockOwner>> TryLockRun(std::int64_t run_id, const RunLockOwner& owner) override;
  Status UnlockRun(std::int64_t run_id) override;

  // The current connection, for diagnostics and tests.
  pg::Connection& connection() { return connection_; }

 private:
  PostgresStore(std::string url, pg::Connection connection, Options options)
      : url_(std::move(url)),
        display_(connection.display()),
        connection_(std::move(connection)),
        options_(std::move(options)) {}
  // Runs `op` (one whole transaction), retrying it on a new connection while it fails with
  // kUnavailable, for up to options_.retry_s.
  template <class Op>
  auto Retrying(Op&& op) -> decltype(op());

  Status PutCellOnce(const CellRecord& cell, const std::array<std::string, 5>& json_text,
                     const std::string& seed_text);
  Result<std::vector<RunRecord>> QueryRuns(const char* where_sql, const pg::Params& params);
  Status LoadTags(std::vector<RunRecord>& runs);
  Status LoadMetrics(std::vector<CellRecord>& cells, const char* where_sql, const pg::Params& params);
  Status LoadSteps(CellRecord& cell);
  Status LoadSeries(CellRecord& cell);
  Result<bool> RunExists(std::int64_t run_id);
  // OK when the run exists; kNotFound "no run with id N in <store>" when it does not.
  Status RequireRun(std::int64_t run_id);
  Result<std::int64_t> ResolveRunOnce(const std::string& ref);

  std::string url_;      // with its password, for reconnecting; never shown
  std::string display_;  // url_ with its password masked
  pg::Connection connection_;
  Options options_;
  bool unreachable_ = false;  // the last call used up the retry window without reaching the server
  std::optional<pg::Connection> lock_connection_;  // holds the advisory locks of locked_runs_
  std::set<std::int64_t> locked_runs_;
};

}  // namespace dlbench::store
