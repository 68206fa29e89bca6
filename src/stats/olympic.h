// MLPerf Training's score of one benchmark over several runs (its rules, "Benchmark results"):
// sort the runs by time to target, drop the fastest and the slowest, and average the rest (the
// "olympic" mean). A run that did not reach the target counts as the slowest, so at most one may
// fail; with two failures there is no score. docs/convergence.md.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dlbench::stats {

struct OlympicScore {
  std::size_t runs = 0;
  std::size_t converged = 0;   // runs with a time
  std::optional<double> mean;  // the olympic mean; absent with fewer than 3 runs or 2+ failures
  std::string no_score;        // why there is no mean ("" when there is one)
  // The spread of the converged runs' times (NaN where undefined: no run, or one for stddev).
  double min = 0, max = 0, stddev = 0;
};

// `times` holds one entry per run: its time to target, or nullopt for a run that did not reach
// it. Times must be finite.
OlympicScore OlympicMean(const std::vector<std::optional<double>>& times);

}  // namespace dlbench::stats
