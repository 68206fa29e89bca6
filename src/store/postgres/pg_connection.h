// A small RAII layer over libpq's C API (docs/adr/0007-postgres-through-libpq.md): Connection (one PGconn),
// Rows (one PGresult), Params (the values of one statement) and Transaction (rolls back unless committed).
//
// Every value reaches SQL through a parameter of PQexecParams (or as data of a COPY stream in
// COPY's text format); the SQL text itself is always a constant of the program. Results are
// read in text format.
//
// Failures are Status/Result values whose message names the server by its masked URL
// (credentials never appear: common/credentials.h), libpq's or the server's message on one line,
// and the statement's text (never the bound values). Their kind is kUnavailable when the
// connection is gone or the server is shutting down or starting (SQLSTATE class 08, 57P01-57P03):
// the same call on a new connection may work, and PostgresStore retries it. Anything else the
// server refuses is kStore.
//
// A Connection and its results are used by one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

struct pg_conn;
struct pg_result;

namespace dlbench::store::pg {

// The values of one statement's $1, $2, ... in order, as text. NaN is sent as NULL (as the SQLite
// store does) and the infinities as 'Infinity'/'-Infinity'; doubles are written with the fewest
// digits that read back to the same value. Text is sent as valid UTF-8 (Utf8ForPostgres).
class Params {
 public:
  Params& Add(std::int64_t value);
  Params& Add(int value) { return Add(static_cast<std::int64_t>(value)); }
  Params& Add(std::uint32_t value) { return Add(static_cast<std::int64_t>(value)); }
  Params& Add(double value);
  Params& Add(std::string_view value);
  Params& Add(const char* value) { return Add(std::string_view(value)); }
  Params& Add(const std::string& value) { return Add(std::string_view(value)); }
  Params& Add(std::nullopt_t);
  Params& Add(const std::optional<std::int64_t>& value);

  int size() const { return static_cast<int>(text_.size()); }
  // Pointers for PQexecParams, valid until the next Add.
  std::vector<const char*> Pointers() const;

 private:
  std::vector<std::string> text_;
  std::vector<bool> null_;
};

// One result set; rows and columns are 0-based.
class Rows {
 public:
  Rows() = default;
  explicit Rows(pg_result* result) : result_(result) {}
  Rows(Rows&& other) noexcept;
  Rows& operator=(Rows&& other) noexcept;
  Rows(const Rows&) = delete;
  Rows& operator=(const Rows&) = delete;
  ~Rows();

  int size() const;
  bool IsNull(int row, int column) const;
  std::string Text(int row, int column) const;  // NULL reads as ""
  // Integer and double columns as the server wrote them; a value that does not parse reads as 0
  // (the columns these are used on are BIGINT/INTEGER/DOUBLE PRECISION, so it cannot happen).
  std::int64_t Int64(int row, int column) const;
  std::optional<std::int64_t> OptionalInt64(int row, int column) const;
  double DoubleOrNan(int row, int column) const;  // NULL reads as NaN

 private:
  pg_result* result_ = nullptr;
};

class Connection {
 public:
  // Connects to the PostgreSQL server named by `url` (postgresql://... or postgres://..., libpq's
  // URI syntax). dlbench's defaults come first so the URL can override them: connect_timeout 10 s,
  // TCP keepalives (idle 10 s, interval 5 s, 3 probes) and tcp_user_timeout 30 s so a silently
  // dropped network is noticed, application_name dlbench; client_encoding is always UTF8.
  // kInvalidInput for a malformed URL; kUnavailable when the server cannot be reached (refused,
  // timed out, starting up, shutting down); kStore for anything else (authentication, a database
  // that does not exist). Notices from the server are not printed.
  static Result<Connection> Open(const std::string& url);

  Connection() = default;
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();

  // Runs one statement (constant `sql`, values in `params`) and returns its rows (none for a
  // statement that returns none).
  Result<Rows> Query(std::string_view sql, const Params& params = Params());
  Status Execute(std::string_view sql, const Params& params = Params()) {
    auto rows = Query(sql, params);
    return rows.ok() ? Status::Ok() : Status(rows.error());
  }
  // `copy_sql` is COPY ... FROM STDIN; `data` its rows in COPY's text format (CopyField escapes).
  Status CopyIn(std::string_view copy_sql, std::string_view data);
  // True when libpq knows the connection is gone (the next call would fail).
  bool broken() const;
  // The server's version as libpq reports it: 150018 for 15.18.
  int server_version() const;
  // The URL with its password masked: what messages call the server.
  const std::string& display() const { return display_; }
  // The secrets of the URL this connection was opened with, for scrubbing libpq's messages.
  const std::vector<std::string>& secrets() const { return secrets_; }

 private:
  Connection(pg_conn* conn, std::string display, std::vector<std::string> secrets)
      : conn_(conn), display_(std::move(display)), secrets_(std::move(secrets)) {}
  // An error for the failed `sql`: `result` may be null (libpq's message is then the reason).
  Error MakeFailure(pg_result* result, std::string_view sql) const;

  pg_conn* conn_ = nullptr;
  std::string display_;
  std::vector<std::string> secrets_;
};

// BEGIN in Begin(); ROLLBACK in the destructor unless Commit() succeeded (nothing is sent on a
// broken connection: the server has already rolled back).
class Transaction {
 public:
  enum class Mode {
    kReadWrite,         // READ COMMITTED; writers lock the rows they depend on
    kReadOnlySnapshot,  // REPEATABLE READ, READ ONLY: several reads see one snapshot
  };
  static Result<Transaction> Begin(Connection& connection, Mode mode);

  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  Status Commit();

 private:
  explicit Transaction(Connection* connection) : connection_(connection) {}
  Connection* connection_ = nullptr;  // null once committed, rolled back or moved from
};

// `text` as valid UTF-8 without NUL, which PostgreSQL's TEXT requires: each byte that does not
// start or continue a valid sequence, and each NUL, becomes U+FFFD. Valid text comes back as is.
std::string Utf8ForPostgres(std::string_view text);

// Appends `field` to `out` escaped for COPY's text format (backslash, tab, newline, carriage
// return), after Utf8ForPostgres.
void AppendCopyField(std::string& out, std::string_view field);
}  // namespace dlbench::store::pg
