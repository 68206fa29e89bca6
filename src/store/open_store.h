// Opening a store by its location (docs/storage.md, "Choosing a backend"): the one function the
// command line (and anything else that takes a --db) uses, so every command accepts the same
// locations and says the same things about them.
//
// A location starting with postgresql:// or postgres:// (any case) is a PostgreSQL URL; anything
// else is the path of a SQLite file.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "store/result_store.h"

namespace dlbench::store {

enum class Backend { kSqlite, kPostgres };

Backend BackendOf(std::string_view location);

// The location as it may be shown anywhere: a URL with its password masked, a path as it is.
std::string DisplayLocation(std::string_view location);

enum class OpenMode {
  // For commands that only read (show, runs, export, compare, trend, report, serve, plan's
  // estimates, db copy's source): the store must exist, as for kExisting, and a SQLite store this
  // process cannot write (a read-only file or filesystem) is opened read-only
  // (OpenSqliteStoreForReading). A PostgreSQL store is opened as for kExisting.
  kRead,
  // The store must exist already and is written (tag): a missing or empty SQLite file, or a
  // PostgreSQL database without dlbench's tables, is a kStore error and nothing is created.
  kExisting,
  // Created when missing (run): a new SQLite file, or the schema in an empty PostgreSQL database.
  kCreate,
};

struct OpenOptions {
  OpenMode mode = OpenMode::kExisting;
  // PostgreSQL only. How long an operation that lost the server is retried (PostgresStore); when
  // unset, $DLBENCH_DB_RETRY_S, else 120 s.
  std::optional<double> retry_s;
  // PostgreSQL in kCreate mode with `spill`: the store is wrapped in a SpillingStore that keeps cells the
  // server could not take under this folder (created at once; kIo when it cannot be); when unset,
  // DefaultSpillDir(location).
  std::optional<std::string> spill_dir;
  // Off for writers that can simply run again (db copy is idempotent): nothing to keep.
  bool spill = true;
};

// Opens (migrating as needed) the store at `location`. Every failure to open is a one-line error
// of kind kStore, kUnavailable (a server that is down) or kInvalidInput (a malformed URL, a bad
// $DLBENCH_DB_RETRY_S) that names the location by DisplayLocation, never with its password;
// kUnsupported for a PostgreSQL URL in a build without libpq.
Result<std::unique_ptr<ResultStore>> OpenStore(const std::string& location, const OpenOptions& options);

// The retry window from $DLBENCH_DB_RETRY_S: seconds, 0 to 86400; 120 when unset.
Result<double> RetryWindowFromEnvironment();

}  // namespace dlbench::store
