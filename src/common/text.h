// Small text helpers shared by the modules that write Markdown.
#pragma once

#include <string>
#include <string_view>

namespace dlbench {

// Text safe inside a Markdown table cell: every '|' is escaped as "\|".
std::string EscapeMarkdownCell(std::string_view text);

}  // namespace dlbench
