#include "history/compare_format.h"

#include <fmt/core.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/human_text.h"
#include "common/text.h"
#include "history/text_table.h"

namespace dlbench::history {

Result<CompareFormat> ParseCompareFormat(const std::string& text) {
  if (text == "table") return CompareFormat::kTable;
  if (text == "json") return CompareFormat::kJson;
  if (text == "markdown") return CompareFormat::kMarkdown;
  return MakeError(ErrorKind::kInvalidInput, "unknown format '" + text + "' (table, json, markdown)");
}

namespace {

std::string RunTitle(std::int64_t id, const std::string& name, const std::vector<std::string>& tags) {
  std::string out = fmt::format("run {}", id);
  std::string extra;
  for (const auto& t : tags) extra += (extra.empty() ? "" : ", ") + t;
  if (!name.empty()) extra = name + (extra.empty() ? "" : ", " + extra);
  if (!extra.empty()) out += " (" + extra + ")";
  return out;
}

std::string Value(const std::optional<double>& v) { return v ? FormatSignificant(*v, 4) : "-"; }

std::string Percent(double ratio) { return fmt::format("{:+.2f}%", (ratio - 1) * 100); }

std::string Change(const CellComparison& c) { return c.ratio ? Percent(*c.ratio) : "-"; }

std::string Interval(const CellComparison& c) {
  if (!c.ci_low || !c.ci_high) return "-";
  return "[" + Percent(*c.ci_low) + ", " + Percent(*c.ci_high) + "]";
}

std::string Probability(const std::optional<double>& p) {
  if (!p) return "-";
  if (*p < 0.001) return "<0.001";
  return fmt::format("{:.3f}", *p);
}

std::string Join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

std::string CellName(const CellComparison& c) { return c.label.empty() ? c.key : c.label; }

std::string MethodLine(const Comparison& cmp) {
  const CompareOptions& o = cmp.options;
  if (o.metric == Metric::kEnergy) {
    return fmt::format(
        "threshold {:.1f}%; energy per sample is one stored value per cell: no test, "
        "'changed' when it moves beyond the threshold",
        o.threshold * 100);
  }
  // Which intervals the cells used: within-run only, across repetitions, or a history noise floor.
  int between = 0, floor = 0;
  for (const CellComparison& c : cmp.cells) {
    between += c.between_ci_low.has_value();
    floor += c.noise_floor_cv.has_value();
  }
  std::string process = "no between-run noise known (no repetitions, no history in this environment)";
  if (between > 0 || floor > 0) {
    process = fmt::format(
        "between-run noise from repetitions for {} (the wider interval used) and from a history noise floor "
        "for "
        "{}",
        CountNoun(between, "cell"), floor);
  }
  return fmt::format(
      "threshold {:.1f}%, false-discovery rate {:.0f}% (Benjamini-Hochberg over the matrix), "
      "{:.0f}% CI by moving-block bootstrap of the steps; {}; contended cells are not judged",
      o.threshold * 100, o.alpha * 100, o.confidence_level * 100, process);
}

std::string IgnoredLine(const Comparison& cmp) {
  std::string out;
  for (const auto& name : cmp.options.ignore_params) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? out : "cells matched ignoring " + out;
}

std::string MetricLine(const Comparison& cmp) {
  const Metric m = cmp.options.metric;
  return fmt::format("{} ({}, {} is better); change = candidate / base - 1", MetricName(m), MetricUnit(m),
                     HigherIsBetter(m) ? "higher" : "lower");
}

std::string Summary(const Comparison& cmp) {
  std::string out = fmt::format("{} slower, {} faster, {} no change", cmp.CountVerdict(Verdict::kSlower),
                                cmp.CountVerdict(Verdict::kFaster), cmp.CountVerdict(Verdict::kNoChange));
  if (cmp.options.metric == Metric::kEnergy)
    out += fmt::format(", {} changed", cmp.CountVerdict(Verdict::kChanged));
  out += fmt::format(", {} not comparable", cmp.CountVerdict(Verdict::kNotComparable));
  if (!cmp.only_in_base.empty() || !cmp.only_in_candidate.empty()) {
    out += fmt::format("; {} only in base, {} only in candidate ({:.0f}% of the base's cells matched)",
                       cmp.only_in_base.size(), cmp.only_in_candidate.size(), 100 * cmp.MatchedShare());
  }
  return out;
}

}  // namespace

std::string FormatCompareTable(const Comparison& cmp) {
  std::string out = "compare: " + RunTitle(cmp.base_run_id, cmp.base_name, cmp.base_tags) + " -> " +
                    RunTitle(cmp.candidate_run_id, cmp.candidate_name, cmp.candidate_tags) + "\n";
  out += "metric: " + MetricLine(cmp) + "\n";
  out += "method: " + MethodLine(cmp) + "\n";
  if (!cmp.options.ignore_params.empty()) out += IgnoredLine(cmp) + "\n";
  if (!cmp.environment_changes.empty()) {
    out += cmp.EnvironmentDecisive()
               ? "\nENVIRONMENT CHANGED (fields that decide comparability are marked !):\n"
               : "\nenvironment changes (none decides comparability):\n";
    for (const EnvironmentChange& c : cmp.environment_changes) {
      out += std::string(c.decides_comparability ? "  ! " : "    ") + DescribeChange(c) + "\n";
    }
  }
  out += "\n";
  std::vector<std::vector<std::string>> rows = {
      {"cell", "base", "candidate", "change", fmt::format("{:.0f}% CI", cmp.options.confidence_level * 100),
       "p", "q", "verdict"}};
  std::vector<std::string> notes;
  for (const CellComparison& c : cmp.cells) {
    std::string verdict = VerdictName(c.verdict);
    if (!c.note.empty()) {
      notes.push_back(fmt::format("[{}] {}: {}", notes.size() + 1, CellName(c), c.note));
      verdict += fmt::format(" [{}]", notes.size());
    }
    rows.push_back({CellName(c), Value(c.base_value), Value(c.candidate_value), Change(c), Interval(c),
                    Probability(c.p_value), Probability(c.q_value), verdict});
  }
  if (cmp.cells.empty()) {
    out += "no cell is present in both runs\n";
  } else {
    out += RenderTextTable(rows, {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kLeft,
                                  Align::kRight, Align::kRight, Align::kLeft});
  }
  for (const auto& n : notes) out += n + "\n";
  for (const UnmatchedCell& u : cmp.only_in_base)
    out += "only in base: " + (u.label.empty() ? u.key : u.label) + "\n";
  for (const UnmatchedCell& u : cmp.only_in_candidate) {
    out += "only in candidate: " + (u.label.empty() ? u.key : u.label) + "\n";
  }
  if (!cmp.differing_params.empty()) {
    out += "the unmatched cells differ in: " + Join(cmp.differing_params, "; ") + "\n";
  }
  out += "\n" + Summary(cmp) + "\n";
  return out;
}

nlohmann::json CompareToJson(const Comparison& cmp) {
  const CompareOptions& o = cmp.options;
  auto optional = [](const std::optional<double>& v) -> nlohmann::json {
    return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  nlohmann::json j;
  j["base"] = {{"run_id", cmp.base_run_id}, {"name", cmp.base_name}, {"tags", cmp.base_tags}};
  j["candidate"] = {
      {"run_id", cmp.candidate_run_id}, {"name", cmp.candidate_name}, {"tags", cmp.candidate_tags}};
  j["metric"] = MetricName(o.metric);
  j["unit"] = MetricUnit(o.metric);
  j["higher_is_better"] = HigherIsBetter(o.metric);
  j["threshold"] = o.threshold;
  j["alpha"] = o.alpha;
  j["confidence_level"] = o.confidence_level;
  j["bootstrap_iterations"] = o.bootstrap_iterations;
  j["ignore_params"] = o.ignore_params;
  j["environment_comparable"] = !cmp.EnvironmentDecisive();
  j["environment_changes"] = nlohmann::json::array();
  for (const EnvironmentChange& c : cmp.environment_changes) {
    nlohmann::json change;
    change["path"] = c.path;
    change["before"] = c.before;
    change["after"] = c.after;
    change["decides_comparability"] = c.decides_comparability;
    change["text"] = DescribeChange(c);
    j["environment_changes"].push_back(std::move(change));
  }
  j["cells"] = nlohmann::json::array();
  for (const CellComparison& c : cmp.cells) {
    j["cells"].push_back({{"key", c.key},
                          {"label", c.label},
                          {"params", c.params},
                          {"base_repetitions", c.base_repetitions},
                          {"candidate_repetitions", c.candidate_repetitions},
                          {"base_steps", c.base_steps},
                          {"candidate_steps", c.candidate_steps},
                          {"base_value", optional(c.base_value)},
                          {"candidate_value", optional(c.candidate_value)},
                          {"ratio", optional(c.ratio)},
                          {"ci_low", optional(c.ci_low)},
                          {"ci_high", optional(c.ci_high)},
                          {"p_value", optional(c.p_value)},
                          {"q_value", optional(c.q_value)},
                          {"verdict", VerdictName(c.verdict)},
                          {"contended", c.contended},
                          {"interval_method", c.interval_method},
                          {"within_ci_low", optional(c.within_ci_low)},
                          {"within_ci_high", optional(c.within_ci_high)},
                          {"between_ci_low", optional(c.between_ci_low)},
                          {"between_ci_high", optional(c.between_ci_high)},
                          {"noise_floor_cv", optional(c.noise_floor_cv)},
                          {"note", c.note}});
  }
  auto unmatched = [](const std::vector<UnmatchedCell>& cells) {
    nlohmann::json a = nlohmann::json::array();
    for (const UnmatchedCell& u : cells) a.push_back({{"key", u.key}, {"label", u.label}});
    return a;
  };
  j["only_in_base"] = unmatched(cmp.only_in_base);
  j["only_in_candidate"] = unmatched(cmp.only_in_candidate);
  j["matched_share"] = cmp.MatchedShare();
  j["differing_params"] = cmp.differing_params;
  j["summary"] = {{"slower", cmp.CountVerdict(Verdict::kSlower)},
                  {"faster", cmp.CountVerdict(Verdict::kFaster)},
                  {"no_change", cmp.CountVerdict(Verdict::kNoChange)},
                  {"changed", cmp.CountVerdict(Verdict::kChanged)},
                  {"not_comparable", cmp.CountVerdict(Verdict::kNotComparable)},
                  {"regressions", cmp.Regressions()}};
  return j;
}

std::string FormatCompareMarkdown(const Comparison& cmp) {
  std::string out =
      "### dlbench compare: " + EscapeMarkdownCell(RunTitle(cmp.base_run_id, cmp.base_name, cmp.base_tags)) +
      " → " + EscapeMarkdownCell(RunTitle(cmp.candidate_run_id, cmp.candidate_name, cmp.candidate_tags)) +
      "\n\n";
  const int slower = cmp.Regressions();
  out += (slower > 0 ? fmt::format(":red_circle: **{} regression{}** · ", slower, slower == 1 ? "" : "s")
                     : std::string(":white_check_mark: **no regression** · ")) +
         EscapeMarkdownCell(Summary(cmp)) + "\n\n";
  out += "Metric: " + EscapeMarkdownCell(MetricLine(cmp)) +
         ".  \nMethod: " + EscapeMarkdownCell(MethodLine(cmp)) + ".";
  if (!cmp.options.ignore_params.empty()) out += "  \n" + EscapeMarkdownCell(IgnoredLine(cmp)) + ".";
  out += "\n\n";
  if (!cmp.environment_changes.empty()) {
    out += cmp.EnvironmentDecisive()
               ? "> :warning: **The environment changed in fields that decide comparability:**\n"
               : "> Environment changes (none decides comparability):\n";
    for (const EnvironmentChange& c : cmp.environment_changes) {
      out += "> - " + std::string(c.decides_comparability ? "**" : "") + "`" + DescribeChange(c) + "`" +
             (c.decides_comparability ? "**" : "") + "\n";
    }
    out += "\n";
  }
  if (!cmp.cells.empty()) {
    out += fmt::format("| cell | base | candidate | change | {:.0f}% CI | q | verdict |\n",
                       cmp.options.confidence_level * 100);
    out += "|---|---:|---:|---:|---|---:|---|\n";
    for (const CellComparison& c : cmp.cells) {
      std::string verdict = VerdictName(c.verdict);
      if (c.verdict == Verdict::kSlower) verdict = ":red_circle: **slower**";
      if (c.verdict == Verdict::kFaster) verdict = ":green_circle: faster";
      if (!c.note.empty()) verdict += " (" + c.note + ")";
      out += "| " + EscapeMarkdownCell(CellName(c)) + " | " + Value(c.base_value) + " | " +
             Value(c.candidate_value) + " | " + Change(c) + " | " + Interval(c) + " | " +
             Probability(c.q_value) + " | " + EscapeMarkdownCell(verdict) + " |\n";
    }
    out += "\n";
  }
  if (!cmp.only_in_base.empty() || !cmp.only_in_candidate.empty()) {
    out += "<details><summary>Cells on one side only</summary>\n\n";
    for (const UnmatchedCell& u : cmp.only_in_base) out += "- only in base: `" + u.key + "`\n";
    for (const UnmatchedCell& u : cmp.only_in_candidate) out += "- only in candidate: `" + u.key + "`\n";
    out += "\n</details>\n";
  }
  return out;
}

std::string FormatComparison(const Comparison& cmp, CompareFormat format) {
  switch (format) {
    case CompareFormat::kJson:
      return CompareToJson(cmp).dump(2) + "\n";
    case CompareFormat::kMarkdown:
      return FormatCompareMarkdown(cmp);
    case CompareFormat::kTable:
      break;
  }
  return FormatCompareTable(cmp);
}

}  // namespace dlbench::history
