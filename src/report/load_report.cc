#include "report/load_report.h"

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "common/human_text.h"
#include "record/metrics.h"
#include "record/series.h"
#include "report/html_report.h"

namespace dlbench::report {
namespace {

using nlohmann::json;

std::string Ms(const record::CellRecord& c, std::string_view metric) {
  const std::optional<double> v = record::MetricValue(c, metric);
  return v && std::isfinite(*v) ? FormatSignificant(*v / 1e6, 4) + " ms" : "-";
}

}  // namespace

void LoadLatencyCharts(const std::vector<record::CellRecord>& cells, int max_points,
                       std::vector<json>& charts) {
  for (const record::CellRecord& c : cells) {
    if (c.outcome != record::Outcome::kOk || !c.extras.contains("load") || !c.window) continue;
    // The series hold every received query in id order; the measured ones are window->steps of
    // them from the window->first_step-th (0 but for a peak search, whose window is the peak
    // probe's; docs/load.md, "What dlbench stores").
    std::vector<double> latencies_ms;
    std::int64_t seen = 0;
    for (const record::SeriesPoint& p : c.series) {
      if (static_cast<std::int64_t>(latencies_ms.size()) >= c.window->steps) break;
      if (p.series != record::series::kLoadLatencyNs) continue;
      if (seen++ >= c.window->first_step) latencies_ms.push_back(p.value / 1e6);
    }
    if (latencies_ms.empty()) continue;
    json cdf = json::array();
    for (const auto& [x, y] : EmpiricalCdf(latencies_ms, max_points)) cdf.push_back({{"x", x}, {"y", y}});
    json datasets =
        json::array({{{"label", "measured queries"}, {"kind", "line"}, {"data", std::move(cdf)}}});
    const json& load = c.extras["load"];
    std::string note = fmt::format(
        "{} queries; latency from each query's scheduled time (LoadGen). p50 {}, p90 {}, p99 {}, p99.9 {}.",
        latencies_ms.size(), Ms(c, record::metric::kQueryLatencyP50Ns),
        Ms(c, record::metric::kQueryLatencyP90Ns), Ms(c, record::metric::kQueryLatencyP99Ns),
        Ms(c, record::metric::kQueryLatencyP999Ns));
    if (load.contains("latency_bound_ms") && load["latency_bound_ms"].is_number()) {
      const double bound = load["latency_bound_ms"].get<double>();
      datasets.push_back({{"label", fmt::format("latency_bound_ms {:g}", bound)},
                          {"kind", "vline"},
                          {"data", json::array({{{"x", bound}, {"y", 0.0}}, {{"x", bound}, {"y", 1.0}}})}});
      note += fmt::format(" Verdict: {}.", std::string(record::Name(c.verdict)));
    }
    const std::string scenario = load.value("scenario", std::string());
    charts.push_back({{"section", "latency"},
                      {"title", fmt::format("cell {}: {} (load: {})", c.index,
                                            c.label.empty() ? c.key : c.label, scenario)},
                      {"note", note},
                      {"x", {{"label", "query latency (ms)"}, {"type", "linear"}}},
                      {"y", {{"label", "fraction of queries <= latency"}, {"type", "linear"}}},
                      {"datasets", std::move(datasets)}});
  }
}

}  // namespace dlbench::report
