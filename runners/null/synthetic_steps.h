// Synthetic step times: the null runner's step-time model, as a small library with no process,
// clock or I/O, so that dlbench-null (busy-waiting or in virtual time) and an in-process caller
// (the calibration self-test, issue 17) draw the very same series from the same parameters and seed.
//
// A step's duration is the product of the nominal time and independent factors:
//   d_k = step_ms x jitter_k x warmup_k x mode_k x shift_k x max(0, 1 + drift_pct_per_s/100 x t_k)
// where
//   jitter_k  has mean 1 and standard deviation jitter_pct/100 (normal: 1 + sd Z; uniform on
//             [1 - sd sqrt 3, 1 + sd sqrt 3]; lognormal: exp(sigma Z - sigma^2/2) with
//             sigma^2 = ln(1 + sd^2)); 1 when jitter_pct is 0,
//   warmup_k  is warmup_factor for k < warmup_steps, else 1 (a warm-up transient),
//   mode_k    is bimodal_factor with probability bimodal_fraction, else 1 (a bimodal mixture),
//   shift_k   is shift_factor for k >= shift_at_step, else 1 (a level shift at step K),
//   t_k       is the time from the first step's start to this step's start, in seconds, on the
//             caller's clock (a linear drift in % of step_ms per second),
// clamped to [0, kMaxStepNs] and rounded to whole nanoseconds. k counts from 0.
//
// Determinism: the series depends only on the shape, the seed and the t_k the caller passes. The
// jitter draws one variate per step from std::mt19937_64(seed) when jitter_pct > 0; the mode draws
// from a second generator seeded from the seed, one variate per step, when bimodal_fraction > 0,
// so adding a mixture leaves the jitter sequence unchanged. The standard library's distributions
// are implementation-defined: the same build (and standard library) gives the same series.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "record/step.h"

namespace dlbench::synthetic {

enum class JitterDist { kNormal, kUniform, kLognormal };

// "normal", "uniform", "lognormal" (the null runner's jitter_dist values); nullopt otherwise.
std::optional<JitterDist> ParseJitterDist(const std::string& name);

// The longest step a shape may produce (about 11.6 days): durations are clamped to it, so sums of
// a few hundred million steps still fit in int64 nanoseconds.
inline constexpr std::int64_t kMaxStepNs = 1'000'000'000'000'000;

// Each field is the null-runner parameter of the same name (docs/config-reference.md).
struct StepShape {
  double step_ms = 1.0;
  double jitter_pct = 0.0;
  JitterDist jitter_dist = JitterDist::kNormal;
  std::int64_t warmup_steps = 0;
  double warmup_factor = 3.0;
  double bimodal_fraction = 0.0;
  double bimodal_factor = 2.0;
  double drift_pct_per_s = 0.0;
  std::optional<std::int64_t> shift_at_step;
  double shift_factor = 1.0;
  std::uint32_t samples_per_step = 1;  // the records' `samples`
};

// kInvalidInput naming the first field out of range: every number finite; step_ms, jitter_pct,
// warmup_steps, bimodal_factor, shift_factor, shift_at_step >= 0; warmup_factor >= 1;
// 0 <= bimodal_fraction <= 1; samples_per_step >= 1.
Status ValidateShape(const StepShape& shape);

// Draws durations one step at a time. Not thread-safe; cheap to copy.
class StepTimeGenerator {
 public:
  // `shape` must pass ValidateShape (checked).
  StepTimeGenerator(const StepShape& shape, std::uint64_t seed);

  // The duration of step steps_drawn() in nanoseconds, the step starting `elapsed_ns` after the
  // first step started (0 for the first step; only the drift reads it).
  std::int64_t NextDurationNs(std::int64_t elapsed_ns);
  std::int64_t steps_drawn() const { return steps_; }
  const StepShape& shape() const { return shape_; }

 private:
  StepShape shape_;
  std::mt19937_64 jitter_rng_;
  std::mt19937_64 mode_rng_;
  std::normal_distribution<double> normal_{0.0, 1.0};
  std::uniform_real_distribution<double> uniform_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  double sd_ = 0;
  double sigma_ = 0;
  std::int64_t steps_ = 0;
};

// Step records on a virtual clock: the first step starts at `start_ns`, each next one where the
// previous ended, and each lasts the generator's next duration (its drift reads the virtual time
// since start_ns). `samples` is the shape's samples_per_step; no phase fields are set.
class VirtualClockSteps {
 public:
  VirtualClockSteps(const StepShape& shape, std::uint64_t seed, std::int64_t start_ns);
  record::StepRecord Next();
  std::int64_t now_ns() const { return now_ns_; }  // the end of the last record (start_ns before any)
  std::int64_t steps() const { return generator_.steps_drawn(); }

 private:
  StepTimeGenerator generator_;
  std::int64_t start_ns_;
  std::int64_t now_ns_;
};

// The first `count` records of VirtualClockSteps(shape, seed, start_ns).
std::vector<record::StepRecord> GenerateSteps(const StepShape& shape, std::uint64_t seed,
                                              std::int64_t start_ns, std::size_t count);

}  // namespace dlbench::synthetic
