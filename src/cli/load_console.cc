#include "cli/load_console.h"

#include <fmt/core.h>

#include "cli/console.h"
#include "common/text.h"
#include "record/metrics.h"

namespace dlbench::cli {
namespace {

namespace metric = record::metric;

std::string Text(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// The headline's value in its unit: a latency in ms, a rate per second.
std::string HeadlineValue(const record::CellRecord& c, const std::string& name) {
  if (name.empty()) return "-";
  const std::optional<double> v = MetricValue(c, name);
  const record::MetricDef* def = record::FindMetricDef(name);
  if (!v || def == nullptr) return "-";
  return def->unit == "ns" ? FormatDurationNs(v) : FormatRate(v);
}

}  // namespace

std::string RenderLoadCells(const std::vector<record::CellRecord>& cells) {
  Table table({{"#", true},
               {"cell", false},
               {"scenario", false},
               {"queries", true},
               {"p50", true},
               {"p90", true},
               {"p99", true},
               {"p99.9", true},
               {"headline (LoadGen)", false},
               {"early stopping", false}});
  for (const record::CellRecord& c : cells) {
    if (!c.extras.contains("load") || !c.extras["load"].is_object()) continue;
    const nlohmann::json& load = c.extras["load"];
    const nlohmann::json headline = load.value("headline", nlohmann::json::object());
    const std::string headline_metric = Text(headline, "metric");
    const std::optional<double> queries = MetricValue(c, std::string(metric::kLoadQueries));
    const std::optional<double> met = MetricValue(c, std::string(metric::kLoadEarlyStoppingMet));
    const std::optional<double> needed = MetricValue(c, std::string(metric::kLoadEarlyStoppingQueriesNeeded));
    std::string early = "-";
    if (met) {
      early = *met > 0 ? "met" : fmt::format("not met (needs {:.0f})", needed.value_or(0));
    }
    table.AddRow({std::to_string(c.index), TerminalSafe(c.label.empty() ? c.key : c.label),
                  TerminalSafe(Text(load, "scenario")), queries ? fmt::format("{:.0f}", *queries) : "-",
                  FormatDurationNs(MetricValue(c, std::string(metric::kQueryLatencyP50Ns))),
                  FormatDurationNs(MetricValue(c, std::string(metric::kQueryLatencyP90Ns))),
                  FormatDurationNs(MetricValue(c, std::string(metric::kQueryLatencyP99Ns))),
                  FormatDurationNs(MetricValue(c, std::string(metric::kQueryLatencyP999Ns))),
                  TerminalSafe(Text(headline, "name")) + ": " + HeadlineValue(c, headline_metric), early});
  }
  if (table.empty()) return "";
  return "\nLoad cells (latency from each query's scheduled time; LoadGen's percentiles):\n" + table.Render();
}

}  // namespace dlbench::cli
