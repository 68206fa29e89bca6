#include "history/text_table.h"

#include <algorithm>

#include "common/error.h"
#include "common/text.h"

namespace dlbench::history {

std::size_t DisplayWidth(const std::string& text) {
  return static_cast<std::size_t>(std::count_if(
      text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string RenderTextTable(const std::vector<std::vector<std::string>>& raw_rows,
                            const std::vector<Align>& aligns) {
  // Cells hold labels from matrix files and stores: escaped for the terminal, and measured as
  // printed.
  std::vector<std::vector<std::string>> rows;
  rows.reserve(raw_rows.size());
  for (const auto& raw : raw_rows) {
    std::vector<std::string> row;
    row.reserve(raw.size());
    for (const auto& cell : raw) row.push_back(TerminalSafe(cell));
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> widths(aligns.size(), 0);
  for (const auto& row : rows) {
    DLBENCH_CHECK(row.size() == aligns.size(), "a table row has the wrong number of cells");
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], DisplayWidth(row[i]));
  }
  std::string out;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::string line;
    for (std::size_t i = 0; i < aligns.size(); ++i) {
      const std::string pad(widths[i] - DisplayWidth(rows[r][i]), ' ');
      if (i > 0) line += "  ";
      line += aligns[i] == Align::kLeft ? rows[r][i] + pad : pad + rows[r][i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    if (r == 0) {
      std::size_t total = 0;
      for (std::size_t w : widths) total += w;
      out += std::string(total + 2 * (widths.empty() ? 0 : widths.size() - 1), '-') + "\n";
    }
  }
  return out;
}

}  // namespace dlbench::history
