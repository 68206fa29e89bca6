// Terminal output helpers shared by the subcommands: aligned tables, human units.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "store/result_store.h"

namespace dlbench::cli {

// A table printed with aligned columns; right-aligns columns marked numeric.
class Table {
 public:
  struct Column {
    std::string title;
    bool numeric = false;
  };
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  // Columns are at least this wide (display characters), so rows printed one at a time line up.
  void SetMinWidths(std::vector<std::size_t> widths) { min_widths_ = std::move(widths); }
  std::string Render(bool with_header = true) const;
  bool empty() const { return rows_.empty(); }

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::size_t> min_widths_;
};

// Human formatting: "12.3 ms", "1.46 GiB", "4,652/s"; "-" for absent values.
std::string FormatDurationNs(std::optional<double> ns);
std::string FormatBytes(std::optional<double> bytes);
std::string FormatRate(std::optional<double> per_s);
std::string FormatSeconds(double seconds);  // "1:02:03" / "2:03" / "4.2 s"

std::optional<double> MetricValue(const record::CellRecord& cell, const std::string& name);

// The line `run` prints when measure.retry_disturbed measures a cell again: "[2/5] LABEL  measuring
// again: attempt 2 of 3, attempt 1 was shifted: step time changed at ..." (the first of
// `reasons_before`, the attempt before's verdict_reasons, names why; without one, its verdict).
// Terminal-safe.
std::string RetryLine(std::size_t position, std::size_t to_run, const std::string& label, int attempt,
                      int allowed, record::Verdict before, const nlohmann::json& reasons_before);

// The columns of the results table, shared by `run` (row by row) and `show` (all at once).
std::vector<Table::Column> ResultColumns();
std::vector<std::string> ResultRow(const record::CellRecord& cell);
// Widths that fit any result row for cells with these labels (for streaming rows during `run`).
std::vector<std::size_t> ResultMinWidths(std::size_t max_label_width, std::size_t max_index);

}  // namespace dlbench::cli
