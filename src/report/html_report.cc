// The HTML report's page (RenderHtmlReport): head, warnings, the environment and cells sections,
// and the table cells every section writes. The charts are html_charts.cc's, the precisions and
// baseline sections html_precision.cc's and html_baseline.cc's (html_sections.h).
#include "report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "common/clock.h"
#include "common/human_text.h"
#include "common/version.h"
#include "record/metrics.h"
#include "report/assets.h"
#include "report/chart_json.h"
#include "report/escape.h"
#include "report/export.h"
#include "report/html_sections.h"

namespace dlbench::report {
namespace {

using nlohmann::json;

using chart::Fmt;
using chart::Metric;
using chart::NumericParam;
using chart::Param;
using chart::ParamText;

}  // namespace

namespace internal {

void Flatten(const json& node, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      Flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    }
  } else if (node.is_array() &&
             std::all_of(node.begin(), node.end(), [](const json& e) { return !e.is_structured(); })) {
    std::string joined;
    for (const auto& e : node) joined += (joined.empty() ? "" : ", ") + ParamText(e);
    out[prefix] = joined;
  } else if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      Flatten(node[i], prefix + "[" + std::to_string(i) + "]", out);
  } else {
    out[prefix] = ParamText(node);
  }
}

std::string Td(const std::string& text, const std::string& sort_value, const std::string& cls) {
  return fmt::format("<td{} data-v=\"{}\">{}</td>", cls.empty() ? "" : " class=\"" + cls + "\"",
                     EscapeHtml(sort_value), EscapeHtml(text));
}

std::string NumTd(std::optional<double> value, double scale) {
  if (!value) return "<td class=\"num\" data-v=\"\"></td>";
  return fmt::format("<td class=\"num\" data-v=\"{}\">{}</td>", FormatNumber(*value * scale),
                     EscapeHtml(Fmt(*value * scale, 4)));
}

}  // namespace internal

namespace {

using internal::BaselineSection;
using internal::Flatten;
using internal::NumTd;
using internal::PrecisionSection;
using internal::Td;

// Warnings recorded in the fingerprint: any "warnings" array of strings, at any depth.
void CollectWarnings(const json& node, std::vector<std::string>& out) {
  if (!node.is_object()) return;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (it.key() == "warnings" && it.value().is_array()) {
      for (const auto& w : it.value()) out.push_back(ParamText(w));
    } else {
      CollectWarnings(it.value(), out);
    }
  }
}

std::string ChartBlock(const json& chart) {
  std::string out = fmt::format(
      "<div class=\"chart\"><h3>{}</h3><div class=\"canvas-box\"><canvas id=\"{}\" role=\"img\" "
      "aria-label=\"{}\"></canvas></div>",
      EscapeHtml(chart["title"].get<std::string>()), EscapeHtml(chart["id"].get<std::string>()),
      EscapeHtml(chart["title"].get<std::string>()));
  const std::string note = chart.value("note", std::string());
  if (!note.empty()) out += "<p>" + EscapeHtml(note) + "</p>";
  return out + "</div>\n";
}

std::string ChartSection(const std::vector<json>& charts, const std::string& section,
                         const std::string& empty_text) {
  std::string out;
  for (const auto& c : charts) {
    if (c["section"] == section) out += ChartBlock(c);
  }
  if (out.empty()) return "<p class=\"empty\">" + EscapeHtml(empty_text) + "</p>\n";
  return "<div class=\"grid\">\n" + out + "</div>\n";
}

std::string EnvironmentSection(const ReportInput& input, std::vector<std::string>& warnings) {
  std::map<std::string, std::string> flat;
  Flatten(input.run.environment, "", flat);
  std::string rows;
  for (const auto& [k, v] : flat)
    rows += "<tr><th>" + EscapeHtml(k) + "</th><td>" + EscapeHtml(v) + "</td></tr>\n";
  std::string out = fmt::format(
      "<p>Fingerprint <code>{}</code> ({} fields).</p>\n",
      EscapeHtml(input.run.environment_hash.empty() ? "not recorded" : input.run.environment_hash),
      flat.size());
  if (!warnings.empty()) {
    out += "<ul class=\"warnings\">\n";
    for (const auto& w : warnings) out += "<li>" + EscapeHtml(w) + "</li>\n";
    out += "</ul>\n";
  } else {
    out += "<p>No warnings.</p>\n";
  }
  out +=
      "<details class=\"env\"><summary>Full fingerprint</summary><table>\n" + rows + "</table></details>\n";
  return out;
}

std::string CellsSection(const ReportInput& input) {
  std::string out =
      "<div class=\"wide\"><table class=\"sortable\" id=\"cells-table\"><thead><tr>"
      "<th>#</th><th>cell</th><th>model</th><th>scenario</th><th>batch</th><th>precision</th><th>device</th>"
      "<th>strategy</th><th>outcome</th><th>verdict</th><th>reasons</th><th>samples/s</th><th>step mean "
      "(ms)</th>"
      "<th>step P99 (ms)</th><th>warm-up steps</th><th>message</th></tr></thead><tbody>\n";
  for (const auto& c : input.cells) {
    std::string reasons;
    if (c.verdict_reasons.is_array()) {
      for (const auto& r : c.verdict_reasons) reasons += (reasons.empty() ? "" : "; ") + ParamText(r);
    }
    const auto batch = NumericParam(c, "batch_size");
    const std::string outcome(record::Name(c.outcome));
    const std::string verdict(record::Name(c.verdict));
    out += "<tr>" + Td(std::to_string(c.index), std::to_string(c.index)) + Td(c.label, c.label) +
           Td(Param(c, "model"), Param(c, "model")) + Td(Param(c, "scenario"), Param(c, "scenario")) +
           Td(Param(c, "batch_size"), batch ? FormatNumber(*batch) : Param(c, "batch_size")) +
           Td(Param(c, "precision"), Param(c, "precision")) + Td(Param(c, "device"), Param(c, "device")) +
           Td(Param(c, "strategy"), Param(c, "strategy")) +
           Td(outcome, outcome, c.outcome == record::Outcome::kOk ? "outcome-ok" : "outcome-bad") +
           Td(verdict, verdict, record::IsUnreliable(c.verdict) ? "verdict-invalid" : "") +
           Td(reasons, reasons) + NumTd(Metric(c, record::metric::kSamplesPerS)) +
           NumTd(Metric(c, record::metric::kStepTimeMeanNs), 1e-6) +
           NumTd(Metric(c, record::metric::kStepTimeP99Ns), 1e-6) +
           NumTd(c.warmup_steps() ? std::optional<double>(static_cast<double>(*c.warmup_steps()))
                                  : std::nullopt) +
           Td(c.message, c.message) + "</tr>\n";
  }
  return out + "</tbody></table></div>\n";
}
}  // namespace

std::string RenderHtmlReport(const ReportInput& input, const ReportOptions& options) {
  const std::vector<json> charts = BuildCharts(input, options);
  const record::RunRecord& run = input.run;

  std::vector<std::string> warnings = input.warnings;
  CollectWarnings(run.environment, warnings);
  if (std::string(kBuildType) == "Debug") warnings.push_back("This dlbench was built as Debug.");
  int not_ok = 0, invalid = 0;
  for (const auto& c : input.cells) {
    if (c.outcome != record::Outcome::kOk) ++not_ok;
    if (record::IsUnreliable(c.verdict)) ++invalid;
  }
  if (not_ok > 0)
    warnings.push_back(fmt::format("{} of {} did not end ok.", not_ok,
                                   CountNoun(static_cast<std::int64_t>(input.cells.size()), "cell")));
  if (invalid > 0)
    warnings.push_back(fmt::format("{} {} a verdict other than valid (see {} reasons).",
                                   CountNoun(invalid, "ok cell"), invalid == 1 ? "has" : "have",
                                   invalid == 1 ? "its" : "their"));
  if (run.status != record::RunStatus::kCompleted)
    warnings.push_back("The run's status is " + std::string(record::Name(run.status)) + ".");

  json data = {{"run_id", run.id}, {"charts", charts}};
  const std::string title = fmt::format("dlbench report: run {} {}", run.id, run.name);

  std::string html;
  html.reserve(assets::kChartJs.size() + 65536);
  html += "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<title>" + EscapeHtml(title) + "</title>\n";
  html += "<!-- " +
          EscapeHtmlComment(fmt::format("Generated by dlbench {} ({}, {}) on {}.", kVersion, kGitCommit,
                                        kBuildType, FormatUtc(WallNowNs()))) +
          " -->\n";
  html += "<style>\n" + std::string(assets::kReportCss) + "</style>\n</head>\n<body>\n<main>\n";
  html += "<h1>" + EscapeHtml(title) + "</h1>\n";
  html += fmt::format(
      "<p class=\"meta\">Status {} &middot; started {} &middot; {} &middot; matrix {} &middot; "
      "measured with dlbench {} ({})</p>\n",
      EscapeHtml(record::Name(run.status)), EscapeHtml(FormatUtc(run.started_wall_ns)),
      CountNoun(static_cast<std::int64_t>(input.cells.size()), "cell"), EscapeHtml(run.matrix_path),
      EscapeHtml(run.tool_version), EscapeHtml(run.git_commit));
  html +=
      "<nav><a href=\"#environment\">environment</a> &middot; <a href=\"#cells\">cells</a> &middot; "
      "<a href=\"#throughput\">throughput</a> &middot; <a href=\"#latency\">latency</a> &middot; "
      "<a href=\"#steps\">step time</a> &middot; <a href=\"#monitor\">utilisation</a> &middot; "
      "<a href=\"#input\">input pipeline</a> &middot; "
      "<a href=\"#scaling\">scaling</a> &middot; <a href=\"#precisions\">precisions</a> &middot; "
      "<a href=\"#baseline\">baseline</a></nav>\n";
  html += "<section id=\"environment\"><h2>Environment</h2>\n" + EnvironmentSection(input, warnings) +
          "</section>\n";
  html += "<section id=\"cells\"><h2>Cells</h2>\n<p>Click a column to sort.</p>\n" + CellsSection(input) +
          "</section>\n";
  html += "<section id=\"throughput\"><h2>Throughput vs batch size</h2>\n" +
          ChartSection(charts, "throughput", "No configuration was measured ok at two or more batch sizes.") +
          "</section>\n";
  html += "<section id=\"latency\"><h2>Latency distribution (inference)</h2>\n" +
          ChartSection(charts, "latency", "No inference cell with step or query records.") + "</section>\n";
  html += "<section id=\"steps\"><h2>Step time</h2>\n" +
          ChartSection(charts, "steps", "No cell has step records.") + "</section>\n";
  html += "<section id=\"monitor\"><h2>Utilisation, power and memory</h2>\n" +
          ChartSection(charts, "monitor", "No series were sampled.") + "</section>\n";
  html +=
      "<section id=\"input\"><h2>Input pipeline: throughput vs decode workers</h2>\n" +
      ChartSection(charts, "input", "No cell read JPEG folders or TFRecords at two or more worker counts.") +
      "</section>\n";
  html += "<section id=\"scaling\"><h2>Data-parallel scaling: global samples/s vs ranks</h2>\n" +
          ChartSection(charts, "scaling", "No ddp configuration was measured at two or more world sizes.") +
          "</section>\n";
  html += "<section id=\"precisions\"><h2>Precisions</h2>\n" + PrecisionSection(input) + "</section>\n";
  html += "<section id=\"baseline\"><h2>Against the baseline</h2>\n" + BaselineSection(input, options) +
          "</section>\n";
  html += "<script id=\"dlbench-data\" type=\"application/json\">" + JsonForScript(data) + "</script>\n";
  html += "<!-- Chart.js, embedded so the report works offline. Its license:\n" +
          EscapeHtmlComment(assets::kChartJsLicense) + "\n-->\n";
  html += "<script>\n" + std::string(assets::kChartJs) + "\n</script>\n";
  html += "<script>\n" + std::string(assets::kReportJs) + "\n</script>\n";
  html += "</main>\n</body>\n</html>\n";
  return html;
}

}  // namespace dlbench::report
