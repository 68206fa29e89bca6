// The error model of dlbench (docs/adr/0002-error-model.md).
//
// Expected failures (bad YAML, a missing model, no GPU driver, a database that cannot be opened)
// are values: a function that can fail that way returns Result<T> or Status and its caller decides.
// Programmer errors (a broken invariant) are DLBENCH_CHECK failures that abort with a message.
// Exceptions from third-party libraries (yaml-cpp, LibTorch, nlohmann::json) are caught at the
// edge of the module that calls them and turned into an Error.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace dlbench {

enum class ErrorKind {
  kInvalidInput,  // the user's input is wrong: a config, an argument, a file's contents
  kNotFound,      // a named thing does not exist: a run id, a file, a model
  kIo,            // the OS refused: open, read, write, spawn
  kUnsupported,   // valid, but this build or machine cannot do it
  kProtocol,      // a peer broke the runner protocol
  kStore,         // the database refused
  kUnavailable,   // a server the command needs (the database) cannot be reached now; later may work
  kInternal,      // a bug reached as a value (should not happen)
};

const char* ErrorKindName(ErrorKind kind);

struct Error {
  ErrorKind kind = ErrorKind::kInternal;
  std::string message;
};

inline Error MakeError(ErrorKind kind, std::string message) { return Error{kind, std::move(message)}; }

// Result<T> holds a T or an Error. Access to the wrong alternative is a programmer error.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & {
    Check();
    return std::get<0>(v_);
  }
  const T& value() const& {
    Check();
    return std::get<0>(v_);
  }
  T&& value() && {
    Check();
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const Error& error() const {
    if (ok()) Fail("Result::error() called on a value");
    return std::get<1>(v_);
  }

 private:
  void Check() const {
    if (!ok()) Fail(std::get<1>(v_).message.c_str());
  }
  [[noreturn]] static void Fail(const char* what) {
    std::fprintf(stderr, "dlbench: Result accessed wrongly: %s\n", what);
    std::abort();
  }
  std::variant<T, Error> v_;
};

// Status is a Result with no value: Ok() or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design
  static Status Ok() { return Status(); }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

[[noreturn]] void CheckFailed(const char* file, int line, const char* condition, const std::string& message);

}  // namespace dlbench

// DLBENCH_CHECK(cond) << nothing: a broken invariant is a bug; abort with file:line and reason.
#define DLBENCH_CHECK(cond, message)                                           \
  do {                                                                         \
    if (!(cond)) ::dlbench::CheckFailed(__FILE__, __LINE__, #cond, (message)); \
  } while (0)

// Propagate an error from a Status or Result expression.
#define DLBENCH_RETURN_IF_ERROR(expr)                          \
  do {                                                         \
    auto _dlbench_status = (expr);                             \
    if (!_dlbench_status.ok()) return _dlbench_status.error(); \
  } while (0)
