// `dlbench report RUN [--baseline RUN] -o report.html`: one self-contained HTML file (R9, R16,
// R18) that works offline: Chart.js, the drawing script and the styles are embedded, and the
// data the charts draw is a JSON block in the page. Every text from the matrix, the environment,
// a runner or a log goes through EscapeHtml (markup) or JsonForScript (data).
//
// Sections: environment (fingerprint, warnings), all cells (sortable), throughput vs batch size
// per configuration with the saturation point and drop marked, latency CDF per inference
// configuration, step time per cell with the warm-up cut, sampled utilisation/power/memory per
// cell, and the comparison against a baseline run when one is given.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "history/compare.h"
#include "report/saturation.h"
#include "store/result_store.h"

namespace dlbench::report {

struct ReportInput {
  record::RunRecord run;
  std::vector<record::CellRecord> cells;  // with steps and series loaded
  std::optional<record::RunRecord> baseline_run;
  std::vector<record::CellRecord> baseline_cells;  // metrics are enough
  // The statistical comparison of this run against the baseline (history::CompareRunData: CIs
  // from the raw steps, Benjamini-Hochberg, environment changes). When absent the section falls
  // back to plain throughput ratios.
  std::optional<history::Comparison> comparison;
  // Warnings the caller derived (e.g. monitor::FingerprintWarnings); shown with those found in
  // the fingerprint's own "warnings" arrays and the report's checks of the cells.
  std::vector<std::string> warnings;
};

struct ReportOptions {
  SaturationOptions saturation;
  // Longer series are thinned to about this many points per dataset (every k-th point, the
  // first and last kept), so a 100k-step cell does not make a 50 MB page.
  int max_points = 1500;
  // In the baseline comparison a key is "slower"/"faster" when its throughput ratio leaves
  // [1 - threshold, 1 + threshold]. A plain ratio: `dlbench compare` has the statistical test.
  double baseline_threshold = 0.05;
};

// One chart as report.js draws it: {id, section, title, note, x: {label, type[, min, max]}, y: {label,
// type[, min, max]}, datasets: [{label, kind: line|points|marker|vline|clipped, data: [{x, y[, v]}]}]};
// a chart over several cells also holds its `configuration` (every parameter but the one on the
// x axis). Titles come from the cells' labels (chart::CellTitle, chart::SharedLabel).
// Exposed for tests; RenderHtmlReport places one canvas per chart in its section.
std::vector<nlohmann::json> BuildCharts(const ReportInput& input, const ReportOptions& options);

// The empirical CDF of `values` as (value, fraction <= value) points, thinned to at most
// max_points (the smallest and largest values always kept). Empty input gives no points.
std::vector<std::pair<double, double>> EmpiricalCdf(std::vector<double> values, int max_points);

// The indices kept when thinning n points to about max_points: every k-th, plus the last.
std::vector<std::size_t> ThinIndices(std::size_t n, int max_points);

std::string RenderHtmlReport(const ReportInput& input, const ReportOptions& options = {});

}  // namespace dlbench::report
