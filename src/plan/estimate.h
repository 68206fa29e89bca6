// How long a planned cell will take, as `dlbench plan` prints it: an estimate with a lower and an
// upper bound, and whether its max_time_s can hold the measured steps a confidence interval needs
// (docs/cli.md "plan").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "config/matrix.h"
#include "plan/plan.h"

namespace dlbench::plan {

// What the store holds of one cell key: the durations of its stored cells (spawn to stored) and
// the median step time of the newest of them that measured steps.
struct KeyHistory {
  int cells = 0;
  double mean_s = 0.0;
  double min_s = 0.0;
  double max_s = 0.0;
  std::optional<double> step_s;
};

struct Estimate {
  double seconds = 0.0;  // history's mean duration; without history, what the measure policy implies
  bool from_history = false;
  // Without history: low_s is the least the measure policy takes (idle baseline, declared setup,
  // min_time_s or min_steps at a declared step time, capped by max_time_s); high_s is the idle
  // baseline plus timeout_s, where the cell is stopped whatever it does. With history: the
  // fastest and slowest stored durations of the key, widened to include the policy's least.
  double low_s = 0.0;
  double high_s = 0.0;
  // The step time the cell is known to take: a runner's declared step-time parameter (the null
  // runner's step_ms) or history's; absent when neither says.
  std::optional<double> step_s;
  bool step_from_history = false;
  // Cells whose stopping rule is not the measure policy's (scenario: converge, target_qps: max)
  // are not judged by reachable steps.
  bool policy_stops = true;
};

// With measure.retry_disturbed N, a cell RetryRefusal does not name may run N + 1 times: its upper
// bound is N + 1 times one run's (the estimate stays one run's).
Estimate EstimateCell(const Cell& cell, const config::Matrix& matrix,
                      const std::map<std::string, KeyHistory>& history_by_key);

// Why measure.retry_disturbed does not measure this cell again (docs/measurement.md "Measuring
// again"): a boundary search, a load cell, a converge cell or a ddp cell; nullopt when it does.
std::optional<std::string> RetryRefusal(const Cell& cell);

// The measured steps a cell needs: kMinStepsForInterval or min_steps, whichever is more, with the
// warm-up cut's margin (what the too_short verdict's advice asks for).
double StepsNeeded(const config::MeasureSettings& m);

// Measured steps max_time_s holds at the estimate's step time (nullopt when the step time is
// unknown or the cell is not stopped by the measure policy).
std::optional<double> ReachableSteps(const Estimate& e, const config::MeasureSettings& m);

}  // namespace dlbench::plan
