#include "report/load_report.h"

#include <fmt/format.h>

#include <algorithm>
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

void PeakSearchCharts(const std::vector<record::CellRecord>& cells, std::vector<json>& charts) {
  for (const record::CellRecord& c : cells) {
    if (c.outcome != record::Outcome::kOk || !c.extras.contains("load")) continue;
    const json& load = c.extras["load"];
    if (!load.contains("peak_search") || !load["peak_search"].is_object()) continue;
    const json& search = load["peak_search"];
    const json probes = search.value("probes", json::array());
    if (!probes.is_array() || probes.empty()) continue;
    json passed = json::array(), failed = json::array();
    double lo = 0, hi = 0;
    int unmeasured = 0;
    for (const json& p : probes) {
      const json rate = p.value("target_qps", json());
      const json latency = p.value("latency_at_percentile_ms", json());
      if (!rate.is_number() || !latency.is_number()) {
        ++unmeasured;
        continue;
      }
      const double x = rate.get<double>();
      lo = passed.empty() && failed.empty() ? x : std::min(lo, x);
      hi = std::max(hi, x);
      (p.value("valid", false) ? passed : failed).push_back({{"x", x}, {"y", latency.get<double>()}});
    }
    if (passed.empty() && failed.empty()) continue;
    json datasets = json::array();
    if (!passed.empty())
      datasets.push_back({{"label", "probes within the bound"},
                          {"kind", "marker"},
                          {"point_style", "circle"},
                          {"color", "#2ca02c"},
                          {"data", std::move(passed)}});
    if (!failed.empty())
      datasets.push_back({{"label", "probes that failed"},
                          {"kind", "marker"},
                          {"point_style", "crossRot"},
                          {"color", "#d62728"},
                          {"data", std::move(failed)}});
    const double percentile = load.value("latency_percentile", 0.99);
    std::string note = fmt::format("{} probes ({}), each a fresh Poisson schedule at its rate.",
                                   probes.size(), search.value("end", std::string("ended")));
    if (load.contains("latency_bound_ms") && load["latency_bound_ms"].is_number()) {
      const double bound = load["latency_bound_ms"].get<double>();
      datasets.push_back({{"label", fmt::format("latency_bound_ms {}", FormatSignificant(bound, 6))},
                          {"kind", "vline"},
                          {"color", "#7f7f7f"},
                          {"data", json::array({{{"x", lo}, {"y", bound}}, {{"x", hi}, {"y", bound}}})}});
    }
    if (search.contains("peak_qps") && search["peak_qps"].is_number()) {
      const double peak = search["peak_qps"].get<double>();
      double top = 0;
      for (const json& ds : datasets)
        for (const json& point : ds["data"]) top = std::max(top, point["y"].get<double>());
      datasets.push_back({{"label", fmt::format("peak {} queries/s", FormatSignificant(peak, 4))},
                          {"kind", "vline"},
                          {"color", "#1f77b4"},
                          {"data", json::array({{{"x", peak}, {"y", 0.0}}, {{"x", peak}, {"y", top}}})}});
      note += fmt::format(" Peak {} queries/s", FormatSignificant(peak, 4));
      if (search.contains("lowest_failing_qps") && search["lowest_failing_qps"].is_number())
        note += fmt::format(", lowest failing {}",
                            FormatSignificant(search["lowest_failing_qps"].get<double>(), 4));
      note += ".";
    } else {
      note += " No probed rate met the bound.";
    }
    if (unmeasured > 0)
      note += fmt::format(" Not drawn: {} that measured no query.", CountNoun(unmeasured, "probe"));
    charts.push_back(
        {{"section", "latency"},
         {"title", fmt::format("cell {}: {} (peak search)", c.index, c.label.empty() ? c.key : c.label)},
         {"note", note},
         {"x", {{"label", "probe rate (queries/s)"}, {"type", "linear"}, {"min", 0}}},
         {"y",
          {{"label", fmt::format("p{:g} latency (ms)", percentile * 100)}, {"type", "linear"}, {"min", 0}}},
         {"datasets", std::move(datasets)}});
  }
}

void LatencyDecompositionChart(const std::vector<record::CellRecord>& cells, std::vector<json>& charts) {
  namespace metric = record::metric;
  struct Part {
    std::string_view metric;
    const char* label;
  };
  static constexpr Part kParts[] = {
      {metric::kQueryQueueMeanNs, "queue (latency less the timed parts)"},
      {metric::kQueryHostPreMeanNs, "host pre-processing"},
      {metric::kQueryH2dMeanNs, "H2D copy"},
      {metric::kQueryComputeMeanNs, "compute"},
      {metric::kQueryD2hMeanNs, "D2H copy"},
      {metric::kQueryHostPostMeanNs, "host post-processing"},
  };
  json labels = json::array();
  std::vector<json> data(std::size(kParts), json::array());
  std::vector<bool> present(std::size(kParts), false);
  for (const record::CellRecord& c : cells) {
    if (c.outcome != record::Outcome::kOk || !c.extras.contains("load")) continue;
    bool any = false;
    for (const Part& part : kParts) any = any || record::MetricValue(c, part.metric).has_value();
    if (!any) continue;
    labels.push_back(fmt::format("cell {}: {}", c.index, c.label.empty() ? c.key : c.label));
    for (std::size_t i = 0; i < std::size(kParts); ++i) {
      const std::optional<double> ns = record::MetricValue(c, kParts[i].metric);
      present[i] = present[i] || (ns && std::isfinite(*ns));
      data[i].push_back(ns && std::isfinite(*ns) ? json(*ns / 1e6) : json(nullptr));
    }
  }
  if (labels.empty()) return;
  json datasets = json::array();
  for (std::size_t i = 0; i < std::size(kParts); ++i) {
    if (present[i]) datasets.push_back({{"label", kParts[i].label}, {"data", std::move(data[i])}});
  }
  charts.push_back(
      {{"section", "latency"},
       {"type", "bar"},
       {"title", fmt::format("Latency decomposition ({})",
                             CountNoun(static_cast<std::int64_t>(labels.size()), "load cell"))},
       {"note",
        "Each part's mean over the cell's measured queries; a bar's length is the mean latency. The queue "
        "is derived: a query's latency less the parts it timed (issue delay, the wait for a batch and a "
        "stream). Parts a runner does not time are left out."},
       {"labels", std::move(labels)},
       {"x", {{"label", "mean latency (ms)"}, {"type", "linear"}, {"min", 0}}},
       {"y", {{"label", "cell"}, {"type", "category"}}},
       {"datasets", std::move(datasets)}});
}

}  // namespace dlbench::report
