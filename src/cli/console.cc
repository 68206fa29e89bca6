#include "cli/console.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "common/human_text.h"
#include "common/text.h"
#include "record/metrics.h"

namespace dlbench::cli {

namespace {
// Display width of a UTF-8 string (code points; good enough for our labels and sparklines).
std::size_t DisplayWidth(const std::string& s) {
  std::size_t w = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++w;
  }
  return w;
}
}  // namespace

std::string Table::Render(bool with_header) const {
  // Cells hold labels, keys and messages that came from matrix files, runners and the store:
  // escaped here, once, so no table prints a terminal escape sequence and widths are measured on
  // what is printed.
  std::vector<std::string> titles;
  for (const auto& c : columns_) titles.push_back(TerminalSafe(c.title));
  std::vector<std::vector<std::string>> rows;
  rows.reserve(rows_.size());
  for (const auto& row : rows_) {
    std::vector<std::string> safe;
    safe.reserve(row.size());
    for (const auto& cell : row) safe.push_back(TerminalSafe(cell));
    rows.push_back(std::move(safe));
  }
  std::vector<std::size_t> widths(columns_.size());
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    widths[i] = std::max(DisplayWidth(titles[i]), i < min_widths_.size() ? min_widths_[i] : 0);
  }
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], DisplayWidth(row[i]));
    }
  }
  auto render_row = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (std::size_t i = 0; i < columns_.size(); ++i) {
      const std::string cell = i < cells.size() ? cells[i] : "";
      const std::string pad(widths[i] - DisplayWidth(cell), ' ');
      if (i > 0) line += "  ";
      line += columns_[i].numeric ? pad + cell : (i + 1 == columns_.size() ? cell : cell + pad);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line + "\n";
  };
  std::string out = with_header ? render_row(titles) : "";
  for (const auto& row : rows) out += render_row(row);
  return out;
}

std::string FormatDurationNs(std::optional<double> ns) { return ns ? HumanDurationNs(*ns) : "-"; }

std::string FormatBytes(std::optional<double> bytes) {
  if (!bytes || !std::isfinite(*bytes)) return "-";
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = *bytes;
  int u = 0;
  while (std::fabs(v) >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", v) : FormatSignificant(v, 3) + " " + kUnits[u];
}

std::string FormatRate(std::optional<double> per_s) {
  if (!per_s || !std::isfinite(*per_s)) return "-";
  if (*per_s >= 100) return fmt::format("{:.0f}/s", *per_s);
  return FormatSignificant(*per_s, 3) + "/s";
}

std::string FormatSeconds(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  if (seconds < 60) return fmt::format("{:.1f} s", seconds);
  // Beyond about 30,000 years the H:MM:SS form means nothing and the integer conversion below
  // would overflow.
  if (seconds >= 1e12) return fmt::format("{:.3g} s", seconds);
  const auto total = static_cast<long long>(seconds + 0.5);
  if (total < 3600) return fmt::format("{}:{:02d}", total / 60, total % 60);
  return fmt::format("{}:{:02d}:{:02d}", total / 3600, (total / 60) % 60, total % 60);
}

std::optional<double> MetricValue(const record::CellRecord& cell, const std::string& name) {
  for (const auto& m : cell.metrics) {
    if (m.name == name) return m.value;
  }
  return std::nullopt;
}

std::string RetryLine(std::size_t position, std::size_t to_run, const std::string& label, int attempt,
                      int allowed, record::Verdict before, const nlohmann::json& reasons_before) {
  const std::string verdict(record::Name(before));
  std::string why = verdict;
  if (reasons_before.is_array() && !reasons_before.empty() && reasons_before[0].is_string()) {
    // A reason names its verdict first ("shifted: step time changed at ..."); one that does not gets it.
    const std::string reason = reasons_before[0].get<std::string>();
    why = reason.rfind(verdict + ":", 0) == 0 ? reason : verdict + ": " + reason;
  }
  return TerminalSafe(fmt::format("[{}/{}] {}  measuring again: attempt {} of {}, attempt {} was {}",
                                  position, to_run, label, attempt, allowed, attempt - 1, why));
}

std::vector<Table::Column> ResultColumns() {
  return {{"#", true},        {"cell", false},     {"outcome", false},
          {"verdict", false}, {"samples/s", true}, {"step mean", true},
          {"±CI", true},      {"p99", true},       {"energy/sample", true},
          {"GPU busy", true}, {"peak mem", true}};
}

std::vector<std::size_t> ResultMinWidths(std::size_t max_label_width, std::size_t max_index) {
  // index, cell, outcome ("unsupported"), verdict ("fell_behind"), samples/s, step mean, CI, p99, energy,
  // busy, mem
  return {std::to_string(max_index).size(), max_label_width, 11, 11, 10, 9, 5, 9, 13, 8, 9};
}

std::vector<std::string> ResultRow(const record::CellRecord& cell) {
  auto ci = MetricValue(cell, record::metric::kStepTimeCiRelHalfwidth);
  auto energy = MetricValue(cell, record::metric::kEnergyPerSampleJ);
  auto busy = MetricValue(cell, record::metric::kGpuUtilMeanPct);
  auto peak = MetricValue(cell, record::memory::kDeviceAllocatedPeakBytes);
  if (!peak) peak = MetricValue(cell, record::metric::kProcRssPeakBytes);
  // A load cell has no steps: its rate and p99 are its queries' (docs/load.md).
  auto rate = MetricValue(cell, record::metric::kSamplesPerS);
  if (!rate) rate = MetricValue(cell, record::metric::kLoadSamplesPerS);
  auto p99 = MetricValue(cell, record::metric::kStepTimeP99Ns);
  if (!p99) p99 = MetricValue(cell, record::metric::kQueryLatencyP99Ns);
  return {std::to_string(cell.index),
          cell.label.empty() ? cell.key : cell.label,
          std::string(record::Name(cell.outcome)),
          std::string(record::Name(cell.verdict)),
          FormatRate(rate),
          FormatDurationNs(MetricValue(cell, record::metric::kStepTimeMeanNs)),
          ci ? fmt::format("{:.1f}%", 100 * *ci) : "-",
          FormatDurationNs(p99),
          energy ? FormatSignificant(*energy, 4) + " J" : "-",
          busy ? fmt::format("{:.0f}%", *busy) : "-",
          FormatBytes(peak)};
}

}  // namespace dlbench::cli
