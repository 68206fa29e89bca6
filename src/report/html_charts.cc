// The HTML report's charts (BuildCharts): throughput vs batch size with the saturation point,
// latency CDFs of inference cells and the monitor's series, built here; load, peak-search, step,
// input-pipeline and scaling charts from load_report.cc, step_charts.cc, input_charts.cc and
// scaling_charts.cc. Also the thinning and the empirical CDF they draw with.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "common/clock.h"
#include "common/text.h"
#include "record/metrics.h"
#include "report/chart_json.h"
#include "report/export.h"
#include "report/html_report.h"
#include "report/input_charts.h"
#include "report/load_report.h"
#include "report/scaling_charts.h"
#include "report/step_charts.h"

namespace dlbench::report {
namespace {

using nlohmann::json;

using chart::Axis;
using chart::CellTitle;
using chart::Dataset;
using chart::Fmt;
using chart::Metric;
using chart::NumericParam;
using chart::Param;
using chart::Point;

bool IsInference(const record::CellRecord& cell) { return Param(cell, "scenario").rfind("infer", 0) == 0; }

// A configuration: every parameter but the batch size ("model=resnet50 precision=fp32 ...").
std::string ConfigurationOf(const record::CellRecord& cell) {
  return chart::ConfigurationWithout(cell, "batch_size");
}

void ThroughputCharts(const ReportInput& input, const ReportOptions& options, std::vector<json>& charts) {
  std::map<std::string, std::vector<const record::CellRecord*>> groups;
  for (const auto& c : input.cells) {
    if (c.outcome == record::Outcome::kOk && Metric(c, record::metric::kSamplesPerS) &&
        NumericParam(c, "batch_size")) {
      groups[ConfigurationOf(c)].push_back(&c);
    }
  }
  for (const auto& [config, cells] : groups) {
    std::vector<ThroughputPoint> points;
    json raw = json::array();
    for (const auto* c : cells) {
      const double b = *NumericParam(*c, "batch_size");
      const double t = *Metric(*c, record::metric::kSamplesPerS);
      points.push_back({b, t});
      raw.push_back(Point(b, t));
    }
    const Saturation sat = FindSaturation(points, options.saturation);
    if (sat.curve.size() < 2) continue;  // one batch size is a point, not a trend
    json curve = json::array();
    for (const auto& p : sat.curve) curve.push_back(Point(p.batch_size, p.samples_per_s));
    json datasets = json::array();
    json mean_line = Dataset("mean samples/s", "line", curve);
    mean_line["point_radius"] = 3;
    datasets.push_back(std::move(mean_line));
    if (raw.size() > sat.curve.size()) datasets.push_back(Dataset("each repetition", "points", raw));
    const auto value_at = [&sat](double batch) {
      for (const auto& p : sat.curve) {
        if (p.batch_size == batch) return p.samples_per_s;
      }
      return 0.0;
    };
    std::string note;
    if (sat.saturation_batch) {
      json m = Dataset(fmt::format("saturation (batch {})", Fmt(*sat.saturation_batch, 6)), "marker",
                       json::array({Point(*sat.saturation_batch, value_at(*sat.saturation_batch))}));
      m["color"] = "#2ca02c";
      datasets.push_back(std::move(m));
      note += fmt::format("Saturates at batch {}: no larger batch gains {}% per doubling. ",
                          Fmt(*sat.saturation_batch, 6), Fmt(options.saturation.min_gain_per_doubling * 100));
    } else {
      note += "No saturation: the largest step still pays. ";
    }
    if (sat.drop_batch) {
      json m = Dataset(fmt::format("drop (batch {})", Fmt(*sat.drop_batch, 6)), "marker",
                       json::array({Point(*sat.drop_batch, value_at(*sat.drop_batch))}));
      m["color"] = "#d62728";
      m["point_style"] = "crossRot";
      datasets.push_back(std::move(m));
      note += fmt::format("Throughput drops at batch {}. ", Fmt(*sat.drop_batch, 6));
    }
    note += fmt::format("Best: batch {} at {} samples/s.", Fmt(*sat.best_batch, 6),
                        Fmt(sat.best_samples_per_s, 4));
    const double span = sat.curve.back().batch_size / sat.curve.front().batch_size;
    json x_axis = Axis("batch size", span >= 8 ? "logarithmic" : "linear");
    // A log axis would otherwise start at a power of ten, leaving most of the chart empty.
    x_axis["min"] = sat.curve.front().batch_size;
    x_axis["max"] = sat.curve.back().batch_size;
    const std::string title = chart::SharedLabel(cells);
    charts.push_back({{"section", "throughput"},
                      {"title", title.empty() ? config : title},
                      {"configuration", config},
                      {"note", note},
                      {"x", std::move(x_axis)},
                      {"y", chart::RateAxis("samples/s")},
                      {"datasets", std::move(datasets)}});
  }
}

void LatencyCharts(const ReportInput& input, const ReportOptions& options, std::vector<json>& charts) {
  std::map<std::string, std::vector<const record::CellRecord*>> groups;
  for (const auto& c : input.cells) {
    if (IsInference(c) && c.outcome == record::Outcome::kOk && !c.steps.empty())
      groups[ConfigurationOf(c)].push_back(&c);
  }
  for (auto& [config, cells] : groups) {
    std::sort(cells.begin(), cells.end(), [](const auto* a, const auto* b) {
      return NumericParam(*a, "batch_size").value_or(0) < NumericParam(*b, "batch_size").value_or(0);
    });
    json datasets = json::array();
    std::string note;
    for (const auto* c : cells) {
      std::vector<double> latencies_ms;
      for (const auto& step : record::MeasuredSteps(*c))
        latencies_ms.push_back(NsToMs(step.end_ns - step.start_ns));
      if (latencies_ms.empty()) continue;
      json data = json::array();
      for (const auto& [x, y] : EmpiricalCdf(latencies_ms, options.max_points)) data.push_back(Point(x, y));
      const std::string bs = Param(*c, "batch_size");
      datasets.push_back(Dataset(bs.empty() ? CellTitle(*c) : fmt::format("batch {} (cell {})", bs, c->index),
                                 "line", data));
      const auto p50 = Metric(*c, record::metric::kStepTimeP50Ns);
      const auto p99 = Metric(*c, record::metric::kStepTimeP99Ns);
      if (p50 && p99)
        note += fmt::format("cell {}: P50 {} ms, P99 {} ms. ", c->index, Fmt(*p50 * 1e-6), Fmt(*p99 * 1e-6));
    }
    if (datasets.empty()) continue;
    const std::string title = chart::SharedLabel(cells);
    charts.push_back({{"section", "latency"},
                      {"title", title.empty() ? config : title},
                      {"configuration", config},
                      {"note", note},
                      {"x", Axis("latency (ms)")},
                      {"y", Axis("fraction of requests <= latency")},
                      {"datasets", std::move(datasets)}});
  }
}

void MonitorCharts(const ReportInput& input, const ReportOptions& options, std::vector<json>& charts) {
  struct Quantity {
    const char* name;
    const char* axis;
    double scale;
    bool (*matches)(const std::string&);
  };
  static constexpr Quantity kQuantities[] = {
      {"utilisation", "%", 1.0, [](const std::string& s) { return EndsWith(s, "_pct"); }},
      {"power", "W", 1.0, [](const std::string& s) { return EndsWith(s, "_w"); }},
      {"memory", "MiB", 1.0 / (1024.0 * 1024.0),
       [](const std::string& s) { return EndsWith(s, "_bytes") && s.find("per_s") == std::string::npos; }},
  };
  for (const auto& c : input.cells) {
    if (c.series.empty()) continue;
    const std::int64_t origin = CellOriginNs(c);
    std::map<std::string, std::vector<std::pair<double, double>>> by_series;
    for (const auto& p : c.series) by_series[p.series].emplace_back(NsToSeconds(p.t_ns - origin), p.value);
    for (const Quantity& q : kQuantities) {
      json datasets = json::array();
      for (auto& [name, points] : by_series) {
        if (!q.matches(name)) continue;
        std::sort(points.begin(), points.end());
        json data = json::array();
        for (std::size_t k : ThinIndices(points.size(), options.max_points)) {
          data.push_back(Point(points[k].first, points[k].second * q.scale));
        }
        datasets.push_back(Dataset(name, "line", std::move(data)));
      }
      if (datasets.empty()) continue;
      charts.push_back({{"section", "monitor"},
                        {"title", fmt::format("{} - {}", CellTitle(c), q.name)},
                        {"note", "Seconds from the cell's first step; sampled by the monitor."},
                        {"x", Axis("time (s)")},
                        {"y", Axis(fmt::format("{} ({})", q.name, q.axis))},
                        {"datasets", std::move(datasets)}});
    }
  }
}

}  // namespace

std::vector<std::size_t> ThinIndices(std::size_t n, int max_points) {
  std::vector<std::size_t> out;
  if (n == 0) return out;
  const std::size_t cap = static_cast<std::size_t>(std::max(2, max_points));
  const std::size_t stride = n <= cap ? 1 : (n + cap - 2) / (cap - 1);
  for (std::size_t i = 0; i < n; i += stride) out.push_back(i);
  if (out.back() != n - 1) out.push_back(n - 1);
  return out;
}

std::vector<std::pair<double, double>> EmpiricalCdf(std::vector<double> values, int max_points) {
  std::vector<std::pair<double, double>> out;
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }),
               values.end());
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  const double n = static_cast<double>(values.size());
  for (std::size_t i : ThinIndices(values.size(), max_points)) {
    // F(x_i) = (i + 1) / n: the fraction of values <= the i-th smallest (ties take the last index
    // when thinning keeps it; the curve is drawn through the kept points).
    out.emplace_back(values[i], static_cast<double>(i + 1) / n);
  }
  return out;
}

std::vector<json> BuildCharts(const ReportInput& input, const ReportOptions& options) {
  std::vector<json> charts;
  ThroughputCharts(input, options, charts);
  LatencyCharts(input, options, charts);
  LoadLatencyCharts(input.cells, options.max_points, charts);
  PeakSearchCharts(input.cells, charts);
  LatencyDecompositionChart(input.cells, charts);
  StepCharts(input.cells, options.max_points, charts);
  MonitorCharts(input, options, charts);
  InputCharts(input.cells, charts);
  ScalingCharts(input.cells, charts);
  // Two configurations whose labels share the same words (they differ only in a parameter the
  // labels leave out) would get one title: those say their whole configuration.
  std::map<std::pair<std::string, std::string>, int> titles;
  for (const auto& c : charts) ++titles[{c["section"].get<std::string>(), c["title"].get<std::string>()}];
  for (auto& c : charts) {
    if (titles[{c["section"].get<std::string>(), c["title"].get<std::string>()}] > 1 &&
        c.contains("configuration"))
      c["title"] = c["title"].get<std::string>() + " (" + c["configuration"].get<std::string>() + ")";
  }
  for (std::size_t i = 0; i < charts.size(); ++i) charts[i]["id"] = fmt::format("chart-{}", i);
  return charts;
}

}  // namespace dlbench::report
