#include "config/cuda_alloc_conf.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>

#include "common/text.h"

namespace dlbench::config {
namespace {

constexpr std::uint64_t kMaxMegabytes = 1048576;  // 1 TiB in MB

bool IsPowerOfTwo(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

std::string Expected(const std::string& name, const std::string& what, std::string_view got) {
  return name + ": expected " + what + " (got '" + std::string(got) + "')";
}

// The options separated by commas outside brackets (roundup_power2_divisions' list has its own).
std::optional<std::vector<std::string>> SplitOptions(std::string_view text) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']' && --depth < 0) return std::nullopt;
    if (c == ',' && depth == 0) {
      out.emplace_back();
      continue;
    }
    out.back() += c;
  }
  if (depth != 0) return std::nullopt;
  return out;
}

std::string CheckRoundup(const std::string& name, const std::string& value) {
  const std::string what =
      "a power of 2 <= 1048576, or a list like [256:1,512:2,1024:4,>:8] of sizes (powers of 2, MB, or >) "
      "and their divisions (powers of 2)";
  if (value.empty()) return Expected(name, what, value);
  if (value.front() != '[') {
    const std::optional<std::uint64_t> n = ParseUint(value);
    return n && IsPowerOfTwo(*n) && *n <= kMaxMegabytes ? "" : Expected(name, what, value);
  }
  if (value.size() < 3 || value.back() != ']') return Expected(name, what, value);
  std::set<std::string> sizes;
  for (const std::string& pair : Split(std::string_view(value).substr(1, value.size() - 2), ',')) {
    const std::size_t colon = pair.find(':');
    if (colon == std::string::npos) return Expected(name, what, value);
    const std::string size = pair.substr(0, colon);
    const std::optional<std::uint64_t> s = ParseUint(size);
    const std::optional<std::uint64_t> d = ParseUint(pair.substr(colon + 1));
    if (!(size == ">" || (s && IsPowerOfTwo(*s) && *s <= kMaxMegabytes)) ||
        !(d && IsPowerOfTwo(*d) && *d <= kMaxMegabytes) || !sizes.insert(size).second) {
      return Expected(name, what, value);
    }
  }
  return "";
}

std::string CheckValue(const std::string& name, const std::string& value) {
  auto integer = [&](std::uint64_t low, std::uint64_t high, const std::string& what) {
    const std::optional<std::uint64_t> n = ParseUint(value);
    return n && *n >= low && *n <= high ? "" : Expected(name, what, value);
  };
  if (name == "backend") {
    return value == "native" || value == "cudaMallocAsync"
               ? ""
               : Expected(name, "native or cudaMallocAsync", value);
  }
  if (name == "max_split_size_mb") return integer(21, kMaxMegabytes, "an integer > 20 and <= 1048576 (MB)");
  if (name == "max_non_split_rounding_mb")
    return integer(1, kMaxMegabytes, "an integer between 1 and 1048576 (MB)");
  if (name == "roundup_power2_divisions") return CheckRoundup(name, value);
  if (name == "garbage_collection_threshold") {
    const std::optional<double> v = ParseNumber(value);
    return v && *v > 0 && *v < 1 ? "" : Expected(name, "a number > 0 and < 1", value);
  }
  if (name == "pinned_num_register_threads") {
    const std::optional<std::uint64_t> n = ParseUint(value);
    return n && IsPowerOfTwo(*n) && *n <= 128 ? "" : Expected(name, "a power of 2 <= 128", value);
  }
  // expandable_segments, pinned_use_cuda_host_register, pinned_use_background_threads.
  return value == "True" || value == "False" ? "" : Expected(name, "True or False", value);
}

}  // namespace

const std::vector<std::string>& CudaAllocConfOptions() {
  static const std::vector<std::string> options = {"backend",
                                                   "max_split_size_mb",
                                                   "roundup_power2_divisions",
                                                   "max_non_split_rounding_mb",
                                                   "garbage_collection_threshold",
                                                   "expandable_segments",
                                                   "pinned_use_cuda_host_register",
                                                   "pinned_num_register_threads",
                                                   "pinned_use_background_threads"};
  return options;
}

std::string CudaAllocConfProblem(std::string_view text) {
  if (text.empty()) return "empty: leave cuda_alloc_conf out for the allocator's defaults";
  if (text.size() > kMaxCudaAllocConfChars) {
    return "longer than " + std::to_string(kMaxCudaAllocConfChars) + " characters";
  }
  if (std::any_of(text.begin(), text.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n'; })) {
    return "no spaces: options are written name:value,name:value";
  }
  const std::optional<std::vector<std::string>> options = SplitOptions(text);
  if (!options) return "unbalanced brackets";
  std::set<std::string> seen;
  const std::vector<std::string>& known = CudaAllocConfOptions();
  for (const std::string& option : *options) {
    const std::size_t colon = option.find(':');
    if (colon == std::string::npos) return "'" + option + "' is not name:value";
    const std::string name = option.substr(0, colon);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return "unknown option '" + name + "' (options: " + Join(known, ", ") + ")";
    }
    if (!seen.insert(name).second) return name + " given twice";
    if (std::string problem = CheckValue(name, option.substr(colon + 1)); !problem.empty()) return problem;
  }
  return "";
}

}  // namespace dlbench::config
