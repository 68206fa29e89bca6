// A plain-text table with columns padded to their widest cell (counted in code points, so the
// sparkline's block characters line up). Shared by the compare and trend renderings.
#pragma once

#include <string>
#include <vector>

namespace dlbench::history {

enum class Align { kLeft, kRight };

// rows[0] is the header; a rule of '-' follows it. Every row must have as many cells as aligns.
// Cells are printed through TerminalSafe (common/text.h).
std::string RenderTextTable(const std::vector<std::vector<std::string>>& rows,
                            const std::vector<Align>& aligns);

// Number of code points in UTF-8 text.
std::size_t DisplayWidth(const std::string& text);

}  // namespace dlbench::history
