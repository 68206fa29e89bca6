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

namespace {

std::optional<double> Number(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? std::optional<double>(j[key].get<double>())
                                                                : std::nullopt;
}

std::string Ms(const nlohmann::json& j, const char* key) {
  const std::optional<double> ms = Number(j, key);
  return ms ? FormatDurationNs(*ms * 1e6) : "-";
}

}  // namespace

std::string RenderPeakSearches(const std::vector<record::CellRecord>& cells) {
  std::string out;
  for (const record::CellRecord& c : cells) {
    if (!c.extras.contains("load") || !c.extras["load"].is_object()) continue;
    const nlohmann::json& load = c.extras["load"];
    if (!load.contains("peak_search") || !load["peak_search"].is_object()) continue;
    const nlohmann::json& search = load["peak_search"];
    const std::optional<double> peak = Number(search, "peak_qps");
    const std::optional<double> failing = Number(search, "lowest_failing_qps");
    const nlohmann::json probes = search.value("probes", nlohmann::json::array());
    const double resolution = Number(search, "resolution").value_or(0);
    const std::string how = search.value("converged", false)
                                ? fmt::format("converged within {:g}%", resolution * 100)
                                : fmt::format("not within {:g}%: the search ended by {}", resolution * 100,
                                              TerminalSafe(Text(search, "end")));
    // How the peak's confirmation went (docs/load.md "Confirmation"); absent in cells stored before it.
    const std::string state = Text(search, "confirmation");
    const std::string confirmed = state.empty() || state == "off" || state == "none"
                                      ? ""
                                      : "; " + TerminalSafe(Text(search, "confirmation_note"));
    out += fmt::format("  #{} {}: peak {}, lowest failing {} ({}; {} probes{})\n", c.index,
                       TerminalSafe(c.label.empty() ? c.key : c.label), peak ? FormatRate(peak) : "none",
                       failing ? FormatRate(failing) : "none", how, probes.is_array() ? probes.size() : 0,
                       confirmed);
    Table table({{"probe", true},
                 {"target qps", true},
                 {"achieved qps", true},
                 {"at percentile", true},
                 {"p99", true},
                 {"queries", true},
                 {"verdict", false}});
    if (!probes.is_array()) continue;
    for (std::size_t i = 0; i < probes.size(); ++i) {
      const nlohmann::json& p = probes[i];
      std::string verdict = "-";
      if (p.is_object() && p.contains("valid") && p["valid"].is_boolean()) {
        verdict = p["valid"].get<bool>() ? "valid" : "invalid";
        if (p.contains("reasons") && p["reasons"].is_array() && !p["reasons"].empty() &&
            p["reasons"][0].is_string()) {
          verdict = TerminalSafe(p["reasons"][0].get<std::string>());
        }
      }
      const std::optional<double> queries = Number(p, "queries");
      const bool confirmation = p.is_object() && p.contains("confirmation") &&
                                p["confirmation"].is_boolean() && p["confirmation"].get<bool>();
      table.AddRow({std::to_string(i + 1) + (confirmation ? " (confirm)" : ""),
                    FormatRate(Number(p, "target_qps")), FormatRate(Number(p, "achieved_qps")),
                    Ms(p, "latency_at_percentile_ms"), Ms(p, "p99_ms"),
                    queries ? fmt::format("{:.0f}", *queries) : "-", verdict});
    }
    out += table.Render();
  }
  if (out.empty()) return "";
  return "\nPeak search (target_qps: max; each probe a server run judged from its own queries):\n" + out;
}

std::string RenderLatencyDecomposition(const std::vector<record::CellRecord>& cells) {
  struct Part {
    const char* name;
    std::string_view mean;
    std::string_view p99;
    std::string_view share;
  };
  static constexpr Part kParts[] = {
      {"queue", metric::kQueryQueueMeanNs, metric::kQueryQueueP99Ns, metric::kQueryQueueSharePct},
      {"host pre", metric::kQueryHostPreMeanNs, metric::kQueryHostPreP99Ns, metric::kQueryHostPreSharePct},
      {"h2d", metric::kQueryH2dMeanNs, metric::kQueryH2dP99Ns, metric::kQueryH2dSharePct},
      {"compute", metric::kQueryComputeMeanNs, metric::kQueryComputeP99Ns, metric::kQueryComputeSharePct},
      {"d2h", metric::kQueryD2hMeanNs, metric::kQueryD2hP99Ns, metric::kQueryD2hSharePct},
      {"host post", metric::kQueryHostPostMeanNs, metric::kQueryHostPostP99Ns,
       metric::kQueryHostPostSharePct},
  };
  Table table({{"#", true},
               {"cell", false},
               {"part", false},
               {"mean", true},
               {"p99", true},
               {"share of mean latency", true}});
  for (const record::CellRecord& c : cells) {
    if (!c.extras.contains("load")) continue;
    for (const Part& part : kParts) {
      const std::optional<double> mean = MetricValue(c, std::string(part.mean));
      if (!mean) continue;
      const std::optional<double> share = MetricValue(c, std::string(part.share));
      table.AddRow({std::to_string(c.index), TerminalSafe(c.label.empty() ? c.key : c.label), part.name,
                    FormatDurationNs(mean), FormatDurationNs(MetricValue(c, std::string(part.p99))),
                    share ? fmt::format("{:.1f}%", *share) : "-"});
    }
  }
  if (table.empty()) return "";
  return "\nLatency decomposition (each part over the measured queries; queue = latency - the timed "
         "parts):\n" +
         table.Render();
}

}  // namespace dlbench::cli
