#include "common/error.h"

namespace dlbench {

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidInput:
      return "invalid input";
    case ErrorKind::kNotFound:
      return "not found";
    case ErrorKind::kIo:
      return "I/O error";
    case ErrorKind::kUnsupported:
      return "unsupported";
    case ErrorKind::kProtocol:
      return "protocol error";
    case ErrorKind::kStore:
      return "store error";
    case ErrorKind::kUnavailable:
      return "unavailable";
    case ErrorKind::kInternal:
      return "internal error";
  }
  return "error";
}

void CheckFailed(const char* file, int line, const char* condition, const std::string& message) {
  std::fprintf(stderr, "dlbench: check failed at %s:%d: %s (%s)\n", file, line, condition, message.c_str());
  std::abort();
}

}  // namespace dlbench
