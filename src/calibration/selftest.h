// The calibration self-test (issue 17; `dlbench selftest`; docs/measurement.md "Calibration").
//
// The measurement method run on step series whose truth is known. Each simulated cell draws its
// steps from the null runner's own step-time model (runners/null/synthetic_steps.h) on a virtual
// clock, feeds them to the measurement policy in frames as the orchestrator does (Add, Evaluate,
// until it says stop; Finish), and gets its metrics and verdict from the orchestrator's own
// functions (AddStepMetrics, ApplyVerdict). Identical simulated runs go through compare
// (history::CompareRunData). Nothing here re-implements the method under test: a change to the
// policy, the interval, the warm-up cut, the stability tests or compare shows up in the figures.
//
// Checks (each a share or an error over many seeds, with its target):
//   coverage of the 95% interval of the mean step time (normal, lognormal, bimodal jitter) 93-97%;
//   warm-up cut against the true transient; percentile estimates against the true quantiles;
//   drift and level-shift detectors' hit rates and their false alarms on stationary series;
//   compare's false alarms on identical runs.
// Deterministic: the figures depend only on the options (and this build's standard library).
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"

namespace dlbench::calibration {

struct SelftestOptions {
  int seeds = 400;         // simulated cells per check
  int compare_pairs = 40;  // pairs of identical simulated runs (4 cells each) for compare
  std::uint64_t seed = 1;  // check k's cell i uses seed + 1'000'003 k + i
};

// Bounds on the options, so a typo cannot start an hour-long self-test.
inline constexpr int kMaxSeeds = 100'000;
inline constexpr int kMaxComparePairs = 10'000;
Status ValidateOptions(const SelftestOptions& options);

struct Check {
  std::string name;    // "coverage, normal jitter 5%"
  std::string figure;  // "95.3% of 400 (±2.1%)"
  std::string target;  // "93-97%"
  double value = NAN;  // the figure as a number: a share (0..1) or a relative error
  bool pass = false;
  std::string detail;  // extra figures ("cut - transient: median 0, max 5 steps")
};

struct SelftestReport {
  SelftestOptions options;
  std::vector<Check> checks;
  std::int64_t simulated_cells = 0;
  std::int64_t simulated_steps = 0;
  double simulated_s = 0;  // virtual seconds of measured and warm-up steps simulated
  double wall_s = 0;       // how long the self-test took
  bool Passed() const;
};

// options must pass ValidateOptions (checked).
SelftestReport RunSelftest(const SelftestOptions& options);

// The share's 95% Wilson score interval (successes of n); {NaN, NaN} for n = 0.
struct ShareInterval {
  double low = NAN;
  double high = NAN;
};
ShareInterval WilsonInterval(std::int64_t successes, std::int64_t n);

std::string FormatSelftest(const SelftestReport& report);
nlohmann::json SelftestToJson(const SelftestReport& report);

}  // namespace dlbench::calibration
