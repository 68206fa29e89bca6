#include "report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "common/clock.h"
#include "common/human_text.h"
#include "common/text.h"
#include "common/version.h"
#include "record/metrics.h"
#include "report/assets.h"
#include "report/chart_json.h"
#include "report/escape.h"
#include "report/export.h"
#include "report/input_charts.h"
#include "report/load_report.h"
#include "report/precision_view.h"
#include "report/scaling_charts.h"
#include "report/step_charts.h"

namespace dlbench::report {
namespace {

using nlohmann::json;

using chart::Axis;
using chart::CellTitle;
using chart::Dataset;
using chart::Fmt;
using chart::Metric;
using chart::NumericParam;
using chart::Param;
using chart::ParamText;
using chart::Point;

bool IsInference(const record::CellRecord& cell) { return Param(cell, "scenario").rfind("infer", 0) == 0; }

// A configuration: every parameter but the batch size ("model=resnet50 precision=fp32 ...").
std::string ConfigurationOf(const record::CellRecord& cell) {
  std::string out;
  if (!cell.params.is_object()) return out;
  for (auto it = cell.params.begin(); it != cell.params.end(); ++it) {
    if (it.key() == "batch_size") continue;
    if (!out.empty()) out += ' ';
    out += it.key() + "=" + ParamText(it.value());
  }
  return out;
}

void ThroughputCharts(const ReportInput& input, const ReportOptions& options, std::vector<json>& charts) {
  std::map<std::string, std::vector<const record::CellRecord*>> groups;
  for (const auto& c : input.cells) {
    if (c.outcome == record::Outcome::kOk && Metric(c, record::metric::kSamplesPerS) &&
        NumericParam(c, "batch_size")) {
      groups[ConfigurationOf(c)].push_back(&c);
    }
  }
  for (const auto& [config, cells] : groups) {
    std::vector<ThroughputPoint> points;
    json raw = json::array();
    for (const auto* c : cells) {
      const double b = *NumericParam(*c, "batch_size");
      const double t = *Metric(*c, record::metric::kSamplesPerS);
      points.push_back({b, t});
      raw.push_back(Point(b, t));
    }
    const Saturation sat = FindSaturation(points, options.saturation);
    if (sat.curve.size() < 2) continue;  // one batch size is a point, not a trend
    json curve = json::array();
    for (const auto& p : sat.curve) curve.push_back(Point(p.batch_size, p.samples_per_s));
    json datasets = json::array();
    json mean_line = Dataset("mean samples/s", "line", curve);
    mean_line["point_radius"] = 3;
    datasets.push_back(std::move(mean_line));
    if (raw.size() > sat.curve.size()) datasets.push_back(Dataset("each repetition", "points", raw));
    const auto value_at = [&sat](double batch) {
      for (const auto& p : sat.curve) {
        if (p.batch_size == batch) return p.samples_per_s;
      }
      return 0.0;
    };
    std::string note;
    if (sat.saturation_batch) {
      json m = Dataset(fmt::format("saturation (batch {})", Fmt(*sat.saturation_batch, 6)), "marker",
                       json::array({Point(*sat.saturation_batch, value_at(*sat.saturation_batch))}));
      m["color"] = "#2ca02c";
      datasets.push_back(std::move(m));
      note += fmt::format("Saturates at batch {}: no larger batch gains {}% per doubling. ",
                          Fmt(*sat.saturation_batch, 6), Fmt(options.saturation.min_gain_per_doubling * 100));
    } else {
      note += "No saturation: the largest step still pays. ";
    }
    if (sat.drop_batch) {
      json m = Dataset(fmt::format("drop (batch {})", Fmt(*sat.drop_batch, 6)), "marker",
                       json::array({Point(*sat.drop_batch, value_at(*sat.drop_batch))}));
      m["color"] = "#d62728";
      m["point_style"] = "crossRot";
      datasets.push_back(std::move(m));
      note += fmt::format("Throughput drops at batch {}. ", Fmt(*sat.drop_batch, 6));
    }
    note += fmt::format("Best: batch {} at {} samples/s.", Fmt(*sat.best_batch, 6),
                        Fmt(sat.best_samples_per_s, 4));
    const double span = sat.curve.back().batch_size / sat.curve.front().batch_size;
    json x_axis = Axis("batch size", span >= 8 ? "logarithmic" : "linear");
    // A log axis would otherwise start at a power of ten, leaving most of the chart empty.
    x_axis["min"] = sat.curve.front().batch_size;
    x_axis["max"] = sat.curve.back().batch_size;
    const std::string title = chart::SharedLabel(cells);
    charts.push_back({{"section", "throughput"},
                      {"title", title.empty() ? config : title},
                      {"configuration", config},
                      {"note", note},
                      {"x", std::move(x_axis)},
                      {"y", chart::RateAxis("samples/s")},
                      {"datasets", std::move(datasets)}});
  }
}

void LatencyCharts(const ReportInput& input, const ReportOptions& options, std::vector<json>& charts) {
  std::map<std::string, std::vector<const record::CellRecord*>> groups;
  for (const auto& c : input.cells) {
    if (IsInference(c) && c.outcome == record::Outcome::kOk && !c.steps.empty())
      groups[ConfigurationOf(c)].push_back(&c);
  }
  for (auto& [config, cells] : groups) {
    std::sort(cells.begin(), cells.end(), [](const auto* a, const auto* b) {
      return NumericParam(*a, "batch_size").value_or(0) < NumericParam(*b, "batch_size").value_or(0);
    });
    json datasets = json::array();
    std::string note;
    for (const auto* c : cells) {
      std::vector<double> latencies_ms;
      for (const auto& step : record::MeasuredSteps(*c))
        latencies_ms.push_back(NsToMs(step.end_ns - step.start_ns));
      if (latencies_ms.empty()) continue;
      json data = json::array();
      for (const auto& [x, y] : EmpiricalCdf(latencies_ms, options.max_points)) data.push_back(Point(x, y));
      const std::string bs = Param(*c, "batch_size");
      datasets.push_back(Dataset(bs.empty() ? CellTitle(*c) : fmt::format("batch {} (cell {})", bs, c->index),
                                 "line", data));
      const auto p50 = Metric(*c, record::metric::kStepTimeP50Ns);
      const auto p99 = Metric(*c, record::metric::kStepTimeP99Ns);
      if (p50 && p99)
        note += fmt::format("cell {}: P50 {} ms, P99 {} ms. ", c->index, Fmt(*p50 * 1e-6), Fmt(*p99 * 1e-6));
    }
    if (datasets.empty()) continue;
    const std::string title = chart::SharedLabel(cells);
    charts.push_back({{"section", "latency"},
                      {"title", title.empty() ? config : title},
                      {"configuration", config},
                      {"note", note},
                      {"x", Axis("latency (ms)")},
                      {"y", Axis("fraction of requests <= latency")},
                      {"datasets", std::move(datasets)}});
  }
}

void MonitorCharts(const ReportInput& input, const ReportOptions& options, std::vector<json>& charts) {
  struct Quantity {
    const char* name;
    const char* axis;
    double scale;
    bool (*matches)(const std::string&);
  };
  static const Quantity kQuantities[] = {
      {"utilisation", "%", 1.0, [](const std::string& s) { return EndsWith(s, "_pct"); }},
      {"power", "W", 1.0, [](const std::string& s) { return EndsWith(s, "_w"); }},
      {"memory", "MiB", 1.0 / (1024.0 * 1024.0),
       [](const std::string& s) { return EndsWith(s, "_bytes") && s.find("per_s") == std::string::npos; }},
  };
  for (const auto& c : input.cells) {
    if (c.series.empty()) continue;
    const std::int64_t origin = CellOriginNs(c);
    std::map<std::string, std::vector<std::pair<double, double>>> by_series;
    for (const auto& p : c.series) by_series[p.series].emplace_back(NsToSeconds(p.t_ns - origin), p.value);
    for (const Quantity& q : kQuantities) {
      json datasets = json::array();
      for (auto& [name, points] : by_series) {
        if (!q.matches(name)) continue;
        std::sort(points.begin(), points.end());
        json data = json::array();
        for (std::size_t k : ThinIndices(points.size(), options.max_points)) {
          data.push_back(Point(points[k].first, points[k].second * q.scale));
        }
        datasets.push_back(Dataset(name, "line", std::move(data)));
      }
      if (datasets.empty()) continue;
      charts.push_back({{"section", "monitor"},
                        {"title", fmt::format("{} - {}", CellTitle(c), q.name)},
                        {"note", "Seconds from the cell's first step; sampled by the monitor."},
                        {"x", Axis("time (s)")},
                        {"y", Axis(fmt::format("{} ({})", q.name, q.axis))},
                        {"datasets", std::move(datasets)}});
    }
  }
}

// "a.b.c" -> leaf text for every scalar leaf (arrays of scalars joined with ", ").
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

std::string Td(const std::string& text, const std::string& sort_value, const std::string& cls = "") {
  return fmt::format("<td{} data-v=\"{}\">{}</td>", cls.empty() ? "" : " class=\"" + cls + "\"",
                     EscapeHtml(sort_value), EscapeHtml(text));
}

std::string NumTd(std::optional<double> value, double scale = 1.0) {
  if (!value) return "<td class=\"num\" data-v=\"\"></td>";
  return fmt::format("<td class=\"num\" data-v=\"{}\">{}</td>", FormatNumber(*value * scale),
                     EscapeHtml(Fmt(*value * scale, 4)));
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

// CPU-GPU consistency (precision_view.h's CpuGpuConsistency), the figures `dlbench show` prints:
// each CUDA cell's evaluation outputs against the CPU cell with the same parameters, with the CPU
// cell named, and in the notes why there are no figures, SSD's boxes and a tolerance's warning.
// Empty when the run has no CUDA cell with an evaluation.
std::string ConsistencySection(const ReportInput& input) {
  const std::vector<ConsistencyRow> rows = CpuGpuConsistency(input.cells);
  if (rows.empty()) return "";
  std::string out =
      "<h3>CPU-GPU consistency</h3>\n<p>Each CUDA cell's outputs on the fixed evaluation set against the "
      "CPU cell's with the same parameters (precision included).</p>\n"
      "<div class=\"wide\"><table class=\"sortable\" id=\"consistency-table\"><thead><tr><th>cell</th>"
      "<th>precision</th><th>CPU cell</th><th>top-1 agreement</th><th>rows</th><th>max |diff|</th>"
      "<th>mean |diff|</th><th>notes</th></tr></thead><tbody>\n";
  for (const ConsistencyRow& r : rows) {
    const OutputAgreement& a = r.agreement;
    std::string notes = a.has_figures() ? "" : a.why_none;
    for (const std::string& n : AgreementNotes(a)) notes += (notes.empty() ? "" : "; ") + n;
    const auto fig = [&](double v) { return a.has_figures() ? std::optional<double>(v) : std::nullopt; };
    const std::string cpu = a.reference != nullptr ? a.reference->label : "";
    out += "<tr>" + Td(r.cell->label, r.cell->label) + Td(r.precision, r.precision) + Td(cpu, cpu) +
           NumTd(fig(a.top1_agreement)) + NumTd(fig(static_cast<double>(a.rows))) +
           NumTd(fig(a.max_abs_diff)) + NumTd(fig(a.mean_abs_diff)) + Td(notes, notes) + "</tr>\n";
  }
  return out + "</tbody></table></div>\n";
}

// The precision trade-off (precision_view.h), as `dlbench show` prints it: per model, one row per
// precision with size, latency, throughput, energy per sample, peak memory and the outputs against
// the fp32 cell's; CPU-GPU consistency; and converge cells' accuracy of the trained model per
// precision.
std::string PrecisionSection(const ReportInput& input) {
  std::string out;
  for (const PrecisionGroup& g : PrecisionTradeOff(input.cells)) {
    out += "<h3>" + EscapeHtml(g.label) + "</h3>\n";
    out +=
        "<div class=\"wide\"><table class=\"sortable\"><thead><tr><th>precision</th><th>weights "
        "(bytes)</th><th>step P50 (ms)</th><th>step P99 (ms)</th><th>samples/s</th><th>energy/sample "
        "(J)</th><th>energy source</th><th>peak memory (bytes)</th><th>top-1 agreement</th><th>max "
        "|diff|</th><th>mean |diff|</th><th>marks</th></tr></thead><tbody>\n";
    for (const PrecisionRow& r : g.rows) {
      const OutputAgreement& a = r.agreement;
      std::string marks;
      if (r.fastest) marks = "fastest";
      if (r.most_accurate) marks += marks.empty() ? "most accurate" : ", most accurate";
      if (!a.has_figures() && r.precision != kReferencePrecision)
        marks += (marks.empty() ? "" : "; ") + a.why_none;
      for (const std::string& n : AgreementNotes(a)) marks += (marks.empty() ? "" : "; ") + n;
      const auto fig = [&](double v) { return a.has_figures() ? std::optional<double>(v) : std::nullopt; };
      out += "<tr>" + Td(r.precision, r.precision) + NumTd(r.weight_bytes) + NumTd(r.step_p50_ns, 1e-6) +
             NumTd(r.step_p99_ns, 1e-6) + NumTd(r.samples_per_s) + NumTd(r.energy_per_sample_j) +
             Td(r.energy_source, r.energy_source) + NumTd(r.peak_memory_bytes) +
             NumTd(fig(a.top1_agreement)) + NumTd(fig(a.max_abs_diff)) + NumTd(fig(a.mean_abs_diff)) +
             Td(marks, marks) + "</tr>\n";
    }
    out += "</tbody></table></div>\n";
  }
  out += ConsistencySection(input);
  // Converge cells with eval_precisions.
  static constexpr const char* kPrecisions[] = {"fp32", "tf32", "bf16", "fp16", "int8"};
  std::string rows;
  for (const auto& c : input.cells) {
    if (!Metric(c, record::metric::kEvalAccuracyFp32)) continue;
    rows += "<tr>" + Td(std::to_string(c.index), std::to_string(c.index)) + Td(c.label, c.label);
    for (const char* p : kPrecisions) {
      rows += NumTd(Metric(c, *record::EvalAccuracyMetric(p)));
      if (auto delta = record::EvalAccuracyDeltaMetric(p)) rows += NumTd(Metric(c, *delta));
    }
    rows += "</tr>\n";
  }
  if (!rows.empty()) {
    out +=
        "<h3>Accuracy of the trained model per precision</h3>\n<p>The held-out set after training "
        "(scenario converge, eval_precisions); each delta is that precision's accuracy minus fp32's.</p>\n"
        "<div class=\"wide\"><table class=\"sortable\"><thead><tr><th>#</th><th>cell</th><th>fp32</th>"
        "<th>tf32</th><th>&Delta; tf32</th><th>bf16</th><th>&Delta; bf16</th><th>fp16</th><th>&Delta; "
        "fp16</th><th>int8</th><th>&Delta; int8</th></tr></thead><tbody>\n" +
        rows + "</tbody></table></div>\n";
  }
  if (out.empty()) {
    return "<p class=\"empty\">No cells differ only in precision, no CUDA cell has outputs to set "
           "against a CPU cell's, and no converge cell evaluated its trained model at several "
           "precisions.</p>\n";
  }
  return out;
}

// The baseline section from history's comparison: the same numbers `dlbench compare` prints.
std::string ComparisonSection(const ReportInput& input, const history::Comparison& cmp) {
  const record::RunRecord& base = *input.baseline_run;
  std::string out = fmt::format(
      "<p>Baseline: run {} ({}), started {}. Ratio = this run's {} over the baseline's, with a {:g}% "
      "confidence "
      "interval from the raw step records (block bootstrap); a cell is slower or faster only when the "
      "Benjamini-Hochberg adjusted p-value is below {:g} and the whole interval lies beyond &plusmn;{:g}% "
      "(as <code>dlbench compare</code>; docs/history.md).</p>\n",
      base.id, EscapeHtml(base.name), EscapeHtml(FormatUtc(base.started_wall_ns)),
      EscapeHtml(history::MetricName(cmp.options.metric)), 100 * cmp.options.confidence_level,
      cmp.options.alpha, 100 * cmp.options.threshold);
  if (base.environment_hash != input.run.environment_hash || !cmp.environment_changes.empty()) {
    std::string diffs;
    int shown = 0;
    for (const auto& change : cmp.environment_changes) {
      if (++shown > 40) break;
      diffs += std::string("<li>") +
               (change.decides_comparability ? "<strong>decides comparability</strong>: " : "") +
               EscapeHtml(history::DescribeChange(change)) + "</li>\n";
    }
    out += "<div class=\"warnings\"><p>The environments differ (fingerprint " +
           EscapeHtml(base.environment_hash) + " &rarr; " + EscapeHtml(input.run.environment_hash) +
           "): the comparison may not be fair.</p><ul>\n" + diffs + "</ul></div>\n";
  }
  std::string rows;
  for (const auto& c : cmp.cells) {
    const std::string verdict = history::VerdictName(c.verdict);
    const std::string cls = c.verdict == history::Verdict::kSlower   ? "slower"
                            : c.verdict == history::Verdict::kFaster ? "faster"
                                                                     : "";
    const std::string ci =
        c.ci_low && c.ci_high ? "[" + Fmt(*c.ci_low, 4) + ", " + Fmt(*c.ci_high, 4) + "]" : "-";
    rows += "<tr class=\"" + cls + "\">" + Td(c.label, c.label) + NumTd(c.base_value) +
            NumTd(c.candidate_value) + NumTd(c.ratio) + Td(ci, ci) + NumTd(c.q_value) + Td(verdict, verdict) +
            Td(c.note, c.note) + "</tr>\n";
  }
  if (rows.empty()) {
    out += "<p class=\"empty\">No cell key measured in both runs.</p>\n";
  } else {
    out += fmt::format("<p>{} slower beyond the threshold, {} faster.</p>\n", cmp.Regressions(),
                       cmp.CountVerdict(history::Verdict::kFaster));
    out +=
        std::string("<table class=\"sortable\" id=\"baseline-table\"><thead><tr><th>cell</th><th>baseline ") +
        history::MetricUnit(cmp.options.metric) +
        "</th><th>this run</th><th>ratio</th><th>CI of the ratio</th>"
        "<th>q</th><th>verdict</th><th>note</th></tr></thead><tbody>\n" +
        rows + "</tbody></table>\n";
  }
  std::string only;
  for (const auto& c : cmp.only_in_candidate)
    only += "<li>only in this run: " + EscapeHtml(c.label) + "</li>\n";
  for (const auto& c : cmp.only_in_base)
    only += "<li>only in the baseline: " + EscapeHtml(c.label) + "</li>\n";
  if (!only.empty()) out += "<ul>\n" + only + "</ul>\n";
  return out;
}

std::string BaselineSection(const ReportInput& input, const ReportOptions& options) {
  if (!input.baseline_run) return "<p class=\"empty\">No baseline given (--baseline RUN).</p>\n";
  if (input.comparison) return ComparisonSection(input, *input.comparison);
  const record::RunRecord& base = *input.baseline_run;
  std::string out = fmt::format(
      "<p>Baseline: run {} ({}), started {}. Ratio = this run's mean samples/s over the "
      "baseline's for the same cell key; beyond &plusmn;{}% it is marked. This is a plain "
      "ratio; <code>dlbench compare</code> tests it statistically.</p>\n",
      base.id, EscapeHtml(base.name), EscapeHtml(FormatUtc(base.started_wall_ns)),
      EscapeHtml(Fmt(options.baseline_threshold * 100)));
  if (base.environment_hash != input.run.environment_hash) {
    std::map<std::string, std::string> a, b;
    Flatten(base.environment, "", a);
    Flatten(input.run.environment, "", b);
    std::set<std::string> keys;
    for (const auto& [k, v] : a) keys.insert(k);
    for (const auto& [k, v] : b) keys.insert(k);
    std::string diffs;
    int shown = 0;
    for (const auto& k : keys) {
      const auto ia = a.find(k);
      const auto ib = b.find(k);
      const std::string va = ia == a.end() ? "(absent)" : ia->second;
      const std::string vb = ib == b.end() ? "(absent)" : ib->second;
      if (va == vb || ++shown > 40) continue;
      diffs += "<li><code>" + EscapeHtml(k) + "</code>: " + EscapeHtml(va) + " &rarr; " + EscapeHtml(vb) +
               "</li>\n";
    }
    out += "<div class=\"warnings\"><p>The environments differ (fingerprint " +
           EscapeHtml(base.environment_hash) + " &rarr; " + EscapeHtml(input.run.environment_hash) +
           "): the comparison may not be fair.</p><ul>\n" + diffs + "</ul></div>\n";
  }
  const auto pool = [](const std::vector<record::CellRecord>& cells) {
    std::map<std::string, std::pair<std::string, std::vector<double>>> by_key;
    for (const auto& c : cells) {
      const auto t = Metric(c, record::metric::kSamplesPerS);
      if (c.outcome != record::Outcome::kOk || !t) continue;
      auto& entry = by_key[c.key];
      entry.first = c.label;
      entry.second.push_back(*t);
    }
    return by_key;
  };
  const auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  };
  const auto base_pool = pool(input.baseline_cells);
  const auto cand_pool = pool(input.cells);
  std::string rows;
  int slower = 0;
  for (const auto& [key, cand] : cand_pool) {
    const auto found = base_pool.find(key);
    if (found == base_pool.end()) continue;
    const double b = mean(found->second.second);
    const double c = mean(cand.second);
    const double ratio = b > 0 ? c / b : NAN;
    std::string verdict = "same";
    std::string cls;
    if (ratio < 1 - options.baseline_threshold) {
      verdict = "slower";
      cls = "slower";
      ++slower;
    } else if (ratio > 1 + options.baseline_threshold) {
      verdict = "faster";
      cls = "faster";
    }
    rows += "<tr class=\"" + cls + "\">" + Td(cand.first, cand.first) + NumTd(b) + NumTd(c) + NumTd(ratio) +
            Td(verdict, verdict) + "</tr>\n";
  }
  std::string only;
  for (const auto& [key, cand] : cand_pool) {
    if (!base_pool.count(key)) only += "<li>only in this run: " + EscapeHtml(cand.first) + "</li>\n";
  }
  for (const auto& [key, b] : base_pool) {
    if (!cand_pool.count(key)) only += "<li>only in the baseline: " + EscapeHtml(b.first) + "</li>\n";
  }
  if (rows.empty()) {
    out += "<p class=\"empty\">No cell key measured ok in both runs.</p>\n";
  } else {
    out += fmt::format("<p>{} slower beyond the threshold.</p>\n", slower);
    out +=
        "<table class=\"sortable\" id=\"baseline-table\"><thead><tr><th>cell</th><th>baseline samples/s</th>"
        "<th>this run samples/s</th><th>ratio</th><th>change</th></tr></thead><tbody>\n" +
        rows + "</tbody></table>\n";
  }
  if (!only.empty()) out += "<ul>\n" + only + "</ul>\n";
  return out;
}

}  // namespace

std::vector<std::size_t> ThinIndices(std::size_t n, int max_points) {
  std::vector<std::size_t> out;
  if (n == 0) return out;
  const std::size_t cap = static_cast<std::size_t>(std::max(2, max_points));
  const std::size_t stride = n <= cap ? 1 : (n + cap - 2) / (cap - 1);
  for (std::size_t i = 0; i < n; i += stride) out.push_back(i);
  if (out.back() != n - 1) out.push_back(n - 1);
  return out;
}

std::vector<std::pair<double, double>> EmpiricalCdf(std::vector<double> values, int max_points) {
  std::vector<std::pair<double, double>> out;
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }),
               values.end());
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  const double n = static_cast<double>(values.size());
  for (std::size_t i : ThinIndices(values.size(), max_points)) {
    // F(x_i) = (i + 1) / n: the fraction of values <= the i-th smallest (ties take the last index
    // when thinning keeps it; the curve is drawn through the kept points).
    out.emplace_back(values[i], static_cast<double>(i + 1) / n);
  }
  return out;
}

std::vector<json> BuildCharts(const ReportInput& input, const ReportOptions& options) {
  std::vector<json> charts;
  ThroughputCharts(input, options, charts);
  LatencyCharts(input, options, charts);
  LoadLatencyCharts(input.cells, options.max_points, charts);
  PeakSearchCharts(input.cells, charts);
  LatencyDecompositionChart(input.cells, charts);
  StepCharts(input.cells, options.max_points, charts);
  MonitorCharts(input, options, charts);
  InputCharts(input.cells, charts);
  ScalingCharts(input.cells, charts);
  // Two configurations whose labels share the same words (they differ only in a parameter the
  // labels leave out) would get one title: those say their whole configuration.
  std::map<std::pair<std::string, std::string>, int> titles;
  for (const auto& c : charts) ++titles[{c["section"].get<std::string>(), c["title"].get<std::string>()}];
  for (auto& c : charts) {
    if (titles[{c["section"].get<std::string>(), c["title"].get<std::string>()}] > 1 &&
        c.contains("configuration"))
      c["title"] = c["title"].get<std::string>() + " (" + c["configuration"].get<std::string>() + ")";
  }
  for (std::size_t i = 0; i < charts.size(); ++i) charts[i]["id"] = fmt::format("chart-{}", i);
  return charts;
}

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
