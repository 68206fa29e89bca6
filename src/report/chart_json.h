// Small pieces the HTML report's charts are built from (html_charts.cc, input_charts.cc, ...): a
// cell's parameters and metrics read leniently (a stored cell may lack either), and the chart
// JSON that assets/report.js draws (points, datasets, axes).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "record/records.h"

namespace dlbench::report::chart {

// A parameter value as text: strings bare, other JSON compact; "" for null.
std::string ParamText(const nlohmann::json& value);
// A configuration that a chart's x axis varies: every parameter of the cell but `varied`, as
// "name=value" pairs in key order ("model=resnet50 precision=fp32 ..."); "" without parameters.
// A parameter that only follows another (the registry's default_from, samples_per_step following
// batch_size) is left out while it equals that one, and kept where it was set apart.
std::string ConfigurationWithout(const record::CellRecord& cell, std::string_view varied);
// The cell's parameter `name` as text, "" when it has none.
std::string Param(const record::CellRecord& cell, const char* name);
// The cell's parameter `name` when it is a number.
std::optional<double> NumericParam(const record::CellRecord& cell, const char* name);
// The cell's metric `name` when stored and finite.
std::optional<double> Metric(const record::CellRecord& cell, std::string_view name);

// The title of a chart of one cell: "cell 3: resnet50 train bs=8" (its label, as `dlbench show`
// prints it; the key when it has no label).
std::string CellTitle(const record::CellRecord& cell);

// The title of a chart over several cells: the words of the first cell's label that every
// cell's label holds, in order ("resnet50 train cpu" for "resnet50 train bs=8 cpu" and
// "resnet50 train bs=16 cpu"), so a chart reads like the labels `dlbench show` prints; "" when
// there are no cells or they share no word.
std::string SharedLabel(const std::vector<const record::CellRecord*>& cells);

nlohmann::json Point(double x, double y);
// kind: "line", "points", "marker", "vline" or "clipped" (points drawn on the top edge of the
// y axis, each with its own value as "v"; assets/report.js).
nlohmann::json Dataset(const std::string& label, const std::string& kind, nlohmann::json data);
// type: "linear" or "logarithmic".
nlohmann::json Axis(const std::string& label, const std::string& type = "linear");
// A linear axis of a throughput (samples/s): it starts at zero, so a bar's height is its value
// and a 2% difference does not look like a factor of two.
nlohmann::json RateAxis(const std::string& label);
// `digits` significant digits, no exponent at or above 1 (common/text.h FormatSignificant); "-"
// for a value that is not finite.
std::string Fmt(double v, int digits = 3);

}  // namespace dlbench::report::chart
