// AnalyzeCell on synthetic series with hand-computed answers: window alignment, energy from the
// counter and from power, idle subtraction, metrics absent rather than zero, the analysed rank. The
// memory growth test is in analysis_growth_test.cc; throttling, contention, low GPU busy time and
// ExplainChange in analysis_checks_test.cc.
#include "monitor/analysis.h"

#include <gtest/gtest.h>

#include <cmath>

#include "monitor/analysis_test_util.h"

namespace dlbench::monitor {
namespace {

using namespace analysis_test;  // the helpers the analysis tests share

TEST(AnalysisTest, OnlySamplesInsideTheMeasuredWindowCount) {
  auto in = BaseInput();
  // Warm-up reads 10%, the window 90%, after the last step 5%; samples every 100 ms offset 37 ms.
  AddSeries(in.series, "gpu0.sm_util_pct", 37'000'000, 14 * kSecond, 100'000'000,
            [](std::int64_t t) { return t < 2 * kSecond ? 10.0 : (t <= 12 * kSecond ? 90.0 : 5.0); });
  auto a = AnalyzeCell(in);
  EXPECT_DOUBLE_EQ(Metric(a, "gpu_util_mean_pct"), 90.0);
  EXPECT_DOUBLE_EQ(Metric(a, "gpu_util_p5_pct"), 90.0);
  EXPECT_EQ(a.info["window_start_ns"], 2 * kSecond);
  EXPECT_EQ(a.info["window_end_ns"], 12 * kSecond);
  EXPECT_EQ(a.info["samples_in_window"], 100);
}

TEST(AnalysisTest, UtilisationP5IsTheType7Quantile) {
  auto in = BaseInput();
  // 100 samples in the window reading 0, 1, ..., 99: P5 = 0.05 * 99 = 4.95, mean 49.5.
  int i = 0;
  AddSeries(in.series, "gpu0.sm_util_pct", 2 * kSecond + 50'000'000, 12 * kSecond, 100'000'000,
            [&](std::int64_t) { return static_cast<double>(i++); });
  auto a = AnalyzeCell(in);
  EXPECT_NEAR(Metric(a, "gpu_util_p5_pct"), 4.95, 1e-12);
  EXPECT_NEAR(Metric(a, "gpu_util_mean_pct"), 49.5, 1e-12);
}

TEST(AnalysisTest, EnergyIsTheCounterBetweenItsReadingsAndThePowerAtTheWindowEdges) {
  auto in = BaseInput();
  // The counter says 700 W exactly: E(t) = 700 J/s * t; the power readings say 650 W (a sensor
  // that disagrees, so the two sources are told apart). Samples every 100 ms offset 37 ms: the
  // window [2 s, 12 s] holds counter readings from 2.037 s to 11.937 s, 9.9 s of counter (6,930 J),
  // and its edges, 0.037 s and 0.063 s, are power: 0.1 s x 650 W = 65 J.
  AddSeries(in.series, "gpu0.energy_j", 37'000'000, 13 * kSecond, 100'000'000,
            [](std::int64_t t) { return 5000.0 + 700.0 * static_cast<double>(t) * 1e-9; });
  AddSeries(in.series, "gpu0.power_w", 37'000'000, 13 * kSecond, 100'000'000,
            [](std::int64_t) { return 650.0; });
  auto a = AnalyzeCell(in);
  EXPECT_EQ(a.info["energy_method"], "counter");
  EXPECT_NEAR(Metric(a, "energy_total_j"), 6995.0, 1e-6);
  EXPECT_NEAR(Metric(a, "energy_per_step_j"), 699.5, 1e-7);
  EXPECT_NEAR(Metric(a, "energy_per_sample_j"), 699.5 / 32, 1e-9);
  EXPECT_DOUBLE_EQ(Metric(a, "power_mean_w"), 650.0);
}

TEST(AnalysisTest, ACounterReadOnceASecondOrEveryFiveGivesTheSameEnergyAsOneReadEveryRound) {
  // The sampler reads the energy counter on every Nth round (energy_every_n_samples): at 10 Hz
  // every 10th is once a second, here at 0.437 s, 1.437 s, ...; power every round. At a steady
  // 700 W every cadence gives 10 s x 700 W over the window [2 s, 12 s]: once a second the counter
  // from 2.437 s to 11.437 s (6,300 J) and power over the edges' 0.437 s + 0.563 s (700 J); every
  // 50th round (the default, every 5 s) the counter from 5.437 s to 10.437 s and power over the
  // edges' 3.437 s + 1.563 s.
  for (const std::int64_t every :
       {std::int64_t{100'000'000}, std::int64_t{1'000'000'000}, std::int64_t{5'000'000'000}}) {
    auto in = BaseInput();
    AddSeries(in.series, "gpu0.energy_j", 437'000'000, 13 * kSecond, every,
              [](std::int64_t t) { return 5000.0 + 700.0 * static_cast<double>(t) * 1e-9; });
    AddSeries(in.series, "gpu0.power_w", 37'000'000, 13 * kSecond, 100'000'000,
              [](std::int64_t) { return 700.0; });
    auto a = AnalyzeCell(in);
    EXPECT_EQ(a.info["energy_method"], "counter") << every;
    EXPECT_NEAR(Metric(a, "energy_total_j"), 7000.0, 1e-6) << every;
  }
}

TEST(AnalysisTest, ACounterWithOneReadingInTheWindowFallsBackToPower) {
  auto in = BaseInput();
  // Readings at 0.5 s and 7.5 s (every 7 s): only one inside the window [2 s, 12 s].
  AddSeries(in.series, "gpu0.energy_j", 500'000'000, 13 * kSecond, 7 * kSecond,
            [](std::int64_t t) { return 700.0 * static_cast<double>(t) * 1e-9; });
  AddSeries(in.series, "gpu0.power_w", 0, 13 * kSecond, 100'000'000, [](std::int64_t) { return 300.0; });
  auto a = AnalyzeCell(in);
  EXPECT_EQ(a.info["energy_method"], "power_integral");
  EXPECT_NEAR(Metric(a, "energy_total_j"), 3000.0, 1e-6);
}

TEST(AnalysisTest, EnergyFallsBackToIntegratedPowerAndSaysSo) {
  auto in = BaseInput();
  // Power ramps linearly 100 W -> 200 W over [0, 14 s]: P(t) = 100 + 100 t / 14; the trapezoid
  // rule is exact for a line. Over [2, 12]: 10 * (P(2) + P(12)) / 2 = 10 * (100 + 100 * 14 / 28).
  AddSeries(in.series, "gpu0.power_w", 0, 14 * kSecond, 100'000'000,
            [](std::int64_t t) { return 100.0 + 100.0 * static_cast<double>(t) / (14.0 * kSecond); });
  auto a = AnalyzeCell(in);
  EXPECT_EQ(a.info["energy_method"], "power_integral");
  EXPECT_NEAR(Metric(a, "energy_total_j"), 10.0 * (100.0 + 50.0), 1e-6);
  EXPECT_NEAR(Metric(a, "power_max_w"), 100.0 + 100.0 * 12.0 / 14.0, 1e-9);
}

TEST(AnalysisTest, CounterThatResetsFallsBackToPower) {
  auto in = BaseInput();
  AddSeries(in.series, "gpu0.energy_j", 0, 13 * kSecond, 100'000'000,
            [](std::int64_t t) { return t < 5 * kSecond ? 1e6 + 1e-7 * static_cast<double>(t) : 1.0; });
  AddSeries(in.series, "gpu0.power_w", 0, 13 * kSecond, 100'000'000, [](std::int64_t) { return 300.0; });
  auto a = AnalyzeCell(in);
  EXPECT_EQ(a.info["energy_method"], "power_integral");
  EXPECT_NEAR(Metric(a, "energy_total_j"), 3000.0, 1e-6);
}

TEST(AnalysisTest, PowerAndEnergyAreTotalsOverTheCellsGpus) {
  auto in = BaseInput();
  for (auto [gpu, watts] : {std::pair{"gpu0", 300.0}, std::pair{"gpu1", 200.0}}) {
    double w = watts;
    AddSeries(in.series, std::string(gpu) + ".power_w", 0, 13 * kSecond, 100'000'000,
              [w](std::int64_t) { return w; });
    AddSeries(in.series, std::string(gpu) + ".energy_j", 0, 13 * kSecond, 100'000'000,
              [w](std::int64_t t) { return w * static_cast<double>(t) * 1e-9; });
  }
  auto a = AnalyzeCell(in);
  EXPECT_DOUBLE_EQ(Metric(a, "power_mean_w"), 500.0);
  EXPECT_DOUBLE_EQ(Metric(a, "power_max_w"), 500.0);
  EXPECT_NEAR(Metric(a, "energy_total_j"), 5000.0, 1e-6);
}

TEST(AnalysisTest, IdlePowerIsSubtractedWhenABaselineWasSampled) {
  auto in = BaseInput();
  AddSeries(in.series, "gpu0.energy_j", 0, 13 * kSecond, 100'000'000,
            [](std::int64_t t) { return 700.0 * static_cast<double>(t) * 1e-9; });
  // Idle: 60 W by the counter over 3 s before the cell.
  AddSeries(in.idle_series, "gpu0.energy_j", -5 * kSecond, -2 * kSecond, 100'000'000,
            [](std::int64_t t) { return 100.0 + 60.0 * static_cast<double>(t + 5 * kSecond) * 1e-9; });
  auto a = AnalyzeCell(in);
  EXPECT_NEAR(Metric(a, "idle_power_w"), 60.0, 1e-9);
  EXPECT_NEAR(Metric(a, "energy_above_idle_per_step_j"), 640.0, 1e-6);
  EXPECT_NEAR(Metric(a, "energy_above_idle_per_sample_j"), 20.0, 1e-7);
  EXPECT_NEAR(Metric(a, "energy_per_step_j"), 700.0, 1e-6);
}

TEST(AnalysisTest, NoGpuSeriesMeansNoGpuMetricsRatherThanZeros) {
  auto in = BaseInput();
  AddSeries(in.series, "host.cpu_util_pct", 0, 13 * kSecond, 100'000'000, [](std::int64_t) { return 25.0; });
  AddSeries(in.series, "proc.cpu_s", 0, 13 * kSecond, 100'000'000,
            [](std::int64_t t) { return 1.5 * static_cast<double>(t) * 1e-9; });
  AddSeries(in.series, "host.rapl_energy_j", 0, 13 * kSecond, 100'000'000,
            [](std::int64_t t) { return 80.0 * static_cast<double>(t) * 1e-9; });
  auto a = AnalyzeCell(in);
  for (const char* name : {"gpu_util_mean_pct", "power_mean_w", "energy_total_j", "temp_max_c",
                           "sm_clock_mean_mhz", "clocks_throttled_fraction", "device_proc_mem_peak_bytes"}) {
    EXPECT_EQ(a.Find(name), nullptr) << name;
  }
  EXPECT_FALSE(a.info.contains("energy_method"));
  EXPECT_DOUBLE_EQ(Metric(a, "host_cpu_util_pct"), 25.0);
  EXPECT_NEAR(Metric(a, "proc_cpu_util_pct"), 150.0, 1e-9);
  EXPECT_NEAR(Metric(a, "cpu_package_energy_per_step_j"), 80.0, 1e-9);
  EXPECT_NEAR(Metric(a, "cpu_package_energy_per_sample_j"), 2.5, 1e-9);
}

TEST(AnalysisTest, NoMeasuredStepsGivesAWarningAndNoMetrics) {
  auto in = BaseInput();
  in.window = record::MeasuredWindow{12, 0};
  AddSeries(in.series, "gpu0.sm_util_pct", 0, 13 * kSecond, 100'000'000, [](std::int64_t) { return 40.0; });
  auto a = AnalyzeCell(in);
  EXPECT_TRUE(a.metrics.empty());
  ASSERT_EQ(a.warnings.size(), 1u);
  AnalysisInput empty;
  EXPECT_TRUE(AnalyzeCell(empty).metrics.empty());
}

TEST(AnalysisTest, AnalysesRankZeroWhenSeveralRanksReport) {
  auto in = BaseInput();
  // Rank 1's steps run a second later; they must not move the window.
  auto other = Steps(kSecond, kSecond, 12);
  for (auto& row : other) row.rank = 1;
  in.steps.insert(in.steps.begin(), other.begin(), other.end());
  AddSeries(in.series, "gpu0.sm_util_pct", 0, 13 * kSecond, 100'000'000, [](std::int64_t) { return 50.0; });
  auto a = AnalyzeCell(in);
  EXPECT_EQ(a.info["window_start_ns"], 2 * kSecond);
  EXPECT_EQ(a.info["window_end_ns"], 12 * kSecond);
}

}  // namespace
}  // namespace dlbench::monitor
