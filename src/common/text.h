// Small text helpers every module shares: trimming, splitting, joining, affixes, strict number
// parsing, Markdown table cells, and text made safe for a terminal. Pure functions; locale-independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlbench {

// The characters isspace() accepts in the C locale.
inline constexpr std::string_view kWhitespace = " \t\n\v\f\r";

// `text` without leading and trailing characters from `chars`.
std::string Trim(std::string_view text, std::string_view chars = kWhitespace);

// The pieces between separators, in order: n separators give n + 1 pieces, so "" gives {""} and
// "a;" gives {"a", ""}. Nothing is trimmed.
std::vector<std::string> Split(std::string_view text, char separator);

// The parts with `separator` between consecutive ones; "" for no parts.
std::string Join(const std::vector<std::string>& parts, std::string_view separator);

bool StartsWith(std::string_view text, std::string_view prefix);
bool EndsWith(std::string_view text, std::string_view suffix);

// A strict decimal integer: the whole text, an optional '+' or '-', then digits (no spaces, no
// hexadecimal, no "1.0"); nullopt when it is anything else or outside int64_t.
std::optional<std::int64_t> ParseInt(std::string_view text);
// Digits only (no sign); nullopt otherwise or when outside uint64_t.
std::optional<std::uint64_t> ParseUint(std::string_view text);
// A finite decimal number as from_chars reads it (optionally with a leading '+'): "1", "-2.5",
// "1e-3"; nullopt for anything else, "nan", "inf" and overflow.
std::optional<double> ParseNumber(std::string_view text);

// Text safe inside a Markdown table cell: every '|' is escaped as "\|".
std::string EscapeMarkdownCell(std::string_view text);

// Text safe to print on a terminal: every byte that a terminal could act on rather than show is
// written as "\xNN" (lower-case hex): C0 controls other than newline and tab (ESC starts every
// escape sequence, CR overwrites the line), DEL, the C1 controls U+0080..U+009F (U+009B is an
// 8-bit CSI to some terminals) and each byte that is not part of valid UTF-8 (a lone 0x9b is CSI
// on a Latin-1 terminal). Valid printable UTF-8 passes unchanged. Backslashes are not doubled,
// so the result is for display, not a reversible encoding. Apply it to any text that came from
// a user, a file, a runner or the store (labels, names, messages) before it reaches a terminal.
std::string TerminalSafe(std::string_view text);

// The length of the longest prefix of `text` that is valid UTF-8 (RFC 3629: no overlong forms,
// no surrogates, nothing above U+10FFFF); text.size() when all of it is.
std::size_t ValidUtf8Prefix(std::string_view text);

}  // namespace dlbench
