// PostgresStore's run locks: session-level advisory locks on a connection of their own, whose
// application_name names the holder (pg_store.h, TryLockRun).
#include <charconv>
#include <string>
#include <string_view>

#include "store/postgres/pg_store.h"

namespace dlbench::store {

using pg::Connection;
using pg::Params;

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

}  // namespace dlbench::store
