#include "report/export.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "common/clock.h"
#include "common/text.h"
#include "common/version.h"
#include "record/metrics.h"
#include "report/escape.h"

namespace dlbench::report {
namespace {

std::string ParamText(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json OptionalUtc(std::int64_t wall_ns) {
  if (wall_ns <= 0) return nullptr;
  return FormatUtc(wall_ns);
}

}  // namespace

std::string FormatNumber(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

std::int64_t CellOriginNs(const record::CellRecord& cell) {
  if (!cell.steps.empty()) {
    std::int64_t origin = cell.steps.front().record.start_ns;
    for (const auto& s : cell.steps) origin = std::min(origin, s.record.start_ns);
    return origin;
  }
  if (!cell.series.empty()) {
    std::int64_t origin = cell.series.front().t_ns;
    for (const auto& p : cell.series) origin = std::min(origin, p.t_ns);
    return origin;
  }
  return 0;
}

nlohmann::json RunToJson(const record::RunRecord& run, const std::vector<record::CellRecord>& cells) {
  nlohmann::json out;
  out["format"] = kExportFormat;
  out["schema"] = kExportSchema;
  out["tool"] = {{"version", kVersion}, {"git_commit", kGitCommit}, {"build_type", kBuildType}};
  out["run"] = {
      {"id", run.id},
      {"name", run.name},
      {"matrix_path", run.matrix_path},
      {"matrix_text", run.matrix_text},
      {"status", record::Name(run.status)},
      {"started_wall_ns", run.started_wall_ns},
      {"started_utc", OptionalUtc(run.started_wall_ns)},
      {"finished_wall_ns", run.finished_wall_ns ? nlohmann::json(*run.finished_wall_ns) : nlohmann::json()},
      {"finished_utc", run.finished_wall_ns ? OptionalUtc(*run.finished_wall_ns) : nlohmann::json()},
      {"environment_hash", run.environment_hash},
      {"environment", run.environment},
      {"tool_version", run.tool_version},
      {"git_commit", run.git_commit},
      {"total_cells", run.total_cells},
      {"selection", record::RunSelectionToJson(run.selection)},
      {"tags", run.tags},
  };
  if (!run.sweep.empty()) out["run"]["sweep"] = {{"name", run.sweep}, {"cells", run.sweep_cells}};
  nlohmann::json cells_json = nlohmann::json::array();
  for (const record::CellRecord& c : cells) {
    nlohmann::json metrics = nlohmann::json::object();
    for (const record::MetricRecord& m : c.metrics) {
      // JSON has no NaN or infinity; an undefined metric is null rather than a broken file.
      metrics[m.name] = {{"value", std::isfinite(m.value) ? nlohmann::json(m.value) : nlohmann::json()},
                         {"unit", m.unit}};
    }
    cells_json.push_back({
        {"index", c.index},
        {"cell_id", c.cell_id},
        {"key", c.key},
        {"label", c.label},
        {"params", c.params},
        {"effective", c.effective},
        {"runner", c.hello},
        {"repetition", c.repetition},
        {"seed", c.seed},
        {"outcome", record::Name(c.outcome)},
        {"message", c.message},
        {"verdict", record::Name(c.verdict)},
        {"verdict_reasons", c.verdict_reasons},
        // The measured window, under the names of the metrics that carry the same numbers.
        {record::metric::kWarmupSteps, c.window ? nlohmann::json(c.window->first_step) : nlohmann::json()},
        {record::metric::kMeasuredSteps, c.window ? nlohmann::json(c.window->steps) : nlohmann::json()},
        {"warmup_rule", c.warmup_rule},
        {"stop_reason", c.stop_reason},
        {"started_utc", OptionalUtc(c.started_wall_ns)},
        {"finished_utc", OptionalUtc(c.finished_wall_ns)},
        {"stdout_path", c.stdout_path},
        {"stderr_path", c.stderr_path},
        {"extras", c.extras},
        {"metrics", metrics},
    });
  }
  out["cells"] = std::move(cells_json);
  // Every metric name in the file with its definition, so the file explains itself.
  nlohmann::json definitions = nlohmann::json::object();
  for (const record::CellRecord& c : cells) {
    for (const record::MetricRecord& m : c.metrics) {
      if (definitions.contains(m.name)) continue;
      if (const record::MetricDef* d = record::FindMetricDef(m.name)) {
        definitions[m.name] = {{"unit", d->unit},
                               {"producer", record::Name(d->producer)},
                               {"window", d->window},
                               {"formula", d->formula}};
      }
    }
  }
  out["metric_definitions"] = std::move(definitions);
  return out;
}

std::string CellsToCsv(const std::vector<record::CellRecord>& cells) {
  std::set<std::string> param_names;
  std::set<std::string> metric_names;
  for (const auto& c : cells) {
    if (c.params.is_object()) {
      for (auto it = c.params.begin(); it != c.params.end(); ++it) param_names.insert(it.key());
    }
    for (const auto& m : c.metrics) metric_names.insert(m.name);
  }
  std::string out = "run_id,index,cell_id,key,label,repetition,seed,outcome,verdict,verdict_reasons,message";
  for (const auto& p : param_names) out += "," + CsvField("param." + p);
  for (const auto& m : metric_names) out += "," + CsvField(m);
  out += "\n";
  for (const auto& c : cells) {
    std::string reasons;
    if (c.verdict_reasons.is_array()) {
      for (const auto& r : c.verdict_reasons) {
        if (!reasons.empty()) reasons += "; ";
        reasons += ParamText(r);
      }
    }
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{}", c.run_id, c.index, CsvField(c.cell_id),
                       CsvField(c.key), CsvField(c.label), c.repetition, c.seed,
                       CsvField(record::Name(c.outcome)), CsvField(record::Name(c.verdict)),
                       CsvField(reasons), CsvField(c.message));
    for (const auto& p : param_names) {
      out += ',';
      if (c.params.is_object() && c.params.contains(p)) out += CsvField(ParamText(c.params[p]));
    }
    std::map<std::string, double> values;
    for (const auto& m : c.metrics) values[m.name] = m.value;
    for (const auto& m : metric_names) {
      out += ',';
      auto it = values.find(m);
      if (it != values.end()) out += FormatNumber(it->second);
    }
    out += "\n";
  }
  return out;
}

std::string SeriesUnit(const std::string& series_name) {
  static const std::pair<const char*, const char*> kSuffixes[] = {
      {"_pct", "%"},   {"_w", "W"},         {"_bytes", "B"},   {"_mib", "MiB"},
      {"_mhz", "MHz"}, {"_c", "C"},         {"_j", "J"},       {"_ns", "ns"},
      {"_s", "s"},     {"_ratio", "ratio"}, {"_per_s", "1/s"}, {"_bytes_per_s", "B/s"},
  };
  std::string best;
  std::size_t best_len = 0;
  for (const auto& [suffix, unit] : kSuffixes) {
    const std::string s = suffix;
    // The longest matching suffix wins: "_bytes_per_s" over "_per_s" over "_s".
    if (EndsWith(series_name, s) && s.size() > best_len) {
      best = unit;
      best_len = s.size();
    }
  }
  return best;
}

std::string SeriesToCsv(const std::vector<record::CellRecord>& cells) {
  std::set<std::string> names;
  for (const auto& c : cells) {
    for (const auto& p : c.series) names.insert(p.series);
  }
  std::map<std::string, std::size_t> column;
  std::string out = "cell,cell_id,t_ns,t_s";
  for (const auto& n : names) {
    column[n] = column.size();
    const std::string unit = SeriesUnit(n);
    out += "," + CsvField(unit.empty() ? n : n + " [" + unit + "]");
  }
  out += "\n";
  for (const auto& c : cells) {
    const std::int64_t origin = CellOriginNs(c);
    // Samplers stamp every reading of one instant with the same t_ns: one row per stamp.
    std::map<std::int64_t, std::vector<std::optional<double>>> rows;
    for (const auto& p : c.series) {
      auto& row = rows[p.t_ns];
      row.resize(names.size());
      row[column[p.series]] = p.value;
    }
    for (const auto& [t_ns, values] : rows) {
      out += fmt::format("{},{},{},{}", c.index, CsvField(c.cell_id), t_ns,
                         FormatNumber(NsToSeconds(t_ns - origin)));
      for (const auto& v : values) {
        out += ',';
        if (v) out += FormatNumber(*v);
      }
      out += "\n";
    }
  }
  return out;
}

}  // namespace dlbench::report
