// The synthetic step-time model on hand-computed series: each factor alone, the virtual clock,
// determinism, the distributions' first two moments, and degenerate shapes.
#include "runners/null/synthetic_steps.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "stats/descriptive.h"

namespace dlbench::synthetic {
namespace {

std::vector<std::int64_t> Durations(const StepShape& shape, std::uint64_t seed, std::size_t n) {
  std::vector<std::int64_t> out;
  for (const auto& r : GenerateSteps(shape, seed, 0, n)) out.push_back(r.end_ns - r.start_ns);
  return out;
}

TEST(SyntheticStepsTest, WithoutJitterEveryStepIsTheNominalTimeOnAConsecutiveClock) {
  StepShape shape;
  shape.step_ms = 2.5;
  shape.samples_per_step = 8;
  const std::int64_t start = 1'234'567'890'123;  // a CLOCK_MONOTONIC-like offset
  const auto steps = GenerateSteps(shape, 7, start, 4);
  ASSERT_EQ(steps.size(), 4u);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].start_ns, start + static_cast<std::int64_t>(i) * 2'500'000) << i;
    EXPECT_EQ(steps[i].end_ns - steps[i].start_ns, 2'500'000) << i;
    EXPECT_EQ(steps[i].samples, 8u);
    EXPECT_EQ(steps[i].present, 0u);
  }
  VirtualClockSteps clock(shape, 7, start);
  EXPECT_EQ(clock.now_ns(), start);
  clock.Next();
  EXPECT_EQ(clock.now_ns(), start + 2'500'000);
  EXPECT_EQ(clock.steps(), 1);
}

TEST(SyntheticStepsTest, WarmupShiftAndDriftFollowTheirFormulas) {
  StepShape warm;
  warm.step_ms = 1;
  warm.warmup_steps = 2;
  warm.warmup_factor = 4;
  EXPECT_EQ(Durations(warm, 1, 4), (std::vector<std::int64_t>{4'000'000, 4'000'000, 1'000'000, 1'000'000}));

  StepShape shift;
  shift.step_ms = 1;
  shift.shift_at_step = 3;
  shift.shift_factor = 1.5;
  EXPECT_EQ(Durations(shift, 1, 5),
            (std::vector<std::int64_t>{1'000'000, 1'000'000, 1'000'000, 1'500'000, 1'500'000}));

  // 10 %/s: d_k = 1 ms x (1 + 0.1 x t_k), t_k the virtual time since the first start.
  //   d0 = 1'000'000 (t = 0); d1 = 1e6 x (1 + 0.1 x 0.001) = 1'000'100;
  //   t2 = 2'000'100 ns, d2 = 1e6 x (1 + 0.1 x 0.0020001) = 1'000'200.01 -> 1'000'200.
  StepShape drift;
  drift.step_ms = 1;
  drift.drift_pct_per_s = 10;
  EXPECT_EQ(Durations(drift, 1, 3), (std::vector<std::int64_t>{1'000'000, 1'000'100, 1'000'200}));
  // A negative drift shrinks the step to nothing, never below.
  drift.drift_pct_per_s = -100'000;  // -1000x per second: 0 after 1 ms
  const auto shrunk = Durations(drift, 1, 3);
  EXPECT_EQ(shrunk[0], 1'000'000);
  EXPECT_EQ(shrunk[1], 0);
  EXPECT_EQ(shrunk[2], 0);
}

TEST(SyntheticStepsTest, BimodalMixtureTakesItsShareWithoutChangingTheJitter) {
  StepShape jitter;
  jitter.step_ms = 1;
  jitter.jitter_pct = 5;
  StepShape mixed = jitter;
  mixed.bimodal_fraction = 0.25;
  mixed.bimodal_factor = 3;
  const std::size_t n = 100'000;
  const auto plain = Durations(jitter, 42, n);
  const auto mix = Durations(mixed, 42, n);
  std::size_t second_mode = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (mix[i] == plain[i]) continue;
    // The same jitter draw, three times longer (up to rounding of the product).
    EXPECT_NEAR(static_cast<double>(mix[i]), 3.0 * static_cast<double>(plain[i]), 2.0) << i;
    ++second_mode;
  }
  // Binomial(1e5, 0.25): standard deviation 137 steps; 0.01 is over 7 of them.
  EXPECT_NEAR(static_cast<double>(second_mode) / n, 0.25, 0.01);
}

TEST(SyntheticStepsTest, EveryJitterDistributionHasMeanOneAndTheConfiguredSpread) {
  for (JitterDist dist : {JitterDist::kNormal, JitterDist::kUniform, JitterDist::kLognormal}) {
    StepShape shape;
    shape.step_ms = 1;
    shape.jitter_pct = 5;
    shape.jitter_dist = dist;
    std::vector<double> m;
    for (std::int64_t d : Durations(shape, 3, 200'000)) m.push_back(static_cast<double>(d) / 1e6);
    const stats::Moments moments = stats::ComputeMoments(m);
    // The mean of 2e5 draws with sd 0.05 has sd 1.1e-4.
    EXPECT_NEAR(moments.mean, 1.0, 1e-3) << static_cast<int>(dist);
    EXPECT_NEAR(moments.stddev, 0.05, 0.001) << static_cast<int>(dist);
  }
}

TEST(SyntheticStepsTest, TheSeriesIsAFunctionOfShapeAndSeed) {
  StepShape shape;
  shape.step_ms = 1;
  shape.jitter_pct = 3;
  shape.bimodal_fraction = 0.1;
  EXPECT_EQ(Durations(shape, 9, 1000), Durations(shape, 9, 1000));
  EXPECT_NE(Durations(shape, 9, 1000), Durations(shape, 10, 1000));
  StepTimeGenerator a(shape, 9), b(shape, 9);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.NextDurationNs(i * 1000), b.NextDurationNs(i * 1000));
  EXPECT_EQ(a.steps_drawn(), 100);
}

TEST(SyntheticStepsTest, DegenerateShapes) {
  StepShape zero;
  zero.step_ms = 0;
  zero.jitter_pct = 50;
  for (const auto& r : GenerateSteps(zero, 1, 5, 10)) {
    EXPECT_EQ(r.start_ns, 5);
    EXPECT_EQ(r.end_ns, 5);
  }
  EXPECT_TRUE(GenerateSteps(zero, 1, 5, 0).empty());

  // Normal jitter of 300% gives negative multipliers: clamped to zero, never negative.
  StepShape wild;
  wild.step_ms = 1;
  wild.jitter_pct = 300;
  for (std::int64_t d : Durations(wild, 1, 10'000)) EXPECT_GE(d, 0);

  // A huge step time is clamped, and the virtual clock saturates instead of overflowing.
  StepShape huge;
  huge.step_ms = 1e300;
  const auto steps = GenerateSteps(huge, 1, 0, 20'000);
  EXPECT_EQ(steps[0].end_ns - steps[0].start_ns, kMaxStepNs);
  EXPECT_EQ(steps.back().end_ns, std::numeric_limits<std::int64_t>::max());
  for (const auto& r : steps) EXPECT_GE(r.end_ns, r.start_ns);
}

TEST(SyntheticStepsTest, ValidationNamesTheFieldOutOfRange) {
  const struct {
    void (*set)(StepShape&);
    const char* message;
  } cases[] = {
      {[](StepShape& s) { s.step_ms = -1; }, "step_ms must be >= 0"},
      {[](StepShape& s) { s.step_ms = NAN; }, "step_ms must be a finite number"},
      {[](StepShape& s) { s.jitter_pct = -1; }, "jitter_pct must be >= 0"},
      {[](StepShape& s) { s.warmup_steps = -1; }, "warmup_steps must be >= 0"},
      {[](StepShape& s) { s.warmup_factor = 0.5; }, "warmup_factor must be >= 1"},
      {[](StepShape& s) { s.bimodal_fraction = 1.5; }, "bimodal_fraction must be between 0 and 1"},
      {[](StepShape& s) { s.bimodal_factor = -2; }, "bimodal_factor must be >= 0"},
      {[](StepShape& s) { s.drift_pct_per_s = INFINITY; }, "drift_pct_per_s must be a finite number"},
      {[](StepShape& s) { s.shift_at_step = -3; }, "shift_at_step must be >= 0"},
      {[](StepShape& s) { s.shift_factor = -1; }, "shift_factor must be >= 0"},
      {[](StepShape& s) { s.samples_per_step = 0; }, "samples_per_step must be >= 1"},
  };
  EXPECT_TRUE(ValidateShape(StepShape{}).ok());
  for (const auto& c : cases) {
    StepShape s;
    c.set(s);
    const Status st = ValidateShape(s);
    ASSERT_FALSE(st.ok()) << c.message;
    EXPECT_EQ(st.error().kind, ErrorKind::kInvalidInput);
    EXPECT_EQ(st.error().message, c.message);
  }
  EXPECT_EQ(ParseJitterDist("uniform"), JitterDist::kUniform);
  EXPECT_FALSE(ParseJitterDist("cauchy").has_value());
}

}  // namespace
}  // namespace dlbench::synthetic
