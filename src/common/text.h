// Small text helpers shared by the modules that write Markdown or print to a terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dlbench {

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
