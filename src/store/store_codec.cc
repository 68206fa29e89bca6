#include "store/store_codec.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <set>
#include <utility>

namespace dlbench::store::codec {

Result<std::string> DumpJson(const nlohmann::json& value, const std::string& what) {
  try {
    return value.dump();
  } catch (const nlohmann::json::exception& e) {
    // dump() throws only for strings that are not valid UTF-8.
    return MakeError(ErrorKind::kInvalidInput, "cannot store " + what + " as JSON text: " + e.what());
  }
}

Result<std::array<std::string, 5>> DumpCellJson(const record::CellRecord& cell, const std::string& what) {
  const std::pair<const nlohmann::json*, const char*> fields[5] = {{&cell.params, "params"},
                                                                   {&cell.effective, "effective"},
                                                                   {&cell.hello, "hello"},
                                                                   {&cell.verdict_reasons, "verdict_reasons"},
                                                                   {&cell.extras, "extras"}};
  std::array<std::string, 5> text;
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto dumped = DumpJson(*fields[i].first, std::string(fields[i].second) + " of " + what);
    if (!dumped.ok()) return dumped.error();
    text[i] = std::move(*dumped);
  }
  return text;
}

Result<nlohmann::json> ParseJson(const std::string& text, const std::string& what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return MakeError(ErrorKind::kStore, "the stored " + what + " is not valid JSON: " + e.what());
  }
}

Result<std::uint64_t> ParseSeed(const std::string& text, std::int64_t cell_row_id) {
  std::uint64_t seed = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seed);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return MakeError(ErrorKind::kStore, "cells.seed of cell row " + std::to_string(cell_row_id) + " is '" +
                                            text + "', not a decimal unsigned 64-bit integer");
  }
  return seed;
}

Error UnknownStoredName(const char* what, const std::string& text, const std::string& where) {
  return MakeError(ErrorKind::kStore, "the stored " + std::string(what) + where + " is '" + text +
                                          "', which this dlbench does not know");
}

bool AllDigits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Status ValidateTagName(const std::string& tag) {
  if (tag.empty()) return MakeError(ErrorKind::kInvalidInput, "a tag name cannot be empty");
  if (AllDigits(tag)) {
    return MakeError(ErrorKind::kInvalidInput,
                     "tag '" + tag + "' is all digits, which would read as a run id");
  }
  if (tag == "latest" || tag == "previous") {
    return MakeError(ErrorKind::kInvalidInput,
                     "'" + tag + "' is reserved: it always names the " +
                         (tag == "latest" ? "newest run" : "run before the newest"));
  }
  if (tag.find('~') != std::string::npos) {
    return MakeError(ErrorKind::kInvalidInput, "tag '" + tag + "' holds '~', which would read as RUN~N");
  }
  if (tag.rfind("sweep:", 0) == 0) {
    return MakeError(ErrorKind::kInvalidInput, "tag '" + tag + "' starts with 'sweep:', which names a sweep");
  }
  return Status::Ok();
}

Status CheckUniqueMetricNames(const record::CellRecord& cell, const std::string& what) {
  std::set<std::string> names;
  for (const record::MetricRecord& m : cell.metrics) {
    if (!names.insert(m.name).second) {
      return MakeError(ErrorKind::kInvalidInput, "metric '" + m.name + "' appears twice in " + what);
    }
  }
  return Status::Ok();
}

std::string NewRunUuid() {
  unsigned char bytes[16];
  std::size_t have = 0;
  while (have < sizeof bytes) {
    const ssize_t n = getrandom(bytes + have, sizeof bytes - have, 0);
    if (n < 0 && errno == EINTR) continue;
    DLBENCH_CHECK(n > 0, "getrandom() works on every kernel dlbench supports (Linux >= 3.17)");
    have += static_cast<std::size_t>(n);
  }
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0F) | 0x40);  // version 4
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3F) | 0x80);  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 0x0F]);
  }
  return out;
}

bool IsRunUuid(std::string_view text) {
  if (text.size() != 36) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

Error NotATag(const std::string& tag, const Result<std::int64_t>& as_reference) {
  if (!as_reference.ok()) return as_reference.error();
  return Error{ErrorKind::kInvalidInput, "'" + tag + "' is not a tag: it names run " +
                                             std::to_string(*as_reference) + " (tags: dlbench tag --list)"};
}

}  // namespace dlbench::store::codec
