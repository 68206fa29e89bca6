#include "report/chart_json.h"

#include <fmt/format.h>

#include <cmath>
#include <utility>

namespace dlbench::report::chart {

using nlohmann::json;

std::string ParamText(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "";
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
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

json Point(double x, double y) { return {{"x", x}, {"y", y}}; }

json Dataset(const std::string& label, const std::string& kind, json data) {
  return {{"label", label}, {"kind", kind}, {"data", std::move(data)}};
}

json Axis(const std::string& label, const std::string& type) { return {{"label", label}, {"type", type}}; }

std::string Fmt(double v, int digits) {
  if (!std::isfinite(v)) return "-";
  return fmt::format("{:.{}g}", v, digits);
}

}  // namespace dlbench::report::chart
