// Internal to src/report: the parts of the HTML report that RenderHtmlReport (html_report.cc)
// puts together from other files, and the pieces they share.
//   html_report.cc     the page: head, warnings, the environment and cells sections, and the
//                      table cells (Td, NumTd) and fingerprint flattening every section uses;
//   html_charts.cc     BuildCharts and its own charts (throughput vs batch size, latency CDFs,
//                      monitor series); the other charts come from input_charts.cc,
//                      scaling_charts.cc, load_report.cc and step_charts.cc;
//   html_precision.cc  the precisions section (trade-off, CPU-GPU consistency, converge accuracy);
//   html_baseline.cc   the baseline section (history's comparison, or plain throughput ratios).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "report/html_report.h"

namespace dlbench::report::internal {

// "a.b.c" -> leaf text for every scalar leaf (arrays of scalars joined with ", ").
void Flatten(const nlohmann::json& node, const std::string& prefix, std::map<std::string, std::string>& out);

// One table cell: the text shown and the value the column sorts by (data-v), both escaped.
std::string Td(const std::string& text, const std::string& sort_value, const std::string& cls = "");

// A number's cell (value * scale), empty when there is none.
std::string NumTd(std::optional<double> value, double scale = 1.0);

// The precision trade-off (precision_view.h), as `dlbench show` prints it: per model, one row per
// precision with size, latency, throughput, energy per sample, peak memory and the outputs against
// the fp32 cell's; CPU-GPU consistency; and converge cells' accuracy of the trained model per
// precision.
std::string PrecisionSection(const ReportInput& input);

// Against the baseline: history's comparison when the caller made one, else plain throughput ratios.
std::string BaselineSection(const ReportInput& input, const ReportOptions& options);

}  // namespace dlbench::report::internal
