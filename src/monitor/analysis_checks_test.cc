// The checks of AnalyzeCell on synthetic series with hand-computed answers: throttle verdicts, the
// low-GPU-busy warning and its cause, contention (run-queue wait, other processes on the GPU), and
// ExplainChange.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "monitor/analysis.h"
#include "monitor/analysis_test_util.h"
#include "monitor/nvml_sampler.h"

namespace dlbench::monitor {
namespace {

using namespace analysis_test;  // the helpers the analysis tests share

// Clocks event reasons: `bits` in the first `share` of the window's 100 samples, idle elsewhere.
AnalysisInput ThrottleInput(std::uint64_t bits, double share) {
  auto in = BaseInput();
  AddSeries(in.series, "gpu0.clocks_event_reasons", 0, 14 * kSecond, 100'000'000, [=](std::int64_t t) {
    double f = (static_cast<double>(t) - 2e9) / 1e10;
    bool inside = t > 2 * kSecond && t <= 12 * kSecond;
    return static_cast<double>(inside && f <= share + 1e-9 ? bits : kClocksEventGpuIdle);
  });
  return in;
}

TEST(AnalysisTest, ThermalThrottlingInvalidatesAndNamesTheReason) {
  auto a = AnalyzeCell(ThrottleInput(kClocksEventHwThermal, 0.35));
  ASSERT_EQ(a.verdict_reasons.size(), 1u);
  EXPECT_EQ(a.verdict_reasons[0], "throttled: hw_thermal_slowdown during 35% of samples (gpu0)");
  EXPECT_NEAR(Metric(a, "clocks_throttled_fraction"), 0.35, 0.011);
}

TEST(AnalysisTest, PowerCapWarnsByDefaultAndInvalidatesWhenAsked) {
  auto in = ThrottleInput(kClocksEventSwPowerCap | kClocksEventHwSlowdown, 0.35);
  auto a = AnalyzeCell(in);
  ASSERT_EQ(a.verdict_reasons.size(), 1u);
  EXPECT_EQ(a.verdict_reasons[0], "throttled: hw_slowdown during 35% of samples (gpu0)");
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_EQ(a.warnings[0].rfind("throttled: sw_power_cap during 35% of samples (gpu0)", 0), 0u)
      << a.warnings[0];
  in.power_cap_invalidates = true;
  auto strict = AnalyzeCell(in);
  EXPECT_EQ(strict.verdict_reasons.size(), 2u);
}

TEST(AnalysisTest, IdleBitAndThrottlingDuringWarmupAreNotThrottling) {
  auto in = BaseInput();
  AddSeries(in.series, "gpu0.clocks_event_reasons", 0, 14 * kSecond, 100'000'000, [](std::int64_t t) {
    return static_cast<double>(t < 2 * kSecond ? kClocksEventHwThermal : kClocksEventGpuIdle);
  });
  auto a = AnalyzeCell(in);
  EXPECT_TRUE(a.verdict_reasons.empty());
  EXPECT_TRUE(a.warnings.empty());
  EXPECT_DOUBLE_EQ(Metric(a, "clocks_throttled_fraction"), 0.0);
}

// SamplerOptions::slow_every_n_samples: clocks, clocks event reasons and temperature on every 5th
// round (500 ms at 10 Hz) beside power on every round. The sparser series are absent from the
// other rounds, not repeated, and the verdict, the means and ExplainChange come from the samples
// they have: 21 in the window [2 s, 12 s], 7 of them throttled (2.5 .. 5.5 s).
TEST(AnalysisTest, SlowReadingsOnEveryFifthRoundStillGiveVerdictsMeansAndCauses) {
  auto in = BaseInput();
  AddSeries(in.series, "gpu0.power_w", 0, 14 * kSecond, 100'000'000, [](std::int64_t) { return 500.0; });
  AddSeries(in.series, "gpu0.clocks_event_reasons", 0, 14 * kSecond, 500'000'000, [](std::int64_t t) {
    return static_cast<double>(t > 2 * kSecond && t <= 5'500'000'000 ? kClocksEventHwThermal
                                                                     : kClocksEventGpuIdle);
  });
  AddSeries(in.series, "gpu0.sm_clock_mhz", 0, 14 * kSecond, 500'000'000,
            [](std::int64_t t) { return t < 7 * kSecond ? 1980.0 : 1755.0; });
  AddSeries(in.series, "gpu0.temp_c", 0, 14 * kSecond, 500'000'000,
            [](std::int64_t t) { return t == 6 * kSecond ? 60.0 : 50.0; });
  auto a = AnalyzeCell(in);
  ASSERT_EQ(a.verdict_reasons.size(), 1u);
  EXPECT_EQ(a.verdict_reasons[0], "throttled: hw_thermal_slowdown during 33% of samples (gpu0)");
  EXPECT_DOUBLE_EQ(Metric(a, "clocks_throttled_fraction"), 7.0 / 21);
  EXPECT_NEAR(Metric(a, "sm_clock_mean_mhz"), (10 * 1980.0 + 11 * 1755.0) / 21, 1e-9);
  EXPECT_DOUBLE_EQ(Metric(a, "temp_max_c"), 60.0);
  EXPECT_DOUBLE_EQ(Metric(a, "power_mean_w"), 500.0);
  const auto causes = ExplainChange(in.series, 0, 4 * kSecond, 8 * kSecond, 12 * kSecond);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0], "the SM clock fell from 1980 to 1755 MHz (gpu0)");
}

TEST(AnalysisTest, LowGpuBusyInTrainingNamesDataWait) {
  auto in = BaseInput();
  in.scenario = Scenario::kTrain;
  for (auto& row : in.steps) {
    row.record.data_wait_ns = 600'000'000;
    row.record.present = record::kHasDataWait;
  }
  AddSeries(in.series, "gpu0.sm_util_pct", 0, 13 * kSecond, 100'000'000, [](std::int64_t) { return 40.0; });
  auto a = AnalyzeCell(in);
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_NE(a.warnings[0].find("GPU busy 40% of the measured window (below 70% for training)"),
            std::string::npos);
  EXPECT_NE(a.warnings[0].find("likely cause: data wait (60% of step time"), std::string::npos)
      << a.warnings[0];
}

// The GPU busy 60% of the window with no cause in the step records: the runner's CPU time says
// which side waits. proc.cpu_s grows `cores` seconds per second (window 2 s..12 s).
TEST(AnalysisTest, LowGpuBusyWithoutAVisibleCauseIsJudgedByTheRunnersCpu) {
  struct Case {
    Scenario scenario;
    double cores;
    const char* kind;     // info.bound.kind, or "" for none
    const char* warning;  // a substring of the one warning, or "" for no warning
  };
  const Case cases[] = {
      {Scenario::kTrain, 0.98, "host_bound",
       "below 70% for training); host-bound (kernel launch): the runner's "
       "process used 0.98 CPU cores while the GPU idled 40%"},
      {Scenario::kInfer, 0.98, "host_bound",
       "GPU busy 60% of the measured window; host-bound (kernel launch)"},
      {Scenario::kInfer, 3.0, "host_bound", "host-bound: the runner's process used 3.00 CPU cores"},
      {Scenario::kInfer, 0.2, "host_idle", "the host was not busy either (the runner's process used 0.20"},
      {Scenario::kInfer, 0.7, "", ""},
      {Scenario::kTrain, 0.7, "", "cause not visible in the step records"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "cores " << c.cores
                                    << (c.scenario == Scenario::kTrain ? " train" : " infer"));
    auto in = BaseInput();
    in.scenario = c.scenario;
    AddSeries(in.series, "gpu0.sm_util_pct", 0, 13 * kSecond, 100'000'000, [](std::int64_t) { return 60.0; });
    const double cores = c.cores;
    AddSeries(in.series, "proc.cpu_s", 0, 13 * kSecond, 100'000'000,
              [cores](std::int64_t t) { return cores * static_cast<double>(t) / kSecond; });
    const auto a = AnalyzeCell(in);
    EXPECT_TRUE(a.verdict_reasons.empty()) << "a finding about the workload, not an invalid measurement";
    if (*c.kind == '\0') {
      EXPECT_FALSE(a.info.contains("bound"));
    } else {
      ASSERT_TRUE(a.info.contains("bound"));
      EXPECT_EQ(a.info["bound"]["kind"], c.kind);
      EXPECT_NEAR(a.info["bound"]["runner_cores"].get<double>(), c.cores, 1e-9);
      EXPECT_DOUBLE_EQ(a.info["bound"]["gpu_busy_pct"].get<double>(), 60.0);
    }
    if (*c.warning == '\0') {
      EXPECT_TRUE(a.warnings.empty()) << a.warnings[0];
    } else {
      ASSERT_EQ(a.warnings.size(), 1u);
      EXPECT_NE(a.warnings[0].find(c.warning), std::string::npos) << a.warnings[0];
    }
  }
}

// A cause the step records show wins over the runner's CPU time: an input pipeline's workers live
// in the runner's process and keep it busy while the step waits for data.
TEST(AnalysisTest, AVisibleCauseComesBeforeTheHostFinding) {
  auto in = BaseInput();
  in.scenario = Scenario::kTrain;
  for (auto& row : in.steps) {
    row.record.data_wait_ns = 600'000'000;
    row.record.present = record::kHasDataWait;
  }
  AddSeries(in.series, "gpu0.sm_util_pct", 0, 13 * kSecond, 100'000'000, [](std::int64_t) { return 40.0; });
  AddSeries(in.series, "proc.cpu_s", 0, 13 * kSecond, 100'000'000,
            [](std::int64_t t) { return 1.9 * static_cast<double>(t) / kSecond; });
  const auto a = AnalyzeCell(in);
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_NE(a.warnings[0].find("likely cause: data wait"), std::string::npos) << a.warnings[0];
  EXPECT_FALSE(a.info.contains("bound"));
}

TEST(AnalysisTest, LowGpuBusyNamesGapsBetweenSteps) {
  AnalysisInput in;
  in.scenario = Scenario::kTrain;
  // 0.5 s steps every 1 s: half the window is outside any step.
  for (int i = 0; i < 12; ++i) {
    record::StepRow row;
    row.record.start_ns = i * kSecond;
    row.record.end_ns = i * kSecond + kSecond / 2;
    row.record.samples = 8;
    in.steps.push_back(row);
  }
  in.window = record::MeasuredWindow{2, 10};
  AddSeries(in.series, "gpu0.sm_util_pct", 0, 13 * kSecond, 100'000'000, [](std::int64_t) { return 45.0; });
  auto a = AnalyzeCell(in);
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_NE(a.warnings[0].find("likely cause: long gaps between steps"), std::string::npos) << a.warnings[0];
}

TEST(AnalysisTest, LowGpuBusyIsNotAWarningForInferenceOrABusyGpu) {
  auto in = BaseInput();
  in.scenario = Scenario::kInfer;
  AddSeries(in.series, "gpu0.sm_util_pct", 0, 13 * kSecond, 100'000'000, [](std::int64_t) { return 40.0; });
  EXPECT_TRUE(AnalyzeCell(in).warnings.empty());
  in.scenario = Scenario::kTrain;
  for (auto& p : in.series) p.value = 95;
  EXPECT_TRUE(AnalyzeCell(in).warnings.empty());
}

// Issue 17: other work that takes the CPUs the runner wants makes the cell contended: its threads
// wait on the run queue. Busy cores elsewhere alone (a spare core) are a figure, not contention.
TEST(AnalysisTest, RunqueueWaitOfTheRunnerIsContention) {
  struct Case {
    double others;      // busy cores outside the runner
    double wait_ratio;  // run-queue wait per CPU second of the runner
    bool contended;
  };
  for (const Case c :
       {Case{1.3, 0.0, false}, Case{0.2, 0.03, false}, Case{1.3, 0.12, true}, Case{0.1, 0.12, true}}) {
    auto in = BaseInput();
    // The runner's tree uses 1 core throughout; the host is busy with 1 + others cores.
    AddSeries(in.series, "host.cpu_busy_cores", 0, 13 * kSecond, 100'000'000,
              [=](std::int64_t) { return 1.0 + c.others; });
    AddSeries(in.series, "proc.cpu_s", 0, 13 * kSecond, 100'000'000,
              [](std::int64_t t) { return static_cast<double>(t) * 1e-9; });
    AddSeries(in.series, "proc.runqueue_wait_s", 0, 13 * kSecond, 100'000'000,
              [=](std::int64_t t) { return c.wait_ratio * static_cast<double>(t) * 1e-9; });
    auto a = AnalyzeCell(in);
    EXPECT_NEAR(Metric(a, "host_cpu_other_cores"), c.others, 1e-9);
    EXPECT_NEAR(Metric(a, "runner_cpu_wait_ratio"), c.wait_ratio, 1e-9);
    EXPECT_EQ(!a.verdict_reasons.empty(), c.contended) << c.others << " " << c.wait_ratio;
    if (!a.verdict_reasons.empty()) {
      EXPECT_EQ(a.verdict_reasons[0].rfind("contended: the runner waited for a CPU 12% as long as it ran", 0),
                0u)
          << a.verdict_reasons[0];
      // The busy cores are named when they are a likely cause.
      EXPECT_EQ(a.verdict_reasons[0].find("1.30 CPU cores were busy outside the runner") != std::string::npos,
                c.others >= kContendedCores)
          << a.verdict_reasons[0];
    }
  }
}

TEST(AnalysisTest, AnotherProcessOnTheCellsGpuIsContention) {
  auto in = BaseInput();
  AddSeries(in.series, "gpu0.other_procs", 0, 13 * kSecond, 100'000'000,
            [](std::int64_t t) { return t > 6 * kSecond ? 2.0 : 0.0; });
  auto a = AnalyzeCell(in);
  EXPECT_DOUBLE_EQ(Metric(a, "gpu_other_procs_max"), 2.0);
  ASSERT_EQ(a.verdict_reasons.size(), 1u);
  EXPECT_EQ(a.verdict_reasons[0].rfind("contended: up to 2 other process(es) computed on gpu0", 0), 0u)
      << a.verdict_reasons[0];
}

// What ExplainChange names for a drift or shift: readings whose mean moved between the spans.
TEST(AnalysisTest, ExplainChangeNamesWhatMovedBetweenTwoSpans) {
  std::vector<SeriesPoint> s;
  AddSeries(s, "gpu0.sm_clock_mhz", 0, 10 * kSecond, 100'000'000,
            [](std::int64_t t) { return t < 5 * kSecond ? 1980.0 : 1755.0; });
  AddSeries(s, "gpu0.power_w", 0, 10 * kSecond, 100'000'000, [](std::int64_t) { return 700.0; });
  AddSeries(s, "host.cpu_busy_cores", 0, 10 * kSecond, 100'000'000,
            [](std::int64_t t) { return t < 5 * kSecond ? 1.0 : 1.1; });
  AddSeries(s, "proc.cpu_s", 0, 10 * kSecond, 100'000'000,
            [](std::int64_t t) { return static_cast<double>(t) * 1e-9; });
  const auto causes = ExplainChange(s, 0, 4 * kSecond, 6 * kSecond, 10 * kSecond);
  ASSERT_EQ(causes.size(), 1u) << "power did not move; 0.1 extra cores is below the floor";
  EXPECT_EQ(causes[0], "the SM clock fell from 1980 to 1755 MHz (gpu0)");
  EXPECT_TRUE(ExplainChange({}, 0, 1, 2, 3).empty());
}

// Host CPU steal: a virtual machine whose hypervisor gives its CPUs to other guests mid-window.
TEST(AnalysisTest, ExplainChangeNamesARiseInHostCpuSteal) {
  std::vector<SeriesPoint> s;
  AddSeries(s, "host.cpu_steal_pct", 0, 10 * kSecond, 100'000'000,
            [](std::int64_t t) { return t < 5 * kSecond ? 0.5 : 12.0; });
  const auto causes = ExplainChange(s, 0, 4 * kSecond, 6 * kSecond, 10 * kSecond);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0],
            "host CPU steal (the hypervisor running other guests) rose from 0.5% to 12.0% of the CPUs' time");
  // 1.5 percentage points is below kCauseMinStealPct (2).
  std::vector<SeriesPoint> small;
  AddSeries(small, "host.cpu_steal_pct", 0, 10 * kSecond, 100'000'000,
            [](std::int64_t t) { return t < 5 * kSecond ? 0.5 : 2.0; });
  EXPECT_TRUE(ExplainChange(small, 0, 4 * kSecond, 6 * kSecond, 10 * kSecond).empty());
  // The window's mean is a metric of the cell.
  auto in = BaseInput();
  AddSeries(in.series, "host.cpu_steal_pct", 0, 13 * kSecond, 100'000'000,
            [](std::int64_t t) { return t < 7 * kSecond ? 2.0 : 4.0; });
  EXPECT_NEAR(Metric(AnalyzeCell(in), "host_cpu_steal_pct"), 3.0, 0.25);
}

}  // namespace
}  // namespace dlbench::monitor
