#include "report/chart_json.h"

#include <cmath>
#include <set>
#include <utility>

#include "common/human_text.h"
#include "common/text.h"
#include "config/registry.h"

namespace dlbench::report::chart {

using nlohmann::json;

std::string ParamText(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "";
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

// Whether the cell's parameter `name` only follows another: the registry fills it from that one
// (default_from; samples_per_step from batch_size) and it holds that one's value. It then says
// nothing of its own, and keeping it would make a sweep of the other one a configuration per value.
bool FollowsItsSource(const json& params, const std::string& name, const json& value) {
  const config::ParamSpec* spec = config::FindParam(name, config::ParamSection::kCell);
  if (spec == nullptr || spec->default_from.empty()) return false;
  const auto source = params.find(spec->default_from);
  return source != params.end() && *source == value;
}

}  // namespace

std::string ConfigurationWithout(const record::CellRecord& cell, std::string_view varied) {
  std::string out;
  if (!cell.params.is_object()) return out;
  for (auto it = cell.params.begin(); it != cell.params.end(); ++it) {
    if (it.key() == varied || FollowsItsSource(cell.params, it.key(), it.value())) continue;
    if (!out.empty()) out += ' ';
    out += it.key() + "=" + ParamText(it.value());
  }
  return out;
}

std::string Param(const record::CellRecord& cell, const char* name) {
  return cell.params.is_object() && cell.params.contains(name) ? ParamText(cell.params[name]) : "";
}

std::optional<double> NumericParam(const record::CellRecord& cell, const char* name) {
  if (!cell.params.is_object() || !cell.params.contains(name)) return std::nullopt;
  const json& v = cell.params[name];
  if (v.is_number()) return v.get<double>();
  return std::nullopt;
}

std::optional<double> Metric(const record::CellRecord& cell, std::string_view name) {
  for (const auto& m : cell.metrics) {
    if (m.name == name && std::isfinite(m.value)) return m.value;
  }
  return std::nullopt;
}

std::string CellTitle(const record::CellRecord& cell) {
  return "cell " + std::to_string(cell.index) + ": " + (cell.label.empty() ? cell.key : cell.label);
}

std::string SharedLabel(const std::vector<const record::CellRecord*>& cells) {
  if (cells.empty()) return "";
  std::vector<std::set<std::string>> others;
  for (std::size_t i = 1; i < cells.size(); ++i) {
    const auto words = Split(cells[i]->label, ' ');
    others.emplace_back(words.begin(), words.end());
  }
  std::vector<std::string> shared;
  for (const std::string& word : Split(cells.front()->label, ' ')) {
    if (word.empty()) continue;
    bool everywhere = true;
    for (const auto& set : others) everywhere = everywhere && set.count(word) > 0;
    if (everywhere) shared.push_back(word);
  }
  return Join(shared, " ");
}

json Point(double x, double y) { return {{"x", x}, {"y", y}}; }

json Dataset(const std::string& label, const std::string& kind, json data) {
  return {{"label", label}, {"kind", kind}, {"data", std::move(data)}};
}

json Axis(const std::string& label, const std::string& type) { return {{"label", label}, {"type", type}}; }

json RateAxis(const std::string& label) {
  json axis = Axis(label);
  axis["min"] = 0;
  return axis;
}

std::string Fmt(double v, int digits) { return FormatSignificant(v, digits); }

}  // namespace dlbench::report::chart
