#include "store/sqlite_db.h"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <thread>
#include <utility>

namespace dlbench::store::sqlite {
namespace {

Error StoreError(const std::string& db_path, const std::string& what) {
  return MakeError(ErrorKind::kStore, "SQLite database '" + db_path + "': " + what);
}

std::string ErrorText(sqlite3* db, int rc) {
  // The connection's message is more specific than the code's ("no such table: x"), but only
  // when it belongs to this error.
  if (db != nullptr && sqlite3_extended_errcode(db) == rc) return sqlite3_errmsg(db);
  return sqlite3_errstr(rc);
}

bool OnlyWhitespace(const char* begin, const char* end) {
  for (const char* p = begin; p < end; ++p) {
    if (!std::isspace(static_cast<unsigned char>(*p))) return false;
  }
  return true;
}

}  // namespace

// ---- Statement -------------------------------------------------------------------------------

Statement::Statement(Statement&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)),
      db_path_(std::move(other.db_path_)),
      bind_error_(std::move(other.bind_error_)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
    db_path_ = std::move(other.db_path_);
    bind_error_ = std::move(other.bind_error_);
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::NoteBindResult(int rc, int index) {
  if (rc == SQLITE_OK || bind_error_) return;
  bind_error_ = StoreError(db_path_, "cannot bind parameter " + std::to_string(index) + ": " +
                                         sqlite3_errstr(rc) + " (in: " + sql() + ")");
}

Statement& Statement::Bind(int index, std::int64_t value) {
  NoteBindResult(sqlite3_bind_int64(stmt_, index, value), index);
  return *this;
}

Statement& Statement::Bind(int index, double value) {
  if (std::isnan(value)) return Bind(index, std::nullopt);
  NoteBindResult(sqlite3_bind_double(stmt_, index, value), index);
  return *this;
}

Statement& Statement::Bind(int index, std::string_view value) {
  // SQLITE_TRANSIENT: SQLite copies the bytes, so the caller's string may die before Step().
  NoteBindResult(sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
                 index);
  return *this;
}

Statement& Statement::Bind(int index, std::nullopt_t) {
  NoteBindResult(sqlite3_bind_null(stmt_, index), index);
  return *this;
}

Statement& Statement::Bind(int index, const std::optional<std::int64_t>& value) {
  return value ? Bind(index, *value) : Bind(index, std::nullopt);
}

Error Statement::MakeStepError(int rc) const {
  sqlite3* db = sqlite3_db_handle(stmt_);
  return StoreError(db_path_, ErrorText(db, rc) + " (in: " + sql() + ")");
}

Result<bool> Statement::Step() {
  if (bind_error_) {
    Error error = *bind_error_;
    bind_error_.reset();
    return error;
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Error error = MakeStepError(rc);
  // A failed statement must be reset before it can run again; the error is already captured.
  sqlite3_reset(stmt_);
  return error;
}

Status Statement::Run() {
  for (;;) {
    auto row = Step();
    if (!row.ok()) return row.error();
    if (!*row) break;
  }
  sqlite3_reset(stmt_);
  return Status::Ok();
}

void Statement::Reset() { sqlite3_reset(stmt_); }

bool Statement::IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

std::int64_t Statement::Int64(int column) const { return sqlite3_column_int64(stmt_, column); }

std::optional<std::int64_t> Statement::OptionalInt64(int column) const {
  if (IsNull(column)) return std::nullopt;
  return Int64(column);
}

double Statement::Double(int column) const { return sqlite3_column_double(stmt_, column); }

double Statement::DoubleOrNan(int column) const {
  if (IsNull(column)) return std::numeric_limits<double>::quiet_NaN();
  return Double(column);
}

std::string Statement::Text(int column) const {
  // The pointer first, then the size: sqlite3_column_text may convert the value, which changes
  // the byte count (SQLite's documented calling order).
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  int size = sqlite3_column_bytes(stmt_, column);
  if (text == nullptr) return std::string();
  return std::string(reinterpret_cast<const char*>(text), static_cast<std::size_t>(size));
}

const char* Statement::sql() const {
  const char* text = stmt_ != nullptr ? sqlite3_sql(stmt_) : nullptr;
  return text != nullptr ? text : "";
}

// ---- Database --------------------------------------------------------------------------------

namespace {

// A file: URI for `path` (https://sqlite.org/uri.html): absolute, with the characters a URI gives a
// meaning percent-encoded.
std::string FileUri(const std::string& path, const char* query) {
  std::error_code ec;
  std::string absolute = std::filesystem::absolute(path, ec).string();
  if (ec) absolute = path;
  std::string uri = "file://";
  for (char c : absolute) {
    switch (c) {
      case '%':
        uri += "%25";
        break;
      case '?':
        uri += "%3f";
        break;
      case '#':
        uri += "%23";
        break;
      default:
        uri += c;
    }
  }
  return uri + "?" + query;
}

}  // namespace

Result<Database> Database::Open(const std::string& path, int busy_timeout_ms, OpenMode mode) {
  if (path.empty()) return MakeError(ErrorKind::kStore, "the SQLite database path is empty");
  if (path != ":memory:") {
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
      return StoreError(path, "cannot create it: the directory '" + parent.string() + "' does not exist");
    }
    if (std::filesystem::is_directory(path, ec)) {
      return StoreError(path, "cannot open it: it is a directory");
    }
  }
  sqlite3* raw = nullptr;
  // NOMUTEX: a connection is used by one thread at a time (sqlite_db.h), so SQLite's per-call
  // mutex would be pure overhead on the million-row step inserts.
  int rc = SQLITE_OK;
  if (mode == OpenMode::kReadWrite || path == ":memory:") {
    rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                         nullptr);
  } else {
    const std::string uri = FileUri(path, mode == OpenMode::kImmutable ? "immutable=1" : "mode=ro");
    rc = sqlite3_open_v2(uri.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                         nullptr);
  }
  // sqlite3_open_v2 allocates a handle even when it fails; the Database owns it either way.
  Database db(raw, path, busy_timeout_ms);
  if (rc != SQLITE_OK) return StoreError(path, "cannot open it: " + ErrorText(raw, rc));
  sqlite3_extended_result_codes(raw, 1);
  // Before the first read: a writer in another process may hold a lock right now.
  sqlite3_busy_timeout(raw, busy_timeout_ms);

  // SQLite opens lazily: a file that is not a database is only noticed at the first read.
  auto probe = db.Prepare("SELECT count(*) FROM sqlite_master");
  if (!probe.ok()) {
    if (sqlite3_errcode(raw) == SQLITE_NOTADB) {
      return StoreError(path, "the file exists but is not a SQLite database");
    }
    return probe.error();
  }
  auto row = probe->Step();
  if (!row.ok()) {
    if (sqlite3_errcode(raw) == SQLITE_NOTADB) {
      return StoreError(path, "the file exists but is not a SQLite database");
    }
    return row.error();
  }
  return db;
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      path_(std::move(other.path_)),
      busy_timeout_ms_(other.busy_timeout_ms_) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
    busy_timeout_ms_ = other.busy_timeout_ms_;
  }
  return *this;
}

// close_v2: if a Statement outlives its Database by mistake, the connection closes when the
// last statement is finalized instead of failing with SQLITE_BUSY.
Database::~Database() { sqlite3_close_v2(db_); }

Result<Statement> Database::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, &tail);
  if (rc != SQLITE_OK) {
    return StoreError(path_, ErrorText(db_, rc) + " (preparing: " + std::string(sql) + ")");
  }
  Statement statement(stmt, path_);
  if (stmt == nullptr) {
    return MakeError(ErrorKind::kInternal, "empty SQL statement: '" + std::string(sql) + "'");
  }
  if (tail != nullptr && !OnlyWhitespace(tail, sql.data() + sql.size())) {
    return MakeError(ErrorKind::kInternal, "more than one SQL statement in: " + std::string(sql));
  }
  return statement;
}

Status Database::Execute(std::string_view sql) {
  auto stmt = Prepare(sql);
  if (!stmt.ok()) return stmt.error();
  return stmt->Run();
}

Result<std::string> Database::QueryText(std::string_view sql) {
  auto stmt = Prepare(sql);
  if (!stmt.ok()) return stmt.error();
  auto row = stmt->Step();
  if (!row.ok()) return row.error();
  if (!*row) return StoreError(path_, "no row from: " + std::string(sql));
  return stmt->Text(0);
}

Result<std::string> Database::QueryTextWaitingForLocks(std::string_view sql) {
  auto stmt = Prepare(sql);
  if (!stmt.ok()) return stmt.error();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms_);
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    const int rc = sqlite3_step(stmt->stmt_);
    if (rc == SQLITE_ROW) return stmt->Text(0);
    const bool busy = (rc & 0xff) == SQLITE_BUSY;
    if (!busy || std::chrono::steady_clock::now() >= deadline) {
      if (rc == SQLITE_DONE) return StoreError(path_, "no row from: " + std::string(sql));
      Error error = stmt->MakeStepError(rc);
      sqlite3_reset(stmt->stmt_);
      return error;
    }
    sqlite3_reset(stmt->stmt_);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

bool Database::ReadOnly() const { return sqlite3_db_readonly(db_, "main") == 1; }

std::int64_t Database::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }

int Database::Changes() const { return sqlite3_changes(db_); }

// ---- Transaction -----------------------------------------------------------------------------

Result<Transaction> Transaction::Begin(Database& db, Mode mode) {
  DLBENCH_RETURN_IF_ERROR(db.Execute(mode == Mode::kImmediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED"));
  return Transaction(&db);
}

Transaction::Transaction(Transaction&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}

Transaction::~Transaction() {
  if (db_ == nullptr) return;
  // A rollback can only fail when there is no transaction left to undo (SQLite already rolled
  // it back after an I/O error), so its status carries nothing the caller could act on.
  (void)db_->Execute("ROLLBACK");
}

Status Transaction::Commit() {
  DLBENCH_CHECK(db_ != nullptr, "Commit() on a finished transaction");
  Status status = db_->Execute("COMMIT");
  if (status.ok()) db_ = nullptr;
  return status;
}

}  // namespace dlbench::store::sqlite
