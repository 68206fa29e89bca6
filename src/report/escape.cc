#include "report/escape.h"

#include <cstdlib>

namespace dlbench::report {

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string JsonForScript(const nlohmann::json& value) {
  // ensure_ascii=false keeps the text readable; the replace handler stops a stray byte from a
  // runner's log from throwing halfway through a report.
  const std::string dumped = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(dumped.size() + dumped.size() / 16);
  for (std::size_t i = 0; i < dumped.size(); ++i) {
    const char c = dumped[i];
    // These characters only ever occur inside JSON strings, where \uXXXX means the same thing.
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (static_cast<unsigned char>(c) == 0xE2 && i + 2 < dumped.size() &&
               static_cast<unsigned char>(dumped[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(dumped[i + 2]) == 0xA8 ||
                static_cast<unsigned char>(dumped[i + 2]) == 0xA9)) {
      out += static_cast<unsigned char>(dumped[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHtmlComment(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '-' && !out.empty() && out.back() == '-') out += ' ';
    out += c;
  }
  if (!out.empty() && out.back() == '-') out += ' ';
  return out;
}

namespace {

// Whether the whole text is one number as strtod reads it ("-1.5e3", "+2", "nan").
bool IsNumber(std::string_view text) {
  if (text.empty()) return false;
  const std::string s(text);
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// A spreadsheet reads a cell that starts with = + - @ (or a tab or CR before one) as a formula:
// "=HYPERLINK(...)" in a cell label or an error message would run when the CSV is opened (CSV
// injection). Such text gets a leading apostrophe, which spreadsheets show as text; numbers
// ("-1.5") are left alone.
bool LooksLikeFormula(std::string_view text) {
  if (text.empty()) return false;
  const char c = text.front();
  if (c != '=' && c != '+' && c != '-' && c != '@' && c != '\t' && c != '\r') return false;
  return !IsNumber(text);
}

}  // namespace

std::string CsvField(std::string_view input) {
  std::string guarded;
  if (LooksLikeFormula(input)) guarded = "'" + std::string(input);
  const std::string_view text = guarded.empty() ? input : std::string_view(guarded);
  bool needs_quotes = !text.empty() && (text.front() == ' ' || text.back() == ' ');
  for (char c : text) {
    if (c == ',' || c == '"' || c == '\n' || c == '\r') needs_quotes = true;
  }
  if (!needs_quotes) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string EscapePrometheusLabel(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string SanitizePrometheusName(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 1);
  for (char c : text) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out += keep ? c : '_';
  }
  if (out.empty() || (out.front() >= '0' && out.front() <= '9')) out.insert(out.begin(), '_');
  return out;
}

}  // namespace dlbench::report
