#include "store/postgres/pg_connection.h"

#include <fmt/core.h>
#include <libpq-fe.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/credentials.h"

namespace dlbench::store::pg {
namespace {

// libpq's messages end with a newline and continue on tab-indented lines; ours are one line.
std::string OneLine(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t') {
      space = true;
      continue;
    }
    if (space && !out.empty() && out.back() != ' ') out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// The start of a statement's text for messages: one line, at most 160 characters.
std::string StatementHead(std::string_view sql) {
  std::string line = OneLine(sql);
  std::string collapsed;
  for (char c : line) {
    if (c == ' ' && !collapsed.empty() && collapsed.back() == ' ') continue;
    collapsed.push_back(c);
  }
  if (collapsed.size() > 160) collapsed = collapsed.substr(0, 157) + "...";
  return collapsed;
}

// Connection failures that say nothing about the server being unreachable: retrying them cannot
// help, so they are kStore rather than kUnavailable.
bool IsPermanentConnectFailure(std::string_view message) {
  for (const char* marker : {"authentication", "password", "does not exist", "permission denied",
                             "no pg_hba.conf entry", "invalid", "unsupported", "certificate", "SSL"}) {
    if (message.find(marker) != std::string_view::npos) return true;
  }
  return false;
}

bool IsUnavailableState(const char* sqlstate) {
  if (sqlstate == nullptr) return false;
  const std::string_view state(sqlstate);
  return state.rfind("08", 0) == 0 || state == "57P01" || state == "57P02" || state == "57P03";
}

void IgnoreNotice(void*, const char*) {}

}  // namespace

Params& Params::Add(std::int64_t value) {
  text_.push_back(std::to_string(value));
  null_.push_back(false);
  return *this;
}

Params& Params::Add(double value) {
  if (std::isnan(value)) return Add(std::nullopt);
  if (std::isinf(value)) {
    text_.emplace_back(value > 0 ? "Infinity" : "-Infinity");
  } else {
    text_.push_back(fmt::format("{}", value));
  }
  null_.push_back(false);
  return *this;
}

Params& Params::Add(std::string_view value) {
  text_.push_back(Utf8ForPostgres(value));
  null_.push_back(false);
  return *this;
}

Params& Params::Add(std::nullopt_t) {
  text_.emplace_back();
  null_.push_back(true);
  return *this;
}

Params& Params::Add(const std::optional<std::int64_t>& value) {
  return value ? Add(*value) : Add(std::nullopt);
}

std::vector<const char*> Params::Pointers() const {
  std::vector<const char*> pointers(text_.size());
  for (std::size_t i = 0; i < text_.size(); ++i) pointers[i] = null_[i] ? nullptr : text_[i].c_str();
  return pointers;
}

Rows::Rows(Rows&& other) noexcept : result_(other.result_) { other.result_ = nullptr; }

Rows& Rows::operator=(Rows&& other) noexcept {
  if (this != &other) {
    if (result_ != nullptr) PQclear(result_);
    result_ = other.result_;
    other.result_ = nullptr;
  }
  return *this;
}

Rows::~Rows() {
  if (result_ != nullptr) PQclear(result_);
}

int Rows::size() const { return result_ == nullptr ? 0 : PQntuples(result_); }

bool Rows::IsNull(int row, int column) const { return PQgetisnull(result_, row, column) != 0; }

std::string Rows::Text(int row, int column) const {
  if (IsNull(row, column)) return "";
  return std::string(PQgetvalue(result_, row, column),
                     static_cast<std::size_t>(PQgetlength(result_, row, column)));
}

std::int64_t Rows::Int64(int row, int column) const {
  const char* text = PQgetvalue(result_, row, column);
  const std::size_t length = static_cast<std::size_t>(PQgetlength(result_, row, column));
  std::int64_t value = 0;
  std::from_chars(text, text + length, value);
  return value;
}

std::optional<std::int64_t> Rows::OptionalInt64(int row, int column) const {
  if (IsNull(row, column)) return std::nullopt;
  return Int64(row, column);
}

double Rows::DoubleOrNan(int row, int column) const {
  if (IsNull(row, column)) return std::nan("");
  return std::strtod(PQgetvalue(result_, row, column), nullptr);
}

Result<Connection> Connection::Open(const std::string& url) {
  std::string display = MaskPasswords(url);
  std::vector<std::string> secrets = UrlPasswords(url);
  char* parse_error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(url.c_str(), &parse_error);
  if (parsed == nullptr) {
    std::string why = parse_error != nullptr ? OneLine(parse_error) : "libpq could not parse it";
    if (parse_error != nullptr) PQfreemem(parse_error);
    return MakeError(
        ErrorKind::kInvalidInput,
        "invalid PostgreSQL URL '" + display + "': " + ScrubSecrets(why, secrets) +
            " (expected postgresql://[user[:password]@][host][:port][/dbname][?param=value...])");
  }
  PQconninfoFree(parsed);

  // Defaults before "dbname" (which expands the URL): libpq keeps the last value of a keyword, so
  // the URL's own settings win. client_encoding comes after: the store writes UTF-8.
  const char* keywords[] = {"connect_timeout",           "keepalives",
                            "keepalives_idle",           "keepalives_interval",
                            "keepalives_count",          "tcp_user_timeout",
                            "fallback_application_name", "dbname",
                            "client_encoding",           nullptr};
  const char* values[] = {"10", "1", "10", "5", "3", "30000", "dlbench", url.c_str(), "UTF8", nullptr};
  PGconn* conn = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (conn == nullptr)
    return MakeError(ErrorKind::kUnavailable,
                     "cannot connect to PostgreSQL at " + display + ": out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    const std::string why = ScrubSecrets(OneLine(PQerrorMessage(conn)), secrets);
    PQfinish(conn);
    return MakeError(IsPermanentConnectFailure(why) ? ErrorKind::kStore : ErrorKind::kUnavailable,
                     "cannot connect to PostgreSQL at " + display + ": " + why);
  }
  PQsetNoticeProcessor(conn, IgnoreNotice, nullptr);
  return Connection(conn, std::move(display), std::move(secrets));
}

Connection::Connection(Connection&& other) noexcept
    : conn_(other.conn_), display_(std::move(other.display_)), secrets_(std::move(other.secrets_)) {
  other.conn_ = nullptr;
}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    if (conn_ != nullptr) PQfinish(conn_);
    conn_ = other.conn_;
    display_ = std::move(other.display_);
    secrets_ = std::move(other.secrets_);
    other.conn_ = nullptr;
  }
  return *this;
}

Connection::~Connection() {
  if (conn_ != nullptr) PQfinish(conn_);
}

bool Connection::broken() const { return conn_ == nullptr || PQstatus(conn_) == CONNECTION_BAD; }

int Connection::server_version() const { return conn_ == nullptr ? 0 : PQserverVersion(conn_); }

Error Connection::MakeFailure(pg_result* result, std::string_view sql) const {
  const char* sqlstate = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  std::string why = result != nullptr ? PQresultErrorMessage(result) : "";
  if (why.empty() && conn_ != nullptr) why = PQerrorMessage(conn_);
  if (why.empty()) why = "no connection";
  const bool unavailable = broken() || IsUnavailableState(sqlstate);
  return MakeError(unavailable ? ErrorKind::kUnavailable : ErrorKind::kStore,
                   "PostgreSQL " + display_ + ": " + ScrubSecrets(OneLine(why), secrets_) +
                       " (in: " + StatementHead(sql) + ")");
}

Result<Rows> Connection::Query(std::string_view sql, const Params& params) {
  if (conn_ == nullptr) return MakeFailure(nullptr, sql);
  const std::string text(sql);
  const std::vector<const char*> values = params.Pointers();
  PGresult* result =
      PQexecParams(conn_, text.c_str(), params.size(), nullptr, values.data(), nullptr, nullptr,
                   /*resultFormat=*/0);
  const ExecStatusType status = result != nullptr ? PQresultStatus(result) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return Rows(result);
  Error error = MakeFailure(result, sql);
  if (result != nullptr) PQclear(result);
  return error;
}

Status Connection::CopyIn(std::string_view copy_sql, std::string_view data) {
  if (conn_ == nullptr) return MakeFailure(nullptr, copy_sql);
  const std::string text(copy_sql);
  PGresult* start = PQexec(conn_, text.c_str());
  if (start == nullptr || PQresultStatus(start) != PGRES_COPY_IN) {
    Error error = MakeFailure(start, copy_sql);
    if (start != nullptr) PQclear(start);
    return error;
  }
  PQclear(start);
  // Chunks keep libpq's send buffer small; the server sees one stream either way.
  constexpr std::size_t kChunk = 1 << 20;
  bool sent = true;
  for (std::size_t offset = 0; offset < data.size() && sent; offset += kChunk) {
    const std::size_t n = std::min(kChunk, data.size() - offset);
    sent = PQputCopyData(conn_, data.data() + offset, static_cast<int>(n)) == 1;
  }
  if (PQputCopyEnd(conn_, sent ? nullptr : "dlbench could not send the rows") != 1) sent = false;
  std::optional<Error> failure;
  while (PGresult* result = PQgetResult(conn_)) {
    if (PQresultStatus(result) != PGRES_COMMAND_OK && !failure) failure = MakeFailure(result, copy_sql);
    PQclear(result);
  }
  if (failure) return *failure;
  if (!sent) return MakeFailure(nullptr, copy_sql);
  return Status::Ok();
}

Result<Transaction> Transaction::Begin(Connection& connection, Mode mode) {
  DLBENCH_RETURN_IF_ERROR(connection.Execute(mode == Mode::kReadWrite
                                                 ? "BEGIN ISOLATION LEVEL READ COMMITTED"
                                                 : "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"));
  return Transaction(&connection);
}

Transaction::Transaction(Transaction&& other) noexcept : connection_(other.connection_) {
  other.connection_ = nullptr;
}

Transaction::~Transaction() {
  if (connection_ != nullptr && !connection_->broken()) (void)connection_->Execute("ROLLBACK");
}

Status Transaction::Commit() {
  Connection* connection = connection_;
  connection_ = nullptr;
  DLBENCH_CHECK(connection != nullptr, "a transaction is committed once");
  return connection->Execute("COMMIT");
}

std::string Utf8ForPostgres(std::string_view text) {
  // The length of the valid UTF-8 sequence starting at i, or 0 (RFC 3629: no overlong forms, no
  // surrogates, nothing above U+10FFFF).
  auto sequence = [&](std::size_t i) -> std::size_t {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char b0 = byte(i);
    if (b0 == 0) return 0;
    if (b0 < 0x80) return 1;
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      n = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      n = 3;
      if (b0 == 0xE0) lo = 0xA0;
      if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      n = 4;
      if (b0 == 0xF0) lo = 0x90;
      if (b0 == 0xF4) hi = 0x8F;
    } else {
      return 0;
    }
    if (i + n > text.size()) return 0;
    if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
    for (std::size_t k = 2; k < n; ++k) {
      if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
    }
    return n;
  };
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t n = sequence(i);
    if (n == 0) break;
    i += n;
  }
  if (i == text.size()) return std::string(text);
  std::string out(text.substr(0, i));
  while (i < text.size()) {
    const std::size_t n = sequence(i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

void AppendCopyField(std::string& out, std::string_view field) {
  const std::string valid = Utf8ForPostgres(field);
  for (char c : valid) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out.push_back(c);
    }
  }
}

}  // namespace dlbench::store::pg
