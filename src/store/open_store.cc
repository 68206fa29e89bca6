#include "store/open_store.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>

#include "common/credentials.h"
#include "common/files.h"
#include "store/spill_store.h"
#include "store/sqlite_store.h"
#ifdef DLBENCH_HAVE_POSTGRES
#include "store/postgres/pg_store.h"
#endif

namespace dlbench::store {
namespace {

// A SQLite store that must exist: the file is there and is not empty. (An empty file would become
// a new store the moment SQLite opened it.)
Status CheckSqliteExists(const std::string& path) {
  if (path == ":memory:") return Status::Ok();
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    return MakeError(ErrorKind::kStore,
                     "no dlbench store at '" + path +
                         "': the file does not exist, and this command does not create one "
                         "(`dlbench run` does; --db or $DLBENCH_DB names another store)");
  }
  if (std::filesystem::is_regular_file(status) && std::filesystem::file_size(path, ec) == 0 && !ec) {
    return MakeError(ErrorKind::kStore, "'" + path +
                                            "' is an empty file, not a dlbench store; this command does not "
                                            "create one (`dlbench run` does)");
  }
  return Status::Ok();
}

}  // namespace

Backend BackendOf(std::string_view location) {
  return IsPostgresLocation(location) ? Backend::kPostgres : Backend::kSqlite;
}

std::string DisplayLocation(std::string_view location) {
  return BackendOf(location) == Backend::kPostgres ? MaskPasswords(location) : std::string(location);
}

Result<double> RetryWindowFromEnvironment() {
  const char* text = std::getenv("DLBENCH_DB_RETRY_S");
  if (text == nullptr || *text == '\0') return 120.0;
  double seconds = 0;
  const char* end = text + std::char_traits<char>::length(text);
  auto [parsed_end, ec] = std::from_chars(text, end, seconds);
  if (ec != std::errc() || parsed_end != end || !(seconds >= 0 && seconds <= 86400)) {
    return MakeError(ErrorKind::kInvalidInput, std::string("$DLBENCH_DB_RETRY_S is '") + text +
                                                   "'; expected seconds from 0 to 86400 (how long a lost "
                                                   "database connection is retried)");
  }
  return seconds;
}

Result<std::unique_ptr<ResultStore>> OpenStore(const std::string& location, const OpenOptions& options) {
  if (BackendOf(location) == Backend::kSqlite) {
    if (options.mode != OpenMode::kCreate) DLBENCH_RETURN_IF_ERROR(CheckSqliteExists(location));
    if (options.mode == OpenMode::kRead) return OpenSqliteStoreForReading(location);
    return OpenSqliteStore(location);
  }
#ifdef DLBENCH_HAVE_POSTGRES
  PostgresStore::Options pg_options;
  pg_options.create = options.mode == OpenMode::kCreate;
  if (options.retry_s) {
    pg_options.retry_s = *options.retry_s;
  } else {
    auto window = RetryWindowFromEnvironment();
    if (!window.ok()) return window.error();
    pg_options.retry_s = *window;
  }
  auto store = PostgresStore::Open(location, pg_options);
  if (!store.ok()) return store.error();
  if (options.mode != OpenMode::kCreate || !options.spill)
    return std::unique_ptr<ResultStore>(std::move(*store));
  const std::string spill_dir = options.spill_dir ? *options.spill_dir : DefaultSpillDir(location);
  // Made now rather than at the first spill: a folder that cannot be made shows at the start of a
  // run, not when a finished cell needs it.
  if (Status made = MakeDirs(spill_dir); !made.ok()) {
    return MakeError(ErrorKind::kIo, made.error().message +
                                         "; it keeps the cells a lost PostgreSQL server could not take (set "
                                         "$DLBENCH_SPILL_DIR to another folder)");
  }
  return std::unique_ptr<ResultStore>(std::make_unique<SpillingStore>(std::move(*store), spill_dir));
#else
  return MakeError(ErrorKind::kUnsupported,
                   "'" + DisplayLocation(location) +
                       "' names a PostgreSQL store, but this dlbench was built without "
                       "libpq (install libpq-dev, scripts/setup-debian.sh, and rebuild)");
#endif
}

}  // namespace dlbench::store
