// The input-bound verdict on hand-computed cases: phase sums (large offsets, excluded steps,
// overlapping phases, n = 0 and 1), energy over wait intervals, and every branch of the rule.
#include "monitor/input_verdict.h"

#include <gtest/gtest.h>

namespace dlbench::monitor {
namespace {

using record::StepRecord;

StepRecord Step(std::int64_t start, std::int64_t end, std::int64_t wait, std::int64_t compute,
                std::uint32_t present = record::kHasDataWait | record::kHasCompute) {
  StepRecord s;
  s.start_ns = start;
  s.end_ns = end;
  s.data_wait_ns = wait;
  s.compute_ns = compute;
  s.present = present;
  return s;
}

bool Contains(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& l : lines) {
    if (l.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(SumStepPhases, SplitsStepsIntoWaitCopyAndCompute) {
  const std::int64_t big = 12'000'000'000;  // 12 s of CLOCK_MONOTONIC: a realistic offset
  const std::vector<StepRecord> steps = {
      Step(0, 100, 10, 80),                         // copy 10
      Step(big, big + 200, 100, 90),                // copy 10
      Step(500, 600, 50, 0, record::kHasDataWait),  // no compute: not counted
      Step(300, 400, 0, 100),                       // copy 0
  };
  const StepPhaseTotals t = SumStepPhases(steps);
  EXPECT_EQ(t.steps, 3);
  EXPECT_DOUBLE_EQ(t.step_ns, 400);
  EXPECT_DOUBLE_EQ(t.wait_ns, 110);
  EXPECT_DOUBLE_EQ(t.compute_ns, 270);
  EXPECT_DOUBLE_EQ(t.copy_ns, 20);
  EXPECT_DOUBLE_EQ(t.wait_share(), 110.0 / 400.0);
  EXPECT_DOUBLE_EQ(t.copy_share(), 20.0 / 400.0);
  // Three steps: the top decile is the one longest wait, 100 of 110.
  EXPECT_DOUBLE_EQ(t.wait_top_decile_share, 100.0 / 110.0);
}

TEST(SumStepPhases, DegenerateInputs) {
  const StepPhaseTotals none = SumStepPhases({});
  EXPECT_EQ(none.steps, 0);
  EXPECT_EQ(none.wait_share(), 0);
  EXPECT_EQ(none.wait_top_decile_share, 0);
  const StepPhaseTotals one = SumStepPhases({Step(10, 20, 0, 10)});
  EXPECT_EQ(one.steps, 1);
  EXPECT_DOUBLE_EQ(one.compute_share(), 1.0);
  EXPECT_EQ(one.wait_top_decile_share, 0) << "no wait at all";
  // Overlapping phases (a wait and a compute that together exceed the step) leave no copy.
  const StepPhaseTotals overlap = SumStepPhases({Step(0, 100, 60, 60)});
  EXPECT_DOUBLE_EQ(overlap.copy_ns, 0);
  // Communication counts with compute.
  StepRecord comm = Step(0, 100, 10, 50, record::kHasDataWait | record::kHasCompute | record::kHasComm);
  comm.comm_ns = 30;
  EXPECT_DOUBLE_EQ(SumStepPhases({comm}).copy_ns, 10);
  // Twenty equal waits: the top two hold a tenth of the waiting.
  std::vector<StepRecord> even;
  even.reserve(20);
  for (std::int64_t i = 0; i < 20; ++i) even.push_back(Step(i * 100, i * 100 + 100, 5, 90));
  EXPECT_DOUBLE_EQ(SumStepPhases(even).wait_top_decile_share, 0.1);
}

TEST(EnergyDuringIntervals, IntegratesTheLinearPowerOverEachInterval) {
  const std::int64_t s = 1'000'000'000;
  for (std::int64_t offset : {std::int64_t{0}, std::int64_t{12} * s}) {
    const std::vector<std::pair<std::int64_t, double>> power = {
        {offset, 100.0}, {offset + s, 200.0}, {offset + 2 * s, 200.0}};
    // 0.5 s..1 s: 150 -> 200 W, 87.5 J; 1 s..1.5 s: 200 W, 100 J.
    EXPECT_NEAR(EnergyDuringIntervals(power, {{offset + s / 2, offset + 3 * s / 2}}), 187.5, 1e-6) << offset;
    // Before the series starts only its part inside counts: 0..0.5 s at 100 -> 150 W, 62.5 J.
    EXPECT_NEAR(EnergyDuringIntervals(power, {{offset - s, offset + s / 2}}), 62.5, 1e-6) << offset;
    // Two intervals add; one after the series adds nothing; an empty one adds nothing.
    EXPECT_NEAR(EnergyDuringIntervals(power, {{offset + s / 2, offset + 3 * s / 2},
                                              {offset + 3 * s, offset + 4 * s},
                                              {offset + s, offset + s}}),
                187.5, 1e-6);
  }
  EXPECT_EQ(EnergyDuringIntervals({}, {{0, 10}}), 0);
  EXPECT_EQ(EnergyDuringIntervals({{0, 100.0}}, {{0, 10}}), 0);
}

InputVerdictInputs Base() {
  InputVerdictInputs in;
  in.samples_per_s = 500;
  in.control_samples_per_s = 1000;
  in.phases.steps = 100;
  in.phases.step_ns = 1000;
  in.phases.wait_ns = 500;
  in.phases.copy_ns = 50;
  in.phases.compute_ns = 450;
  in.phases.wait_top_decile_share = 0.15;
  in.pipeline.workers = 4;
  in.pipeline.usable_cores = 16;
  in.pipeline.prefetch = 2;
  return in;
}

TEST(DecideInputBound, WithinFivePercentOfTheControlIsComputeBound) {
  InputVerdictInputs in = Base();
  in.samples_per_s = 960;  // 4% slower
  const InputVerdict v = DecideInputBound(in);
  EXPECT_EQ(v.bound, InputBound::kComputeBound);
  EXPECT_NEAR(v.slowdown, 0.04, 1e-12);
  EXPECT_TRUE(v.advice.empty());
  EXPECT_TRUE(Contains(v.reasons, "waits 50% of its time")) << "a large wait within 5% is reported";
  EXPECT_STREQ(InputBoundName(v.bound), "compute-bound");
}

TEST(DecideInputBound, SaturatedWorkersWithCoresLeftWantMoreWorkers) {
  InputVerdictInputs in = Base();
  in.pipeline.worker_cpu_util_pct = 95;
  const InputVerdict v = DecideInputBound(in);
  EXPECT_EQ(v.bound, InputBound::kInputBound);
  EXPECT_DOUBLE_EQ(v.slowdown, 0.5);
  EXPECT_DOUBLE_EQ(v.control_speedup, 2.0);
  EXPECT_DOUBLE_EQ(v.wait_share, 0.5);
  ASSERT_FALSE(v.advice.empty());
  EXPECT_NE(v.advice[0].find("more data_workers: the 4 workers use 95%"), std::string::npos) << v.advice[0];
  EXPECT_TRUE(Contains(v.reasons, "the control is 2.00x faster"));
  EXPECT_TRUE(Contains(v.reasons, "50% waiting for data, 5% copying, 45% computing"));

  in.pipeline.workers = 16;
  const InputVerdict all = DecideInputBound(in);
  ASSERT_FALSE(all.advice.empty());
  EXPECT_NE(all.advice[0].find("on all 16 cores: cache: true"), std::string::npos) << all.advice[0];
}

TEST(DecideInputBound, BurstyWaitsWithAPipelineThatKeepsUpWantPrefetch) {
  InputVerdictInputs in = Base();
  in.phases.wait_top_decile_share = 0.8;
  const InputVerdict unknown = DecideInputBound(in);  // no twin: the bursts alone ask for prefetch
  EXPECT_TRUE(Contains(unknown.advice,
                       "more prefetch (2 now): the waits come in bursts (the longest 10% of "
                       "waits hold 80% of the waiting)"));
  in.pipeline_samples_per_s = 1500;
  const InputVerdict v = DecideInputBound(in);
  EXPECT_EQ(v.bound, InputBound::kInputBound);
  ASSERT_FALSE(v.advice.empty());
  EXPECT_EQ(v.advice[0],
            "more prefetch (2 now): the pipeline keeps up on average, so a deeper queue absorbs its "
            "fluctuations; the longest 10% of waits hold 80% of the waiting");
  // 1500 / 1000 = 1.50x; the cell itself runs at 500.
  EXPECT_TRUE(Contains(v.reasons,
                       "delivers 1500 samples/s, 1.50x the 1000 the model takes, yet the step gets "
                       "500 beside the model"));
  in.pipeline_samples_per_s = 700;  // the pipeline alone is too slow: prefetch cannot help
  const InputVerdict slow = DecideInputBound(in);
  EXPECT_FALSE(Contains(slow.advice, "more prefetch"));
  EXPECT_TRUE(Contains(slow.reasons, "the pipeline alone delivers 700 samples/s, below the 1000"));
  EXPECT_TRUE(Contains(slow.reasons, "which more prefetch cannot make up"));
}

TEST(DecideInputBound, APipelineThatKeepsUpWithBlockedWorkersWantsPrefetchFirst) {
  InputVerdictInputs in = Base();  // steady waits (the top tenth holds 15%)
  in.pipeline_samples_per_s = 1200;
  in.pipeline.worker_busy_pct = 60;  // 40% of their time blocked with batches made
  in.pipeline.worker_cpu_util_pct = 90;
  const InputVerdict v = DecideInputBound(in);
  ASSERT_EQ(v.advice.size(), 2U);
  EXPECT_EQ(v.advice[0],
            "more prefetch (2 now): the pipeline keeps up on average, so a deeper queue absorbs its "
            "fluctuations; the workers were busy 60% of the time and blocked the rest with batches made");
  EXPECT_NE(v.advice[1].find("more data_workers: the 4 workers use 90%"), std::string::npos) << v.advice[1];

  in.pipeline.worker_busy_pct = 95;  // busy and steady: they share the CPU with the model
  const InputVerdict busy = DecideInputBound(in);
  EXPECT_FALSE(Contains(busy.advice, "more prefetch"));
  EXPECT_TRUE(Contains(busy.reasons, "the waits are steady and the workers busy 95% of the time"));

  in.pipeline.worker_busy_pct.reset();
  in.pipeline_samples_per_s = 1000;  // exactly the demand keeps up
  const InputVerdict equal = DecideInputBound(in);
  EXPECT_FALSE(Contains(equal.advice, "more prefetch"));
  EXPECT_TRUE(Contains(equal.reasons, "the waits are steady: beside the model"));
  EXPECT_TRUE(Contains(equal.reasons, "1000 samples/s, 1.00x the 1000"));
}

TEST(DecideInputBound, APipelineShortOfRateWantsTheWorkersThatRateNeeds) {
  InputVerdictInputs in = Base();
  in.phases.wait_top_decile_share = 0.8;  // bursty, yet a queue cannot make up a rate
  in.pipeline.worker_cpu_util_pct = 95;
  in.pipeline_samples_per_s = 700;
  // 4 workers deliver 700/s; 1000/s needs ceil(4 x 1000 / 700) = ceil(5.71) = 6.
  const InputVerdict v = DecideInputBound(in);
  ASSERT_EQ(v.advice.size(), 1U);
  EXPECT_EQ(v.advice[0],
            "more data_workers: about 6 (4 now) if the rate grows with the workers: 4 deliver 700 samples/s "
            "alone and the model takes 1000");

  in.pipeline.usable_cores = 5;  // 6 workers would not fit
  in.pipeline.decode_pct = 70;   // the cache is advised once
  const InputVerdict capped = DecideInputBound(in);
  ASSERT_EQ(capped.advice.size(), 1U);
  EXPECT_EQ(capped.advice[0],
            "cache: true, or a cheaper decode (smaller images, decoding on the GPU): at 175 samples/s per "
            "worker the model's 1000 needs about 6 workers, more than the 5 cores the runner may use");
  in.pipeline.cache = true;
  const InputVerdict cached = DecideInputBound(in);
  ASSERT_EQ(cached.advice.size(), 1U);
  EXPECT_EQ(cached.advice[0].rfind("a cheaper decode", 0), 0U) << cached.advice[0];

  in.pipeline.workers = 0;  // a source without workers: the figures, no worker count to advise
  in.pipeline.cache = false;
  in.pipeline.decode_pct.reset();
  const InputVerdict host = DecideInputBound(in);
  EXPECT_TRUE(host.advice.empty());
  EXPECT_TRUE(Contains(host.reasons, "below the 1000 the model takes"));
}

TEST(DecideInputBound, DecodeDominatingWantsTheCacheAndBusyIdleWorkersAFasterDisk) {
  InputVerdictInputs in = Base();
  in.pipeline.decode_pct = 70;
  EXPECT_TRUE(Contains(DecideInputBound(in).advice, "cache: true: decoding takes 70%"));
  in.pipeline.cache = true;
  EXPECT_FALSE(Contains(DecideInputBound(in).advice, "cache: true: decoding"));

  InputVerdictInputs io = Base();
  io.pipeline.worker_busy_pct = 95;
  io.pipeline.worker_cpu_util_pct = 20;
  io.pipeline.read_pct = 60;
  EXPECT_TRUE(Contains(DecideInputBound(io).advice, "a faster disk"));
  io.pipeline.read_pct = 10;  // busy, little CPU, but not in reads
  EXPECT_FALSE(Contains(DecideInputBound(io).advice, "a faster disk"));
}

TEST(DecideInputBound, ACopyLargerThanTheWaitIsCopyBound) {
  InputVerdictInputs in = Base();
  in.phases.wait_ns = 50;
  in.phases.copy_ns = 300;
  in.phases.compute_ns = 650;
  const InputVerdict v = DecideInputBound(in);
  EXPECT_EQ(v.bound, InputBound::kCopyBound);
  ASSERT_EQ(v.advice.size(), 2u);
  EXPECT_NE(v.advice[0].find("pin_memory: true"), std::string::npos);
  EXPECT_NE(v.advice[1].find("async_copy: true"), std::string::npos);
  in.pipeline.pin_memory = true;
  in.pipeline.async_copy = true;
  const InputVerdict both = DecideInputBound(in);
  ASSERT_EQ(both.advice.size(), 1u);
  EXPECT_NE(both.advice[0].find("the copy itself is the limit"), std::string::npos);
}

TEST(DecideInputBound, SlowerWithoutWaitingIsContentionForTheCpu) {
  InputVerdictInputs in = Base();
  in.phases.wait_ns = 10;
  in.phases.copy_ns = 10;
  in.phases.compute_ns = 980;
  const InputVerdict v = DecideInputBound(in);
  EXPECT_EQ(v.bound, InputBound::kInputBound);
  EXPECT_TRUE(Contains(v.reasons, "compete with the training loop"));
  EXPECT_TRUE(Contains(v.advice, "fewer data_workers (4 now)"));
}

TEST(DecideInputBound, ReportsTheIdleGpuAndTheEnergySpentWaiting) {
  InputVerdictInputs in = Base();
  in.gpu_util_mean_pct = 40;
  in.energy_total_j = 200;
  in.energy_while_waiting_j = 50;
  const InputVerdict v = DecideInputBound(in);
  ASSERT_TRUE(v.gpu_idle_share);
  EXPECT_DOUBLE_EQ(*v.gpu_idle_share, 0.6);
  EXPECT_DOUBLE_EQ(*v.waiting_energy_j, 50);
  EXPECT_DOUBLE_EQ(*v.waiting_energy_share, 0.25);
  EXPECT_TRUE(Contains(v.reasons, "the GPU was idle 60% of the window"));
  EXPECT_TRUE(Contains(v.reasons, "50.0 J (25% of the cell's energy)"));
  in.energy_total_j.reset();
  EXPECT_FALSE(DecideInputBound(in).waiting_energy_share);
}

TEST(DecideInputBoundDeathTest, NeedsBothSpeeds) {
  InputVerdictInputs in = Base();
  in.control_samples_per_s = 0;
  EXPECT_DEATH(DecideInputBound(in), "control's samples/s");
}

}  // namespace
}  // namespace dlbench::monitor
