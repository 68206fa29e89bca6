// Process-to-process noise (issue 17): for a run with repetitions (each a fresh runner process),
// how much of each cell's spread is inside one process and how much between processes.
// `dlbench noise RUN` prints it; compare uses the same between-repetition figures
// (stats::RatioOfMeansTInterval) when both runs have repetitions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "history/compare.h"
#include "store/result_store.h"

namespace dlbench::history {

struct CellNoise {
  std::string key;
  std::string label;
  int repetitions = 0;               // ok repetitions
  double mean = 0;                   // of the repetitions' figures, in MetricUnit(metric)
  double between_cv = 0;             // stddev / mean of the repetitions' figures
  double between_rel_halfwidth = 0;  // t-interval half-width of the mean across repetitions / mean
  // The mean of the repetitions' own within-run interval half-widths (step_time_ci_rel_halfwidth):
  // what one process's interval claims. nullopt when no repetition has one.
  std::optional<double> within_rel_halfwidth;
  // between_cv / within_rel_halfwidth: above about 1, the within-run interval understates what
  // a second process would measure.
  std::optional<double> between_over_within;
};

struct NoiseReport {
  std::int64_t run_id = 0;
  std::string run_name;
  Metric metric = Metric::kThroughput;
  std::vector<CellNoise> cells;      // keys with at least 2 ok repetitions, in key order
  std::vector<std::string> skipped;  // labels of keys with fewer (named so nothing is silently missing)
};

// kNotFound for an unknown run; a run without repetitions gives an empty `cells` and every key
// in `skipped`.
Result<NoiseReport> MeasureNoise(store::ResultStore& store, const std::string& run_ref, Metric metric,
                                 double confidence_level = 0.95);

std::string FormatNoiseTable(const NoiseReport& report);
nlohmann::json NoiseToJson(const NoiseReport& report);

}  // namespace dlbench::history
