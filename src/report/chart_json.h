// Small pieces the HTML report's charts are built from (html_report.cc, input_charts.cc): a
// cell's parameters and metrics read leniently (a stored cell may lack either), and the chart
// JSON that assets/report.js draws (points, datasets, axes).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "record/records.h"

namespace dlbench::report::chart {

// A parameter value as text: strings bare, other JSON compact; "" for null.
std::string ParamText(const nlohmann::json& value);
// The cell's parameter `name` as text, "" when it has none.
std::string Param(const record::CellRecord& cell, const char* name);
// The cell's parameter `name` when it is a number.
std::optional<double> NumericParam(const record::CellRecord& cell, const char* name);
// The cell's metric `name` when stored and finite.
std::optional<double> Metric(const record::CellRecord& cell, std::string_view name);

nlohmann::json Point(double x, double y);
// kind: "line", "points" or "marker" (assets/report.js).
nlohmann::json Dataset(const std::string& label, const std::string& kind, nlohmann::json data);
// type: "linear" or "logarithmic".
nlohmann::json Axis(const std::string& label, const std::string& type = "linear");
// `digits` significant digits; "-" for a value that is not finite.
std::string Fmt(double v, int digits = 3);

}  // namespace dlbench::report::chart
