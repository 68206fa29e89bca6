// Run locks for a store that lives in a file (SQLite): one lock file per run next to the database,
// `<db>.run-<id>.lock`, held with flock(2) for as long as a process runs the run's cells. The
// kernel drops a flock when its holder dies, SIGKILL included, so a dead holder never blocks a
// resume; the file's contents (the holder's pid, host and start) are only for the message.
// Local filesystems; on NFS, Linux emulates flock with POSIX locks, which the server keeps.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/error.h"
#include "store/result_store.h"

namespace dlbench::store {

class RunLockFiles {
 public:
  // `db_path` names the database; ":memory:" or "" keep the locks in this object only.
  explicit RunLockFiles(std::string db_path) : db_path_(std::move(db_path)) {}
  ~RunLockFiles();  // releases every lock still held
  RunLockFiles(const RunLockFiles&) = delete;
  RunLockFiles& operator=(const RunLockFiles&) = delete;

  // ResultStore::TryLockRun's contract.
  Result<std::optional<RunLockOwner>> TryLock(std::int64_t run_id, const RunLockOwner& owner);
  // ResultStore::UnlockRun's contract: removes the file, then releases the lock.
  Status Unlock(std::int64_t run_id);

  // "<db>.run-<id>.lock".
  std::string PathOf(std::int64_t run_id) const;

 private:
  std::string db_path_;
  std::map<std::int64_t, int> held_;  // run id -> the locked fd (-1 for an in-memory lock)
};

}  // namespace dlbench::store
