#include "failure.h"

#include <c10/util/Exception.h>

#include <cmath>
#include <new>
#include <regex>

namespace dlbench::torchrunner {

std::optional<std::int64_t> ParseRequestedBytes(const std::string& message) {
  // LibTorch's CPU allocator: "...: you tried to allocate 4398046511104 bytes."
  static const std::regex kCpuPattern(R"(you tried to allocate ([0-9]+) bytes)");
  std::smatch cpu;
  if (std::regex_search(message, cpu, kCpuPattern)) return std::stoll(cpu[1].str());
  // The CUDA caching allocator: "Tried to allocate 20.00 MiB (GPU 0; ...".
  static const std::regex kPattern(
      R"(Tried to allocate ([0-9]+(?:\.[0-9]+)?) ?(B|bytes|KiB|MiB|GiB|TiB|KB|MB|GB|TB))");
  std::smatch m;
  if (!std::regex_search(message, m, kPattern)) return std::nullopt;
  const double value = std::stod(m[1].str());
  const std::string unit = m[2].str();
  double scale = 1.0;
  if (unit == "KiB")
    scale = 1024.0;
  else if (unit == "MiB")
    scale = 1024.0 * 1024.0;
  else if (unit == "GiB")
    scale = 1024.0 * 1024.0 * 1024.0;
  else if (unit == "TiB")
    scale = 1024.0 * 1024.0 * 1024.0 * 1024.0;
  else if (unit == "KB")
    scale = 1e3;
  else if (unit == "MB")
    scale = 1e6;
  else if (unit == "GB")
    scale = 1e9;
  else if (unit == "TB")
    scale = 1e12;
  return static_cast<std::int64_t>(std::llround(value * scale));
}

bool IsOutOfMemoryMessage(const std::string& message) {
  return message.find("out of memory") != std::string::npos ||
         message.find("not enough memory") != std::string::npos ||
         message.find("can't allocate memory") != std::string::npos;
}

Failure ClassifyMessage(const std::string& message, record::RunnerErrorKind fallback) {
  Failure f;
  f.message = message;
  if (IsOutOfMemoryMessage(message)) {
    f.kind = record::RunnerErrorKind::kOom;
    if (auto bytes = ParseRequestedBytes(message)) f.details["requested_bytes"] = *bytes;
  } else if (message.find("does not have a deterministic implementation") != std::string::npos) {
    f.kind = record::RunnerErrorKind::kUnsupported;
    f.message = "unsupported with deterministic: true: " + message;
  } else if (message.find("Expected more than 1 value per channel when training") != std::string::npos) {
    // Batch normalisation cannot train on one value per channel: batch_size 1 with a 1x1 feature
    // map (SSDLite's last extra layers). A limit of the model, not a runner fault.
    f.kind = record::RunnerErrorKind::kUnsupported;
    f.message =
        "training this model needs batch_size >= 2: batch normalisation has one value per channel "
        "on a 1x1 feature map at batch_size 1 (" +
        message + ")";
  } else {
    f.kind = fallback;
  }
  return f;
}

Failure ClassifyException(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const c10::OutOfMemoryError& e) {
    Failure f = ClassifyMessage(e.what_without_backtrace(), record::RunnerErrorKind::kOom);
    f.kind = record::RunnerErrorKind::kOom;
    // CUDA's caching allocator refused the request and freed nothing the process still uses: once
    // the cell's tensors are gone and its cache is emptied (before the next CONFIGURE), the process
    // serves another cell as one that never ran out (docs/memory.md "Probes in one process"). The
    // host allocator's refusal under RLIMIT_DATA says no such thing.
    if (f.message.find("CUDA out of memory") != std::string::npos) f.details["process_usable"] = true;
    return f;
  } catch (const c10::Error& e) {
    return ClassifyMessage(e.what_without_backtrace(), record::RunnerErrorKind::kInternal);
  } catch (const UnsupportedError& e) {
    return Failure{record::RunnerErrorKind::kUnsupported, e.what(), nlohmann::json::object()};
  } catch (const std::invalid_argument& e) {
    return Failure{record::RunnerErrorKind::kInvalid, e.what(), nlohmann::json::object()};
  } catch (const std::bad_alloc&) {
    return Failure{record::RunnerErrorKind::kOom, "host out of memory (std::bad_alloc)", {{"where", "host"}}};
  } catch (const std::exception& e) {
    return ClassifyMessage(e.what(), record::RunnerErrorKind::kInternal);
  } catch (...) {
    return Failure{record::RunnerErrorKind::kInternal, "unknown exception", nlohmann::json::object()};
  }
}

}  // namespace dlbench::torchrunner
