// The HTML report's baseline section: history's statistical comparison (the numbers `dlbench
// compare` prints) when the caller made one, else plain throughput ratios per cell key.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

#include "common/clock.h"
#include "record/metrics.h"
#include "report/chart_json.h"
#include "report/escape.h"
#include "report/html_sections.h"

namespace dlbench::report::internal {
namespace {

using chart::Fmt;
using chart::Metric;

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

}  // namespace

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

}  // namespace dlbench::report::internal
