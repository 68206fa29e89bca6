// The history of cells across runs (R16): `dlbench trend [FILTER]`. For every cell key whose
// parameters match the filter, one point per run (the stored metric, averaged over the run's
// repetitions that ended ok), a text sparkline, and change points found by binary segmentation
// (stats::DetectChangePoints), dated with the run where the new level starts and annotated with the
// environment fields that changed there, so a step in the curve comes with its likely cause.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "history/compare.h"
#include "plan/selection.h"
#include "store/result_store.h"

namespace dlbench::history {

// `name=value` terms, all of which a cell's parameters must match, and `--only` filters in run's
// syntax (plan::CellFilter: `,`-joined terms, `!=`, label words, `bs=8`; any filter may match).
struct TrendFilter {
  std::vector<std::pair<std::string, std::string>> terms;
  plan::CellFilter only;
};

// kInvalidInput for a term without '=' or with an empty name.
Result<TrendFilter> ParseTrendFilter(const std::vector<std::string>& terms);

// A parameter matches a term when its text equals the value: strings as written, numbers
// numerically ("2" matches 2 and 2.0), booleans as true/false. A missing parameter never matches.
bool MatchesFilter(const TrendFilter& filter, const nlohmann::json& params);

struct TrendOptions {
  Metric metric = Metric::kThroughput;
  // A change point needs a shift of at least this fraction of the earlier level (see compare's
  // threshold) and a Bonferroni-corrected rank-test p-value below alpha.
  double min_rel_shift = 0.02;
  double alpha = 0.05;
  std::size_t min_segment = 3;  // runs on each side of a change point
  // Parameters left out of the key, so one trend follows a cell across a deliberate change of
  // them (see CompareOptions::ignore_params).
  std::vector<std::string> ignore_params;
};

struct TrendPoint {
  std::int64_t run_id = 0;
  std::string run_name;
  std::vector<std::string> tags;
  std::int64_t started_wall_ns = 0;
  double value = 0;               // in MetricUnit(metric)
  int repetitions = 0;            // ok repetitions averaged
  bool starts_new_level = false;  // a change point is at this run
};

struct ChangePoint {
  std::size_t index = 0;  // into CellTrend::points: the first run of the new level
  std::int64_t run_id = 0;
  std::int64_t started_wall_ns = 0;
  double before = 0;  // median of the level before / after
  double after = 0;
  double relative_change = 0;                    // after / before - 1
  std::vector<std::string> environment_changes;  // DescribeChange of fields differing from the previous run
};

struct CellTrend {
  std::string key;
  std::string label;
  nlohmann::json params = nlohmann::json::object();
  std::vector<TrendPoint> points;  // oldest run first
  std::vector<ChangePoint> change_points;
};

// Trends of the matching keys in runs (cells need no steps), runs taken oldest first (by start
// time, then id). Keys in key order; a key with no ok cell in any run is left out.
std::vector<CellTrend> BuildTrends(const std::vector<RunData>& runs, const TrendFilter& filter,
                                   const TrendOptions& options);

// Loads every run's cells (without steps) from the store and builds the trends.
Result<std::vector<CellTrend>> LoadTrends(store::ResultStore& store, const TrendFilter& filter,
                                          const TrendOptions& options);

// One block character per value, ▁ for the smallest to █ for the largest; all equal -> all ▄.
std::string Sparkline(const std::vector<double>& values);

enum class TrendFormat { kTable, kCsv, kJson };
Result<TrendFormat> ParseTrendFormat(const std::string& text);  // "table", "csv", "json"

std::string FormatTrendTable(const std::vector<CellTrend>& trends, Metric metric);
// One row per (key, run): key,label,run_id,run_name,tags,started_utc,metric,unit,value,repetitions,
// change_point,relative_change. Fields are quoted as RFC 4180 asks.
std::string FormatTrendCsv(const std::vector<CellTrend>& trends, Metric metric);
nlohmann::json TrendsToJson(const std::vector<CellTrend>& trends, Metric metric);
std::string FormatTrends(const std::vector<CellTrend>& trends, Metric metric, TrendFormat format);

}  // namespace dlbench::history
