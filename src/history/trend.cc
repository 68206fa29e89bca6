#include "history/trend.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "common/clock.h"
#include "common/human_text.h"
#include "history/environment.h"
#include "history/text_table.h"
#include "stats/descriptive.h"
#include "stats/trend.h"

namespace dlbench::history {

Result<TrendFilter> ParseTrendFilter(const std::vector<std::string>& terms) {
  TrendFilter filter;
  for (const std::string& term : terms) {
    const auto eq = term.find('=');
    if (eq == std::string::npos || eq == 0) {
      return MakeError(ErrorKind::kInvalidInput,
                       "filter term '" + term + "' is not name=value (e.g. model=resnet50 batch_size=32)");
    }
    filter.terms.emplace_back(term.substr(0, eq), term.substr(eq + 1));
  }
  return filter;
}

namespace {

bool ValueMatches(const nlohmann::json& value, const std::string& text) {
  if (value.is_string()) return value.get<std::string>() == text;
  if (value.is_boolean()) return (value.get<bool>() ? "true" : "false") == text;
  if (value.is_number()) {
    char* end = nullptr;
    const double wanted = std::strtod(text.c_str(), &end);
    return end != text.c_str() && *end == '\0' && wanted == value.get<double>();
  }
  return value.dump() == text;
}

}  // namespace

bool MatchesFilter(const TrendFilter& filter, const nlohmann::json& params) {
  for (const auto& [name, text] : filter.terms) {
    if (!params.is_object()) return false;
    const auto it = params.find(name);
    if (it == params.end() || !ValueMatches(*it, text)) return false;
  }
  return true;
}

namespace {

// The cell's stored metric in the report's unit, nullopt when absent or not finite.
std::optional<double> StoredValue(const record::CellRecord& cell, Metric metric) {
  for (const record::MetricRecord& m : cell.metrics) {
    if (m.name == StoredMetricName(metric) && std::isfinite(m.value))
      return m.value * StoredMetricScale(metric);
  }
  return std::nullopt;
}

double MedianOf(const std::vector<TrendPoint>& points, std::size_t begin, std::size_t end) {
  std::vector<double> values;
  for (std::size_t i = begin; i < end; ++i) values.push_back(points[i].value);
  return stats::Median(std::move(values));
}

}  // namespace

std::vector<CellTrend> BuildTrends(const std::vector<RunData>& runs, const TrendFilter& filter,
                                   const TrendOptions& options) {
  std::vector<const RunData*> ordered;
  for (const RunData& r : runs) ordered.push_back(&r);
  std::stable_sort(ordered.begin(), ordered.end(), [](const RunData* a, const RunData* b) {
    if (a->run.started_wall_ns != b->run.started_wall_ns)
      return a->run.started_wall_ns < b->run.started_wall_ns;
    return a->run.id < b->run.id;
  });

  std::map<std::string, CellTrend> by_key;
  // The run each point came from, to name the environment changes at a change point.
  std::map<std::string, std::vector<const record::RunRecord*>> point_runs;
  for (const RunData* run : ordered) {
    std::map<std::string, std::vector<double>> values;
    std::map<std::string, const record::CellRecord*> first_cell;
    for (const record::CellRecord& cell : run->cells) {
      if (cell.outcome != record::Outcome::kOk || !MatchesFilter(filter, cell.params) ||
          !plan::MatchesCellFilter(filter.only, cell.params, cell.label, cell.key))
        continue;
      const std::optional<double> v = StoredValue(cell, options.metric);
      if (!v) continue;
      const std::string key = MatchKey(cell, options.ignore_params);
      values[key].push_back(*v);
      first_cell.emplace(key, &cell);
    }
    for (const auto& [key, vs] : values) {
      CellTrend& trend = by_key[key];
      if (trend.key.empty()) {
        trend.key = key;
        trend.label = first_cell[key]->label;
        trend.params = first_cell[key]->params;
      }
      TrendPoint p;
      p.run_id = run->run.id;
      p.run_name = run->run.name;
      p.tags = run->run.tags;
      p.started_wall_ns = run->run.started_wall_ns;
      p.value = stats::ComputeMoments(vs).mean;
      p.repetitions = static_cast<int>(vs.size());
      trend.points.push_back(std::move(p));
      point_runs[key].push_back(&run->run);
    }
  }

  std::vector<CellTrend> out;
  for (auto& [key, trend] : by_key) {
    std::vector<double> y;
    for (const TrendPoint& p : trend.points) y.push_back(p.value);
    const std::vector<std::size_t> starts =
        stats::DetectChangePoints(y, options.alpha, options.min_rel_shift, options.min_segment);
    const auto& runs_of_key = point_runs[key];
    for (std::size_t s = 0; s < starts.size(); ++s) {
      const std::size_t at = starts[s];
      if (at == 0 || at >= trend.points.size()) continue;
      const std::size_t begin = s == 0 ? 0 : starts[s - 1];
      const std::size_t end = s + 1 < starts.size() ? starts[s + 1] : trend.points.size();
      ChangePoint cp;
      cp.index = at;
      cp.run_id = trend.points[at].run_id;
      cp.started_wall_ns = trend.points[at].started_wall_ns;
      cp.before = MedianOf(trend.points, begin, at);
      cp.after = MedianOf(trend.points, at, end);
      cp.relative_change = cp.before != 0 ? cp.after / cp.before - 1 : NAN;
      for (const EnvironmentChange& c :
           DiffEnvironments(runs_of_key[at - 1]->environment, runs_of_key[at]->environment)) {
        cp.environment_changes.push_back(DescribeChange(c));
      }
      trend.points[at].starts_new_level = true;
      trend.change_points.push_back(std::move(cp));
    }
    out.push_back(std::move(trend));
  }
  return out;
}

Result<std::vector<CellTrend>> LoadTrends(store::ResultStore& store, const TrendFilter& filter,
                                          const TrendOptions& options) {
  auto runs = store.ListRuns();
  if (!runs.ok()) return runs.error();
  std::vector<RunData> data;
  data.reserve(runs->size());
  for (record::RunRecord& run : *runs) {
    auto cells = store.GetCells(run.id, store::CellQuery{});
    if (!cells.ok()) return cells.error();
    data.push_back(RunData{std::move(run), std::move(cells).value()});
  }
  // A --only name no stored cell has is a typo, refused as run refuses it.
  std::set<std::string> names;
  for (const RunData& r : data) {
    for (const record::CellRecord& c : r.cells) {
      if (!c.params.is_object()) continue;
      for (const auto& [name, value] : c.params.items()) names.insert(name);
    }
  }
  DLBENCH_RETURN_IF_ERROR(plan::CheckCellFilterNames(filter.only, names));
  return BuildTrends(data, filter, options);
}

std::string Sparkline(const std::vector<double>& values) {
  static const char* const kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (values.empty()) return "";
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  std::string out;
  for (double v : values) {
    int level = 3;
    if (*hi > *lo) level = static_cast<int>(std::lround((v - *lo) / (*hi - *lo) * 7));
    out += kBlocks[std::clamp(level, 0, 7)];
  }
  return out;
}

Result<TrendFormat> ParseTrendFormat(const std::string& text) {
  if (text == "table") return TrendFormat::kTable;
  if (text == "csv") return TrendFormat::kCsv;
  if (text == "json") return TrendFormat::kJson;
  return MakeError(ErrorKind::kInvalidInput, "unknown format '" + text + "' (table, csv, json)");
}

namespace {

std::string JoinTags(const std::vector<std::string>& tags) {
  std::string out;
  for (const auto& t : tags) out += (out.empty() ? "" : ";") + t;
  return out;
}

const ChangePoint* ChangeAt(const CellTrend& trend, std::size_t index) {
  for (const ChangePoint& cp : trend.change_points) {
    if (cp.index == index) return &cp;
  }
  return nullptr;
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string FormatTrendTable(const std::vector<CellTrend>& trends, Metric metric) {
  if (trends.empty()) return "no stored cell matches the filter\n";
  std::string out;
  for (const CellTrend& trend : trends) {
    std::vector<double> y;
    for (const TrendPoint& p : trend.points) y.push_back(p.value);
    out += fmt::format("{}  {} ({})  {}  {} run{}, {} change point{}\n",
                       trend.label.empty() ? trend.key : trend.label, MetricName(metric), MetricUnit(metric),
                       Sparkline(y), trend.points.size(), trend.points.size() == 1 ? "" : "s",
                       trend.change_points.size(), trend.change_points.size() == 1 ? "" : "s");
    if (!trend.label.empty() && trend.label != trend.key) out += "  key: " + trend.key + "\n";
    std::vector<std::vector<std::string>> rows = {{"run", "started (UTC)", "tags", "value", "change"}};
    for (std::size_t i = 0; i < trend.points.size(); ++i) {
      const TrendPoint& p = trend.points[i];
      std::string change;
      if (const ChangePoint* cp = ChangeAt(trend, i)) {
        change = fmt::format("<- new level {:+.1f}% (median {} -> {})", cp->relative_change * 100,
                             FormatSignificant(cp->before, 4), FormatSignificant(cp->after, 4));
        for (const std::string& e : cp->environment_changes) change += "; " + e;
      }
      rows.push_back({fmt::format("{}", p.run_id), FormatUtc(p.started_wall_ns), JoinTags(p.tags),
                      FormatSignificant(p.value, 4), change});
    }
    std::string table =
        RenderTextTable(rows, {Align::kRight, Align::kLeft, Align::kLeft, Align::kRight, Align::kLeft});
    std::size_t pos = 0;
    while (pos < table.size()) {
      const std::size_t nl = table.find('\n', pos);
      out += "  " + table.substr(pos, nl - pos + 1);
      pos = nl + 1;
    }
    out += "\n";
  }
  return out;
}

std::string FormatTrendCsv(const std::vector<CellTrend>& trends, Metric metric) {
  std::string out =
      "key,label,run_id,run_name,tags,started_utc,metric,unit,value,repetitions,change_point,relative_"
      "change\n";
  for (const CellTrend& trend : trends) {
    for (std::size_t i = 0; i < trend.points.size(); ++i) {
      const TrendPoint& p = trend.points[i];
      const ChangePoint* cp = ChangeAt(trend, i);
      out += fmt::format("{},{},{},{},{},{},{},{},{:.17g},{},{},{}\n", CsvField(trend.key),
                         CsvField(trend.label), p.run_id, CsvField(p.run_name), CsvField(JoinTags(p.tags)),
                         FormatUtc(p.started_wall_ns), MetricName(metric), MetricUnit(metric), p.value,
                         p.repetitions, cp ? "true" : "false",
                         cp ? fmt::format("{:.17g}", cp->relative_change) : "");
    }
  }
  return out;
}

nlohmann::json TrendsToJson(const std::vector<CellTrend>& trends, Metric metric) {
  nlohmann::json out = nlohmann::json::array();
  for (const CellTrend& trend : trends) {
    nlohmann::json points = nlohmann::json::array();
    for (const TrendPoint& p : trend.points) {
      points.push_back({{"run_id", p.run_id},
                        {"run_name", p.run_name},
                        {"tags", p.tags},
                        {"started_utc", FormatUtc(p.started_wall_ns)},
                        {"started_wall_ns", p.started_wall_ns},
                        {"value", p.value},
                        {"repetitions", p.repetitions},
                        {"starts_new_level", p.starts_new_level}});
    }
    nlohmann::json changes = nlohmann::json::array();
    for (const ChangePoint& cp : trend.change_points) {
      changes.push_back(
          {{"index", cp.index},
           {"run_id", cp.run_id},
           {"started_utc", FormatUtc(cp.started_wall_ns)},
           {"before", cp.before},
           {"after", cp.after},
           {"relative_change",
            std::isfinite(cp.relative_change) ? nlohmann::json(cp.relative_change) : nlohmann::json(nullptr)},
           {"environment_changes", cp.environment_changes}});
    }
    out.push_back({{"key", trend.key},
                   {"label", trend.label},
                   {"params", trend.params},
                   {"metric", MetricName(metric)},
                   {"unit", MetricUnit(metric)},
                   {"points", std::move(points)},
                   {"change_points", std::move(changes)}});
  }
  return out;
}

std::string FormatTrends(const std::vector<CellTrend>& trends, Metric metric, TrendFormat format) {
  switch (format) {
    case TrendFormat::kCsv:
      return FormatTrendCsv(trends, metric);
    case TrendFormat::kJson:
      return TrendsToJson(trends, metric).dump(2) + "\n";
    case TrendFormat::kTable:
      break;
  }
  return FormatTrendTable(trends, metric);
}

}  // namespace dlbench::history
