#include "stats/stability.h"

#include <gtest/gtest.h>

#include <cmath>

#include "stats/random.h"

namespace dlbench::stats {
namespace {

TEST(Pettitt, HandComputedChangePoint) {
  // U_t = 5, 8, 9, 8, 5 for t = 0..4: the largest |U| is 9, after index 2.
  const PettittResult r = Pettitt({1, 2, 3, 10, 11, 12});
  EXPECT_EQ(r.change_index, 3u);
  EXPECT_DOUBLE_EQ(r.k, 9);
  EXPECT_NEAR(r.p_value, 2 * std::exp(-6.0 * 81 / (216 + 36)), 1e-15);
}

TEST(Pettitt, DegenerateInputs) {
  EXPECT_EQ(Pettitt({}).change_index, 0u);
  EXPECT_EQ(Pettitt({}).p_value, 1);
  EXPECT_EQ(Pettitt({4}).p_value, 1);
  const PettittResult flat = Pettitt({2, 2, 2, 2});
  EXPECT_EQ(flat.k, 0);
  EXPECT_EQ(flat.p_value, 1);
  // Two values: one split, |U| = 1, p capped at 1.
  EXPECT_EQ(Pettitt({1, 5}).change_index, 1u);
  EXPECT_LE(Pettitt({1, 5}).p_value, 1.0);
}

// Steps of `mean_ns` with 1% normal noise; shape(i, t_s) multiplies the mean.
template <typename Shape>
void MakeSteps(std::uint64_t seed, std::size_t n, double mean_ns, Shape shape, std::vector<double>& v,
               std::vector<double>& t) {
  Random rng(seed);
  v.clear();
  t.clear();
  double clock_s = 1200.0;  // a large monotonic offset, as real records have
  for (std::size_t i = 0; i < n; ++i) {
    const double d = mean_ns * shape(i, clock_s - 1200.0) * (1 + 0.01 * rng.Normal());
    v.push_back(d);
    t.push_back(clock_s);
    clock_s += d * 1e-9;
  }
}

TEST(Stability, StableNoiseIsStableOnEverySeed) {
  std::vector<double> v, t;
  int alarms = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    MakeSteps(
        seed, 2000, 5e6, [](std::size_t, double) { return 1.0; }, v, t);
    const StabilityResult r = AssessStability(v, t, StabilitySettings{});
    alarms += r.kind != Stability::kStable;
    EXPECT_NE(r.kind, Stability::kTooShort);
  }
  // 1% noise cannot move a 2000-step window by 2% of its mean: no false alarm at all.
  EXPECT_EQ(alarms, 0);
}

TEST(Stability, LinearDriftIsDriftingWithItsSlope) {
  std::vector<double> v, t;
  // 19.3 ms rising to about 28 ms over the window, as the H200 ResNet-50 bs64 cell did.
  const std::size_t n = 1000;
  MakeSteps(
      7, n, 19.3e6, [&](std::size_t i, double) { return 1.0 + 0.45 * static_cast<double>(i) / n; }, v, t);
  const StabilityResult r = AssessStability(v, t, StabilitySettings{});
  ASSERT_EQ(r.kind, Stability::kDrifting);
  EXPECT_LT(r.trend_p, 1e-6);
  EXPECT_NEAR(r.first_tenth_mean / 1e6, 19.3 * (1 + 0.45 * 0.05), 0.3);
  EXPECT_NEAR(r.last_tenth_mean / 1e6, 19.3 * (1 + 0.45 * 0.95), 0.4);
  // Relative slope: the rise across the window over its duration, relative to the mean.
  const double duration = t.back() - t.front();
  EXPECT_NEAR(r.slope_rel_per_s * duration, 0.45 / 1.225, 0.05);
}

TEST(Stability, LevelShiftIsShiftedWhereItHappened) {
  std::vector<double> v, t;
  MakeSteps(
      11, 1200, 4e6, [](std::size_t i, double) { return i < 700 ? 1.0 : 1.1; }, v, t);
  const StabilityResult r = AssessStability(v, t, StabilitySettings{});
  ASSERT_EQ(r.kind, Stability::kShifted);
  EXPECT_LT(r.shift_p, 0.01);
  // 1200 steps in 50 batches of 24: the split falls on a batch boundary next to step 700.
  EXPECT_NEAR(static_cast<double>(r.shift_step), 700, 24);
  EXPECT_NEAR(r.level_before / 1e6, 4.0, 0.05);
  EXPECT_NEAR(r.level_after / 1e6, 4.4, 0.06);
}

// Pettitt's p for a clean split of n batch means at t is at best 2 exp(-6 (t (n - t))^2 / (n^3 + n^2)):
// with 20 batches a split at 15 of 20 can never reach p < 0.01 (0.036), so a 10% shift at 80% of
// the window went unreported (found by `dlbench selftest`). With 50 batches it is found.
TEST(Stability, AShiftLateInTheWindowIsFound) {
  std::vector<double> v, t;
  MakeSteps(
      5, 3000, 1e6, [](std::size_t i, double) { return i < 2400 ? 1.0 : 1.1; }, v, t);
  const StabilityResult r = AssessStability(v, t, StabilitySettings{});
  EXPECT_EQ(r.kind, Stability::kShifted);
  EXPECT_NEAR(static_cast<double>(r.shift_step), 2400, 60);
  StabilitySettings twenty;
  twenty.batches = 20;
  EXPECT_EQ(AssessStability(v, t, twenty).kind, Stability::kStable);
}

TEST(Stability, SmallMovementsBelowTheFloorAreStable) {
  std::vector<double> v, t;
  // A 0.5% shift is statistically clear over 20000 steps but below the 2% floor.
  MakeSteps(
      3, 20000, 1e6, [](std::size_t i, double) { return i < 10000 ? 1.0 : 1.005; }, v, t);
  StabilitySettings s;
  EXPECT_EQ(AssessStability(v, t, s).kind, Stability::kStable);
  s.min_rel_change = 0.002;
  EXPECT_EQ(AssessStability(v, t, s).kind, Stability::kShifted);
}

TEST(Stability, ShortWindowsAreTooShort) {
  std::vector<double> v, t;
  MakeSteps(
      5, 49, 1e6, [](std::size_t, double) { return 1.0; }, v, t);
  EXPECT_EQ(AssessStability(v, t, StabilitySettings{}).kind, Stability::kTooShort);
  EXPECT_EQ(AssessStability({}, {}, StabilitySettings{}).kind, Stability::kTooShort);
  MakeSteps(
      5, 50, 1e6, [](std::size_t, double) { return 1.0; }, v, t);
  EXPECT_EQ(AssessStability(v, t, StabilitySettings{}).kind, Stability::kStable);
}

}  // namespace
}  // namespace dlbench::stats
