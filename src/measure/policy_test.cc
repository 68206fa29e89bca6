#include "measure/policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "stats/random.h"

namespace dlbench::measure {
namespace {

constexpr std::int64_t kOffsetNs = 12'000'000'000;  // 1.2e10 ns: stamps far from zero
constexpr std::int64_t kGapNs = 1'000;              // host time between two steps, outside both

// Records with the given step durations, back to back from kOffsetNs, `samples` each.
std::vector<record::StepRecord> MakeRecords(const std::vector<double>& durations_ns,
                                            std::uint32_t samples = 32) {
  std::vector<record::StepRecord> records;
  std::int64_t t = kOffsetNs;
  for (double d : durations_ns) {
    record::StepRecord r;
    r.start_ns = t;
    r.end_ns = t + static_cast<std::int64_t>(std::llround(d));
    r.samples = samples;
    records.push_back(r);
    t = r.end_ns + kGapNs;
  }
  return records;
}

// `step_ns` steps with 1% Gaussian noise after `warmup` slow steps decaying from 3x to 1.2x.
std::vector<double> WarmupThenSteady(std::size_t warmup, std::size_t steady, std::uint64_t seed,
                                     double step_ns = 1e6) {
  stats::Random random(seed);
  std::vector<double> d;
  for (std::size_t i = 0; i < warmup; ++i)
    d.push_back(step_ns * (3.0 - 1.8 * static_cast<double>(i) / static_cast<double>(warmup - 1)));
  for (std::size_t i = 0; i < steady; ++i) d.push_back(step_ns * (1.0 + 0.01 * random.Normal()));
  return d;
}

config::MeasureSettings Settings() {
  config::MeasureSettings s;
  s.min_steps = 10;
  s.max_steps = 100'000;
  s.min_time_s = 0.0;
  s.max_time_s = 1e6;
  s.target_rel_ci = 0.02;
  s.ci_level = 0.95;
  s.min_warmup_steps = 2;
  return s;
}

// Feeds records `batch` at a time, calling Evaluate after each batch like the orchestrator;
// returns the number of records fed when the policy first said stop (0: never).
std::size_t FeedUntilStop(MeasurePolicy& policy, const std::vector<record::StepRecord>& records,
                          std::size_t batch) {
  for (std::size_t i = 0; i < records.size(); i += batch) {
    const std::size_t count = std::min(batch, records.size() - i);
    policy.Add(records.data() + i, count);
    if (policy.Evaluate().stop) return i + count;
  }
  return 0;
}

TEST(SummarizeTest, HandComputedSummary) {
  // Steps of 1, 2, 3, 4 us (10 samples each) separated by 1 us gaps:
  // mean 2500, median 2500, variance 5/3 * 1e6, P90: h = 2.7 -> 3000 + 0.7 * 1000 = 3700;
  // window = 4 steps + 3 gaps = 13 us -> 4 / 13e-6 steps/s and 40 / 13e-6 samples/s.
  const auto records = MakeRecords({1000, 2000, 3000, 4000}, 10);
  const StepSummary s = Summarize(records, 0, 0.95);
  EXPECT_EQ(s.steps, 4);
  EXPECT_EQ(s.samples, 40);
  EXPECT_DOUBLE_EQ(s.mean_ns, 2500);
  EXPECT_DOUBLE_EQ(s.median_ns, 2500);
  EXPECT_DOUBLE_EQ(s.p50_ns, 2500);
  EXPECT_DOUBLE_EQ(s.stddev_ns, std::sqrt(5.0 / 3.0) * 1000);
  EXPECT_DOUBLE_EQ(s.cv, std::sqrt(5.0 / 3.0) / 2.5);
  EXPECT_DOUBLE_EQ(s.p90_ns, 3700);
  EXPECT_DOUBLE_EQ(s.min_ns, 1000);
  EXPECT_DOUBLE_EQ(s.max_ns, 4000);
  EXPECT_DOUBLE_EQ(s.window_s, 13e-6);
  EXPECT_DOUBLE_EQ(s.steps_per_s, 4 / 13e-6);
  EXPECT_DOUBLE_EQ(s.samples_per_s, 40 / 13e-6);
  EXPECT_TRUE(std::isnan(s.ci_low_ns));  // 4 values: too few for batch means
  EXPECT_TRUE(std::isnan(s.ci_rel_halfwidth));

  // Cutting one warm-up step: 2, 3, 4 us over 3 steps + 2 gaps = 11 us.
  const StepSummary cut = Summarize(records, 1, 0.95);
  EXPECT_EQ(cut.steps, 3);
  EXPECT_DOUBLE_EQ(cut.mean_ns, 3000);
  EXPECT_DOUBLE_EQ(cut.window_s, 11e-6);
}

TEST(SummarizeTest, BatchMeansIntervalWhenLongEnough) {
  // 40 steps: 10 each of 1, 2, 3, 4 us -> the 4-batch hand computation of steady_state_test:
  // half-width t(0.975, 3) sqrt(5/12) us = 2054.26 ns around 2500 ns.
  std::vector<double> d;
  for (double v : {1000.0, 2000.0, 3000.0, 4000.0}) d.insert(d.end(), 10, v);
  const StepSummary s = Summarize(MakeRecords(d), 0, 0.95);
  EXPECT_NEAR(s.ci_low_ns, 2500 - 2054.260256760879, 1e-6);
  EXPECT_NEAR(s.ci_high_ns, 2500 + 2054.260256760879, 1e-6);
  EXPECT_NEAR(s.ci_rel_halfwidth, 2054.260256760879 / 2500, 1e-12);
}

TEST(SummarizeTest, DegenerateInputs) {
  const StepSummary none = Summarize({}, 0, 0.95);
  EXPECT_EQ(none.steps, 0);
  EXPECT_TRUE(std::isnan(none.mean_ns));
  EXPECT_TRUE(std::isnan(none.p99_ns));
  EXPECT_TRUE(std::isnan(none.min_ns));
  EXPECT_EQ(none.window_s, 0.0);
  EXPECT_TRUE(std::isnan(none.steps_per_s));

  const auto records = MakeRecords({5000, 7000});
  EXPECT_EQ(Summarize(records, 5, 0.95).steps, 0);  // warm-up past the end

  const StepSummary one = Summarize(records, 1, 0.95);
  EXPECT_EQ(one.steps, 1);
  EXPECT_EQ(one.mean_ns, 7000);
  EXPECT_EQ(one.p99_ns, 7000);
  EXPECT_TRUE(std::isnan(one.stddev_ns));
  EXPECT_TRUE(std::isnan(one.cv));
  EXPECT_DOUBLE_EQ(one.steps_per_s, 1 / 7e-6);

  const StepSummary two = Summarize(records, 0, 0.95);
  EXPECT_EQ(two.mean_ns, 6000);
  EXPECT_DOUBLE_EQ(two.stddev_ns, std::sqrt(2e6));  // deviations +-1000, / (2 - 1)
}

TEST(MeasurePolicyTest, WarmupCutLandsAtTheTransition) {
  MeasurePolicy policy(Settings());
  const auto records = MakeRecords(WarmupThenSteady(50, 950, 1));
  policy.Add(records.data(), records.size());
  const Outcome out = policy.Finish("runner_stopped");
  // At the transition, or a batch or two later: MSER drops a steady batch of 5 whose mean lies
  // more than about sqrt(2) standard deviations from the rest (p ~ 0.16 each).
  EXPECT_GE(out.warmup_steps, 50);
  EXPECT_LE(out.warmup_steps, 60);
  EXPECT_EQ(out.warmup_rule, "mser5");
  EXPECT_EQ(out.summary.steps, 1000 - out.warmup_steps);
  EXPECT_NEAR(out.summary.mean_ns, 1e6, 2e3);
  EXPECT_TRUE(out.enough_data);
  EXPECT_EQ(out.insufficiency, "");
  EXPECT_EQ(out.stop_reason, "runner_stopped");  // Evaluate was never asked
}

TEST(MeasurePolicyTest, SteadySeriesCutsAtTheMinimum) {
  std::vector<double> d;
  for (int i = 0; i < 500; ++i) d.push_back(1e6 + 1e4 * (i % 5));  // every batch of 5 alike
  config::MeasureSettings settings = Settings();
  settings.min_warmup_steps = 7;
  MeasurePolicy policy(settings);
  const auto records = MakeRecords(d);
  policy.Add(records.data(), records.size());
  const Outcome out = policy.Finish("runner_stopped");
  EXPECT_EQ(out.warmup_steps, 7);
  EXPECT_EQ(out.warmup_rule, "minimum");
  EXPECT_EQ(out.summary.steps, 493);
}

TEST(MeasurePolicyTest, StopsWhenTheIntervalIsNarrowEnough) {
  MeasurePolicy policy(Settings());
  const auto records = MakeRecords(WarmupThenSteady(30, 5000, 2));
  const std::size_t fed = FeedUntilStop(policy, records, 10);
  // With 1% noise a 2% half-width needs only a few dozen steady steps; the batch-means floor
  // (20 values) and the throttle bound how early and how late it can be.
  EXPECT_GE(fed, 30u + 20u);
  EXPECT_LE(fed, 400u);
  EXPECT_EQ(policy.Evaluate().reason, "ci_reached");  // the decision sticks
  const Outcome out = policy.Finish("stop_sent");
  EXPECT_EQ(out.stop_reason, "ci_reached");
  EXPECT_EQ(out.warmup_steps, 30);
  EXPECT_LE(out.summary.ci_rel_halfwidth, 0.02);
}

TEST(MeasurePolicyTest, StopsAtMaxSteps) {
  config::MeasureSettings settings = Settings();
  settings.max_steps = 100;
  settings.target_rel_ci = 1e-9;  // unreachable
  MeasurePolicy policy(settings);
  EXPECT_EQ(FeedUntilStop(policy, MakeRecords(WarmupThenSteady(10, 500, 3)), 1), 100u);
  EXPECT_EQ(policy.Finish("x").stop_reason, "max_steps");
}

TEST(MeasurePolicyTest, StopsAtMaxTime) {
  config::MeasureSettings settings = Settings();
  settings.max_time_s = 0.5;
  settings.target_rel_ci = 1e-9;  // unreachable with noisy steps
  MeasurePolicy policy(settings);
  const auto records = MakeRecords(WarmupThenSteady(10, 200, 4, 1e7));
  // The first record whose end is 0.5 s or more after the start of the first record past the
  // mandatory warm-up (about 10 ms steps).
  const auto floor = static_cast<std::size_t>(settings.min_warmup_steps);
  std::size_t expected = floor;
  while (records[expected].end_ns - records[floor].start_ns < 500'000'000) ++expected;
  EXPECT_EQ(FeedUntilStop(policy, records, 1), expected + 1);
  EXPECT_EQ(policy.Finish("x").stop_reason, "max_time");
}

// A GPU's first steps can autotune for seconds; the time ceiling must leave the measuring budget
// to the steps after the mandatory warm-up.
TEST(MeasurePolicyTest, SlowMandatoryWarmupDoesNotEatTheTimeCeiling) {
  config::MeasureSettings settings = Settings();
  settings.min_warmup_steps = 2;
  settings.min_steps = 10;
  settings.min_time_s = 0.3;
  settings.max_time_s = 0.5;
  settings.target_rel_ci = 1e-9;  // unreachable: only the ceiling stops it
  std::vector<double> durations = {3e9, 2e9};
  for (int i = 0; i < 200; ++i) durations.push_back(1e7 * (1 + 0.01 * (i % 3)));
  MeasurePolicy policy(settings);
  FeedUntilStop(policy, MakeRecords(durations), 1);
  const Outcome out = policy.Finish("x");
  EXPECT_EQ(out.stop_reason, "max_time");
  EXPECT_TRUE(out.enough_data) << out.insufficiency;
  EXPECT_GE(out.summary.window_s, 0.45);
}

TEST(MeasurePolicyTest, MinimaHoldBackAStopAndTheThrottleStaysClose) {
  // Constant 1 ms steps: the interval has zero width from 20 measured steps on, so only
  // min_steps and min_time_s decide; the decision may lag by the throttle (100 ms of steps here).
  config::MeasureSettings settings = Settings();
  settings.min_steps = 1000;
  settings.min_time_s = 0.5;
  MeasurePolicy policy(settings);
  const std::size_t fed = FeedUntilStop(policy, MakeRecords(std::vector<double>(3000, 1e6)), 1);
  EXPECT_GE(fed, 1002u);  // 2 warm-up steps (the minimum) + 1000 measured
  EXPECT_LE(fed, 1002u + 110u);
  EXPECT_EQ(policy.Finish("x").stop_reason, "ci_reached");

  settings.min_steps = 10;
  settings.min_time_s = 2.0;
  MeasurePolicy by_time(settings);
  const std::size_t fed_by_time = FeedUntilStop(by_time, MakeRecords(std::vector<double>(5000, 1e6)), 1);
  EXPECT_GE(fed_by_time, 1990u);  // 2 s of 1 ms steps (and 1 us gaps)
  EXPECT_LE(fed_by_time, 1990u + 110u);
}

TEST(MeasurePolicyTest, ReportsWhatIsMissing) {
  config::MeasureSettings settings = Settings();
  settings.min_steps = 50;
  settings.min_time_s = 1.0;
  MeasurePolicy policy(settings);
  const auto records = MakeRecords(std::vector<double>(30, 1e6));
  policy.Add(records.data(), records.size());
  EXPECT_FALSE(policy.Evaluate().stop);
  const Outcome out = policy.Finish("runner_exited");
  EXPECT_FALSE(out.enough_data);
  EXPECT_EQ(out.stop_reason, "runner_exited");
  EXPECT_NE(out.insufficiency.find("min_steps 50"), std::string::npos) << out.insufficiency;
  EXPECT_NE(out.insufficiency.find("min_time_s"), std::string::npos) << out.insufficiency;
}

TEST(MeasurePolicyTest, DegenerateRecordCounts) {
  MeasurePolicy empty(Settings());
  EXPECT_FALSE(empty.Evaluate().stop);
  const Outcome none = empty.Finish("runner_exited");
  EXPECT_EQ(none.warmup_steps, 0);
  EXPECT_EQ(none.warmup_rule, "minimum");
  EXPECT_FALSE(none.enough_data);
  EXPECT_EQ(none.insufficiency, "no step records");
  EXPECT_EQ(none.summary.steps, 0);
  EXPECT_TRUE(std::isnan(none.summary.mean_ns));

  // 1 and 2 records are all warm-up under min_warmup_steps = 2.
  for (std::size_t n : {1u, 2u}) {
    MeasurePolicy policy(Settings());
    const auto records = MakeRecords(std::vector<double>(n, 1e6));
    policy.Add(records.data(), records.size());
    EXPECT_FALSE(policy.Evaluate().stop);
    const Outcome out = policy.Finish("runner_exited");
    EXPECT_EQ(out.warmup_steps, static_cast<std::int64_t>(n));
    EXPECT_EQ(out.summary.steps, 0);
    EXPECT_FALSE(out.enough_data);
  }

  // Without a minimum warm-up, one record is one measured step.
  config::MeasureSettings no_minimum = Settings();
  no_minimum.min_warmup_steps = 0;
  no_minimum.min_steps = 1;
  MeasurePolicy one(no_minimum);
  const auto records = MakeRecords({2.5e6});
  one.Add(records.data(), records.size());
  const Outcome out = one.Finish("runner_exited");
  EXPECT_EQ(out.warmup_steps, 0);
  EXPECT_EQ(out.summary.steps, 1);
  EXPECT_EQ(out.summary.mean_ns, 2.5e6);
  EXPECT_TRUE(out.enough_data);
}

TEST(MeasurePolicyTest, AMillionRecordsStayCheap) {
  // 1 us steps streamed 1000 at a time with an unreachable target: the policy must keep up and
  // stop at max_steps. Re-evaluation is throttled, so this is a few dozen O(n) passes, not 1000.
  config::MeasureSettings settings = Settings();
  settings.max_steps = 1'000'000;
  settings.target_rel_ci = 0;
  stats::Random random(4);
  std::vector<double> d(1'000'000);
  for (double& v : d) v = 1000 + 50 * random.Uniform();
  MeasurePolicy policy(settings);
  EXPECT_EQ(FeedUntilStop(policy, MakeRecords(d), 1000), 1'000'000u);
  EXPECT_EQ(policy.Finish("x").stop_reason, "max_steps");
}

// Records keep arriving after STOP. A cell stopped on ci_reached keeps the warm-up cut that
// decision was made with, so the final summary cannot contradict the decision.
TEST(MeasurePolicyTest, CiReachedKeepsItsCutWhenRecordsArriveAfterStop) {
  config::MeasureSettings settings = Settings();
  settings.min_steps = 50;
  settings.min_time_s = 0.5;
  std::vector<double> steady;
  for (int i = 0; i < 400; ++i) steady.push_back(1e7 * (1 + 0.002 * (i % 5)));
  MeasurePolicy policy(settings);
  const std::size_t fed = FeedUntilStop(policy, MakeRecords(steady), 10);
  ASSERT_GT(fed, 0u);
  const Outcome at_stop = policy.Finish("x");
  ASSERT_EQ(at_stop.stop_reason, "ci_reached");
  ASSERT_TRUE(at_stop.enough_data);
  // A level shift after STOP, longer than what came before: recomputing MSER-5 over everything
  // would now cut at the shift and leave almost nothing measured.
  std::vector<double> shifted;
  for (std::size_t i = 0; i < 2 * fed; ++i) shifted.push_back(4e6 * (1 + 0.002 * (i % 5)));
  auto more = MakeRecords(shifted);
  const std::int64_t offset = policy.records().back().end_ns + 1000 - more.front().start_ns;
  for (auto& r : more) {
    r.start_ns += offset;
    r.end_ns += offset;
  }
  policy.Add(more.data(), more.size());
  const Outcome final_outcome = policy.Finish("x");
  EXPECT_EQ(final_outcome.warmup_steps, at_stop.warmup_steps);
  EXPECT_TRUE(final_outcome.enough_data) << final_outcome.insufficiency;
  // The records after STOP are stored but not measured: the window is the one the decision
  // judged, so its interval is the one that met the target.
  EXPECT_EQ(final_outcome.summary.steps, at_stop.summary.steps);
  EXPECT_DOUBLE_EQ(final_outcome.summary.ci_rel_halfwidth, at_stop.summary.ci_rel_halfwidth);
  EXPECT_LE(final_outcome.summary.ci_rel_halfwidth, settings.target_rel_ci);
  EXPECT_LT(at_stop.summary.steps + at_stop.warmup_steps, static_cast<std::int64_t>(fed + more.size()));
}

// scenario: converge (docs/convergence.md): the window is every step, the policy never stops the
// cell, not even past its ceilings (the runner's own rule ends the training).
TEST(WholeRunTest, MeasuresEveryStepAndNeverStops) {
  config::MeasureSettings settings = Settings();
  settings.max_steps = 50;
  settings.max_time_s = 1e-3;
  settings.whole_run = true;
  MeasurePolicy policy(settings);
  const auto records = MakeRecords(WarmupThenSteady(20, 200, 3));
  policy.Add(records.data(), records.size());
  EXPECT_FALSE(policy.Evaluate().stop);
  const Outcome out = policy.Finish("target_reached");
  EXPECT_EQ(out.warmup_steps, 0);
  EXPECT_EQ(out.warmup_rule, kWholeRunRule);
  EXPECT_EQ(out.stop_reason, "target_reached");
  EXPECT_TRUE(out.enough_data);
  EXPECT_EQ(out.summary.steps, 220);
  EXPECT_EQ(out.Window(), (record::MeasuredWindow{0, 220}));

  MeasurePolicy empty(settings);
  EXPECT_FALSE(empty.Finish("runner_exit").enough_data);
}

TEST(WholeRunTest, OnlyConvergeCellsGetIt) {
  const config::MeasureSettings base = Settings();
  const auto converge = SettingsForCell(base, {{"scenario", "converge"}, {"model", "fashion_cnn"}});
  EXPECT_TRUE(converge.whole_run);
  EXPECT_EQ(converge.max_steps, 10'000'000);
  for (const char* scenario : {"train", "infer"}) {
    const auto other = SettingsForCell(base, {{"scenario", scenario}});
    EXPECT_FALSE(other.whole_run) << scenario;
    EXPECT_EQ(other.max_steps, base.max_steps) << scenario;
  }
  EXPECT_FALSE(SettingsForCell(base, {}).whole_run);
}

}  // namespace
}  // namespace dlbench::measure
