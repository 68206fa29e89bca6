// Escaping for every output format the report module writes. Each text that came from a matrix,
// an environment, a runner or a log passes through exactly one of these before it is written;
// nothing else in the module puts user text into markup.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace dlbench::report {

// Text for HTML element content and quoted attribute values: & < > " ' become entities.
// Bytes that are not valid UTF-8 are kept as they are (the browser shows U+FFFD for them).
std::string EscapeHtml(std::string_view text);

// JSON text safe inside an HTML <script> element: every '<' becomes \u003c (so neither
// "</script" nor "<!--" can appear), '>' and '&' become \u003e and \u0026, and U+2028/U+2029
// (line terminators in older JavaScript) become \u2028/\u2029. Invalid UTF-8 is replaced by
// U+FFFD rather than failing. The result parses with JSON.parse to the same value.
std::string JsonForScript(const nlohmann::json& value);

// Text for an HTML comment: "--" cannot occur in one, so it becomes "- -"; a trailing '-' gets
// a space after it.
std::string EscapeHtmlComment(std::string_view text);

// One CSV field (RFC 4180): quoted when it holds a comma, quote, CR or LF, or leading/trailing
// space; quotes doubled. Text a spreadsheet would run as a formula (starting with = + - @, tab or
// CR, and not a number) gets a leading apostrophe first (CSV injection).
std::string CsvField(std::string_view text);

// A Prometheus label value: backslash, double quote and line feed escaped as the text format
// requires.
std::string EscapePrometheusLabel(std::string_view text);

// A Prometheus metric or label name from arbitrary text: characters outside [a-zA-Z0-9_] become
// '_', and a leading digit gets a '_' in front. Empty text gives "_".
std::string SanitizePrometheusName(std::string_view text);

}  // namespace dlbench::report
