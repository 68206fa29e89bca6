#include "common/text.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace dlbench {

std::string Trim(std::string_view text, std::string_view chars) {
  const std::size_t begin = text.find_first_not_of(chars);
  if (begin == std::string_view::npos) return "";
  const std::size_t end = text.find_last_not_of(chars);
  return std::string(text.substr(begin, end - begin + 1));
}

std::vector<std::string> Split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = text.find(separator, begin);
    if (end == std::string_view::npos) {
      parts.emplace_back(text.substr(begin));
      return parts;
    }
    parts.emplace_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::optional<std::int64_t> ParseInt(std::string_view text) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  // from_chars takes '-' but not '+'; "+-1" and "++1" stay invalid.
  if (begin != end && *begin == '+') {
    ++begin;
    if (begin != end && (*begin == '-' || *begin == '+')) return std::nullopt;
  }
  if (begin == end) return std::nullopt;
  std::int64_t value = 0;
  const auto result = std::from_chars(begin, end, value);
  if (result.ec != std::errc() || result.ptr != end) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> ParseUint(std::string_view text) {
  if (text.empty() || text.front() < '0' || text.front() > '9') return std::nullopt;
  std::uint64_t value = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (result.ec != std::errc() || result.ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> ParseNumber(std::string_view text) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+') {
    ++begin;
    if (begin != end && (*begin == '-' || *begin == '+')) return std::nullopt;
  }
  if (begin == end) return std::nullopt;
  double value = 0;
  const auto result = std::from_chars(begin, end, value, std::chars_format::general);
  if (result.ec != std::errc() || result.ptr != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::string EscapeMarkdownCell(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace dlbench
