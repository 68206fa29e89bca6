// A small RAII layer over the sqlite3 C API: Database (one connection), Statement (one prepared
// statement with typed binds) and Transaction (rolls back unless committed).
//
// Every value reaches SQL through a bound parameter; the SQL text itself is always a constant of
// the program. Failures are Status/Result values of kind kStore whose message names the database
// file, the SQLite error and the statement (its text, never the bound values).
//
// A Database and its Statements are used by one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace dlbench::store::sqlite {

class Statement {
 public:
  Statement() = default;
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Binds parameter `index` (1-based, as in SQLite). A bind that fails (an index out of range)
  // is remembered and reported by the next Step()/Run(), so calls can be chained without checks.
  // There is deliberately no overload for uint64: callers choose text or a reinterpretation.
  Statement& Bind(int index, std::int64_t value);
  Statement& Bind(int index, int value) { return Bind(index, static_cast<std::int64_t>(value)); }
  Statement& Bind(int index, std::uint32_t value) { return Bind(index, static_cast<std::int64_t>(value)); }
  // NaN is bound as NULL (SQLite has no NaN); read it back with OptionalDouble/DoubleOrNan.
  Statement& Bind(int index, double value);
  Statement& Bind(int index, std::string_view value);  // as TEXT, embedded NULs kept
  Statement& Bind(int index, std::nullopt_t);
  Statement& Bind(int index, const std::optional<std::int64_t>& value);

  // Advances: true when a row is available, false when the statement is done.
  Result<bool> Step();
  // Steps to completion (rows, if any, are discarded) and resets for the next use.
  Status Run();
  // Makes the statement ready to run again; bindings are kept until rebound.
  void Reset();

  // Column accessors for the current row (0-based, as in SQLite).
  bool IsNull(int column) const;
  std::int64_t Int64(int column) const;
  std::optional<std::int64_t> OptionalInt64(int column) const;
  double Double(int column) const;
  double DoubleOrNan(int column) const;  // NULL reads as NaN (see Bind(double))
  std::string Text(int column) const;    // NULL reads as ""

  const char* sql() const;

 private:
  friend class Database;
  Statement(sqlite3_stmt* stmt, std::string db_path) : stmt_(stmt), db_path_(std::move(db_path)) {}
  void NoteBindResult(int rc, int index);
  Error MakeStepError(int rc) const;

  sqlite3_stmt* stmt_ = nullptr;
  std::string db_path_;
  std::optional<Error> bind_error_;
};

// How Database::Open opens a file.
enum class OpenMode {
  kReadWrite,  // creates the file when absent
  // Never writes: SQLITE_OPEN_READONLY. A WAL database is read with its -wal file, which needs a
  // -shm file that SQLite can create or that exists already.
  kReadOnly,
  // `immutable=1`: SQLite takes the file as unchangeable: no locks, no -wal or -shm, so it can be
  // read where nothing can be created (a read-only filesystem). Commits still in a -wal file are
  // not seen, and a process writing the file meanwhile would be read inconsistently: only for a
  // file nobody can write.
  kImmutable,
};

class Database {
 public:
  // Opens the database file at `path` (kReadWrite creates it when absent). A missing directory or a
  // file that is not a SQLite database is a kStore error saying so. A statement that finds the
  // database locked retries for up to `busy_timeout_ms` before failing. No pragma is set here; the
  // caller decides.
  static Result<Database> Open(const std::string& path, int busy_timeout_ms = 10'000,
                               OpenMode mode = OpenMode::kReadWrite);

  Database() = default;
  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  // Prepares exactly one SQL statement (trailing text other than whitespace is a kInternal error).
  Result<Statement> Prepare(std::string_view sql);
  // Prepares and runs one statement that takes no parameters (DDL, PRAGMA), discarding rows.
  Status Execute(std::string_view sql);
  // Runs a one-row, one-column query that takes no parameters and returns the value as text.
  Result<std::string> QueryText(std::string_view sql);
  // QueryText for a statement that needs an exclusive lock outside any transaction, such as
  // `PRAGMA journal_mode = WAL`: SQLite answers SQLITE_BUSY at once, without waiting through the
  // busy timeout, while another connection holds a lock (processes opening a new file together).
  // Retries with growing pauses for up to the busy timeout given to Open.
  Result<std::string> QueryTextWaitingForLocks(std::string_view sql);

  // Whether the connection cannot write (opened read-only or immutable, or SQLite fell back to
  // read-only because the file could not be opened for writing).
  bool ReadOnly() const;

  std::int64_t LastInsertRowId() const;
  int Changes() const;  // rows changed by the last INSERT/UPDATE/DELETE
  const std::string& path() const { return path_; }

 private:
  Database(sqlite3* db, std::string path, int busy_timeout_ms)
      : db_(db), path_(std::move(path)), busy_timeout_ms_(busy_timeout_ms) {}
  sqlite3* db_ = nullptr;
  std::string path_;
  int busy_timeout_ms_ = 0;
};

// BEGIN on construction through Begin(); ROLLBACK in the destructor unless Commit() succeeded.
class Transaction {
 public:
  enum class Mode {
    kDeferred,   // takes the write lock only when it first writes (read-only transactions)
    kImmediate,  // takes the write lock at BEGIN, so a writer never fails to upgrade mid-way
  };
  static Result<Transaction> Begin(Database& db, Mode mode);

  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  Status Commit();

 private:
  explicit Transaction(Database* db) : db_(db) {}
  Database* db_ = nullptr;  // null once committed, rolled back or moved from
};

}  // namespace dlbench::store::sqlite
