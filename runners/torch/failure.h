// How the torch runner turns an exception from LibTorch into the protocol's ERROR: the kind
// (oom, invalid, unsupported, internal), a message without C++ backtraces, and details such as
// the bytes an out-of-memory allocation asked for.
#pragma once

#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "protocol/runner_session.h"

namespace dlbench::torchrunner {

// Thrown while building a cell for a valid request that this runner cannot do; becomes ERROR
// kind unsupported.
class UnsupportedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Failure {
  record::RunnerErrorKind kind = record::RunnerErrorKind::kInternal;
  std::string message;
  nlohmann::json details = nlohmann::json::object();
};

// Bytes from the CUDA allocator's "Tried to allocate 20.00 MiB" (B, KiB, MiB, GiB, TiB; also the
// decimal KB/MB/GB) or the CPU allocator's "you tried to allocate 123 bytes"; nullopt when the
// message has neither.
std::optional<std::int64_t> ParseRequestedBytes(const std::string& message);

// Whether an exception message is an allocator's out-of-memory report: CUDA's "out of memory",
// LibTorch's CPU allocator "not enough memory" (2.x) or "can't allocate memory" (1.13).
bool IsOutOfMemoryMessage(const std::string& message);

// Classification by message text, for exceptions whose type does not say enough (1.13 reports
// CUDA OOM as a plain c10::Error; the CPU allocator says "not enough memory"): either -> kOom with
// requested_bytes when found; "does not have a deterministic implementation" -> kUnsupported; batch
// normalisation's "Expected more than 1 value per channel when training" (batch_size 1 on a 1x1 map) ->
// kUnsupported; otherwise `fallback`.
Failure ClassifyMessage(const std::string& message, record::RunnerErrorKind fallback);

// The Failure for the exception in flight (call from a catch block) or for `error`.
Failure ClassifyException(std::exception_ptr error);

}  // namespace dlbench::torchrunner
