// The sampling units of a comparison, taken from stored step records.
//
// Consecutive steps are not independent (clocks ramp, caches warm, a neighbour's job comes and
// goes), so treating thousands of steps as thousands of independent draws makes every tiny drift
// "significant". Means are bootstrapped in short blocks of steps (stats::BootstrapRatioOfMeans);
// the p99 is bootstrapped by resampling whole batches of contiguous steps, cut here, because a
// tail quantile needs the long runs of slow steps kept together.
#pragma once

#include <cstdint>
#include <vector>

#include "record/records.h"

namespace dlbench::history {

// How many batches a repetition's measured steps are cut into (fewer when there are fewer steps).
inline constexpr int kTargetBatches = 20;
// A side with fewer measured steps than this, over all its repetitions, cannot be compared.
inline constexpr int kMinMeasuredSteps = 5;

// A cell's measured steps are record::MeasuredSteps (its stored window).
using record::MeasuredSteps;

// One batch of contiguous steps.
struct StepBatch {
  double mean_step_ns = 0;   // mean step time
  double samples_per_s = 0;  // samples processed / time spent stepping
  std::int64_t steps = 0;
  std::vector<double> step_ns;  // the batch's step times, for statistics of the distribution (p99)
};

// Cuts steps into min(kTargetBatches, steps.size()) contiguous batches of equal size. The
// remainder (fewer steps than one batch) is dropped from the front, next to the warm-up cut, so
// every batch weighs the same. Empty input gives no batches.
std::vector<StepBatch> CutBatches(const std::vector<record::StepRecord>& steps);

}  // namespace dlbench::history
