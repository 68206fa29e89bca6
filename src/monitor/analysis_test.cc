// AnalyzeCell on synthetic series with hand-computed answers: window alignment, energy from the
// counter and from power, idle subtraction, throttle verdicts, memory growth and the low-GPU-busy
// warning.
#include "monitor/analysis.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "monitor/nvml_sampler.h"

namespace dlbench::monitor {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

// n back-to-back steps of step_ns starting at t0, batch 32, on rank 0.
std::vector<record::StepRow> Steps(std::int64_t t0, std::int64_t step_ns, int n, std::uint32_t samples = 32) {
  std::vector<record::StepRow> rows;
  for (int i = 0; i < n; ++i) {
    record::StepRow row;
    row.record.start_ns = t0 + i * step_ns;
    row.record.end_ns = row.record.start_ns + step_ns;
    row.record.samples = samples;
    rows.push_back(row);
  }
  return rows;
}

// Points of `series` every period_ns over [from, to], value f(t).
void AddSeries(std::vector<SeriesPoint>& out, const std::string& series, std::int64_t from, std::int64_t to,
               std::int64_t period_ns, const std::function<double(std::int64_t)>& f) {
  for (std::int64_t t = from; t <= to; t += period_ns) out.push_back({t, series, f(t)});
}

double Metric(const CellAnalysis& a, const std::string& name) {
  const auto* m = a.Find(name);
  EXPECT_NE(m, nullptr) << name;
  return m ? m->value : NAN;
}

// What the leak rule's first two conditions call a leak (the trend), before its troughs are looked
// at: a significant trend whose whole
// interval lies above the floor.
void ExpectTrendAboveTheFloor(const CellAnalysis& a) {
  const auto& d = a.info["rss_growth_bytes_per_step"];
  EXPECT_LT(d.value("mann_kendall_p", 1.0), kLeakMaxPValue) << d.dump();
  EXPECT_GT(d.value("ci_low", 0.0), d.value("floor_bytes_per_step", 0.0)) << d.dump();
}

// Steps: 2 warm-up steps of 1 s from t=0, then 10 measured steps: the window is [2 s, 12 s].
AnalysisInput BaseInput() {
  AnalysisInput in;
  in.steps = Steps(0, kSecond, 12);
  in.window = record::MeasuredWindow{2, 10};
  return in;
}

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

TEST(AnalysisTest, EnergyFromTheCounterIsInterpolatedAtTheWindowEdges) {
  auto in = BaseInput();
  // 700 W exactly: E(t) = 700 J/s * t. Samples every 100 ms offset 37 ms never hit the edges.
  AddSeries(in.series, "gpu0.energy_j", 37'000'000, 13 * kSecond, 100'000'000,
            [](std::int64_t t) { return 5000.0 + 700.0 * static_cast<double>(t) * 1e-9; });
  AddSeries(in.series, "gpu0.power_w", 37'000'000, 13 * kSecond, 100'000'000,
            [](std::int64_t) { return 650.0; });
  auto a = AnalyzeCell(in);
  EXPECT_EQ(a.info["energy_method"], "counter");
  EXPECT_NEAR(Metric(a, "energy_total_j"), 7000.0, 1e-6);
  EXPECT_NEAR(Metric(a, "energy_per_step_j"), 700.0, 1e-7);
  EXPECT_NEAR(Metric(a, "energy_per_sample_j"), 700.0 / 32, 1e-9);
  EXPECT_DOUBLE_EQ(Metric(a, "power_mean_w"), 650.0);
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

// A runner's RSS sampled at 10 Hz over 400 steps of 73 ms (so samples fall at every phase of a
// step): a base, 2 MiB of activations held during the first 60% of each step, page-granular
// jitter of up to 32 pages, sample times jittered by +-5 ms, and `leak_per_step` kept per step.
AnalysisInput RssRun(std::uint32_t seed, double leak_per_step) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> pages(0, 32);
  std::uniform_int_distribution<std::int64_t> jitter(-5'000'000, 5'000'000);
  constexpr std::int64_t kStep = 73'000'000;
  constexpr int kWarmup = 20, kSteps = 420;
  AnalysisInput in;
  in.steps = Steps(0, kStep, kSteps);
  in.window = record::MeasuredWindow{kWarmup, kSteps - kWarmup};
  in.scenario = Scenario::kTrain;
  for (std::int64_t tick = 0; tick * 100'000'000 < kSteps * kStep; ++tick) {
    std::int64_t t = tick * 100'000'000 + jitter(rng);
    if (t < 0) t = 0;
    double steps_done = static_cast<double>(t) / kStep;
    double phase = steps_done - std::floor(steps_done);
    double leaked = std::floor(leak_per_step * steps_done / 4096) * 4096;  // RSS moves in pages
    double rss = (800 << 20) + (phase < 0.6 ? (2 << 20) : 0) + pages(rng) * 4096.0 + leaked;
    in.series.push_back({t, "proc.rss_bytes", rss});
  }
  return in;
}

TEST(AnalysisTest, LeakOf64KiBPerStepIsCaughtWithItsSlope) {
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    auto a = AnalyzeCell(RssRun(seed, 65536));
    double slope = Metric(a, "rss_growth_bytes_per_step");
    EXPECT_NEAR(slope, 65536, 0.05 * 65536) << "seed " << seed;
    EXPECT_LT(Metric(a, "rss_growth_bytes_per_step_ci_low"), slope);
    EXPECT_GT(Metric(a, "rss_growth_bytes_per_step_ci_high"), slope);
    ASSERT_EQ(a.verdict_reasons.size(), 1u) << "seed " << seed;
    EXPECT_EQ(a.verdict_reasons[0].rfind("leaking: host RSS grows ", 0), 0u) << a.verdict_reasons[0];
  }
}

TEST(AnalysisTest, FlatRssIsNeverCalledALeakAcross200Seeds) {
  int flagged = 0;
  for (std::uint32_t seed = 1; seed <= 200; ++seed) {
    auto a = AnalyzeCell(RssRun(seed, 0));
    ASSERT_NE(a.Find("rss_growth_bytes_per_step"), nullptr);
    if (!a.verdict_reasons.empty()) ++flagged;
  }
  EXPECT_EQ(flagged, 0);
}

// A converge cell's whole-run window starts at step 0, so the runner's start-up growth sits
// inside it: RSS climbing 40 MiB over the first 200 of 420 steps, then flat (the CI failure of
// 2026-12-02 read such a cell "leaking: host RSS grows 19360 B/step"). With the window marked as
// holding its warm-up, only the second half is judged: no leak; a real leak still shows there.
// Judged whole, the start-up's troughs level off (analysis.h), which is no leak either.
AnalysisInput WholeRunRss(std::uint32_t seed, double leak_per_step) {
  AnalysisInput in = RssRun(seed, leak_per_step);
  in.window = record::MeasuredWindow{0, 420};
  in.window_holds_warmup = true;
  for (auto& p : in.series) {
    const double steps_done = static_cast<double>(p.t_ns) / 73'000'000;
    p.value += std::floor(std::min(steps_done, 200.0) / 200.0 * (40 << 20) / 4096) * 4096;
  }
  return in;
}

TEST(AnalysisTest, AWholeRunWindowJudgesGrowthOverItsSecondHalf) {
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    // Judged from step 0, the start-up reads as a trend; its troughs level off, so no leak either.
    AnalysisInput startup = WholeRunRss(seed, 0);
    startup.window_holds_warmup = false;
    const auto whole = AnalyzeCell(startup);
    ExpectTrendAboveTheFloor(whole);
    EXPECT_TRUE(whole.verdict_reasons.empty()) << "seed " << seed << ": " << whole.verdict_reasons[0];
    EXPECT_NE(whole.info["rss_growth_bytes_per_step"].value("not_a_leak", "").find("levelling off"),
              std::string::npos)
        << "seed " << seed;
    const auto a = AnalyzeCell(WholeRunRss(seed, 0));
    EXPECT_TRUE(a.verdict_reasons.empty()) << "seed " << seed << ": " << a.verdict_reasons[0];
    EXPECT_EQ(a.info.value("leak_test_from_step", -1), 210);
    const auto leak = AnalyzeCell(WholeRunRss(seed, 65536));
    ASSERT_EQ(leak.verdict_reasons.size(), 1u) << "seed " << seed;
    EXPECT_NEAR(Metric(leak, "rss_growth_bytes_per_step"), 65536, 0.05 * 65536) << "seed " << seed;
  }
}

TEST(AnalysisTest, DeviceMemoryGrowingInAllocatorSegmentsIsALeak) {
  auto in = BaseInput();
  in.steps = Steps(0, 50'000'000, 600);
  in.window = record::MeasuredWindow{50, 550};
  // The caching allocator reserves 2 MiB segments: 64 KiB/step shows as a 2 MiB stair every 32 steps.
  AddSeries(in.series, "gpu0.proc_mem_bytes", 0, 30 * kSecond, 100'000'000, [](std::int64_t t) {
    double steps_done = static_cast<double>(t) / 50e6;
    return (4.0 * (1 << 30)) + std::floor(steps_done / 32) * (2 << 20);
  });
  auto a = AnalyzeCell(in);
  EXPECT_NEAR(Metric(a, "device_mem_growth_bytes_per_step"), 65536, 0.1 * 65536);
  ASSERT_EQ(a.verdict_reasons.size(), 1u);
  EXPECT_EQ(a.verdict_reasons[0].rfind("leaking: device memory grows ", 0), 0u);
  EXPECT_GE(Metric(a, "device_proc_mem_peak_bytes"), 4.0 * (1 << 30));
}

// A stored cell's RSS samples inside its measured window, replayed: `ms` after the window's start,
// `pages` of 4 KiB; `step_ns` steps back to back, `warmup` of them before the window, and
// `leak_per_step` bytes added per step elapsed (page-granular), to put a real leak in the same run.
struct StoredSample {
  int ms;
  int pages;
};

AnalysisInput StoredRss(const std::vector<StoredSample>& samples, std::int64_t step_ns, int warmup, int steps,
                        double leak_per_step) {
  AnalysisInput in;
  in.steps = Steps(0, step_ns, warmup + steps);
  in.window = record::MeasuredWindow{warmup, steps};
  in.scenario = Scenario::kTrain;
  const std::int64_t start = warmup * step_ns;
  for (const auto& s : samples) {
    const std::int64_t t = start + s.ms * 1'000'000LL;
    const double steps_done = static_cast<double>(t - start) / static_cast<double>(step_ns);
    in.series.push_back(
        {t, "proc.rss_bytes", s.pages * 4096.0 + std::floor(leak_per_step * steps_done / 4096) * 4096});
  }
  return in;
}

// A stored input-bound cell (2026-12-05, this project's 2-core machine: jpeg_dir, one worker,
// 32 measured steps in 1.2 s) read "leaking: host RSS grows 13688 B/step [CI 9286, 17484]": its 12
// samples are glibc's heap growing three times by 128 KiB (32 pages). The troughs rose 384 KiB: not
// a leak. A leak of 256 KiB a step in the same window still is.
TEST(AnalysisTest, AHeapSettlingInAShortWindowIsNotALeak) {
  const std::vector<StoredSample> samples = {{7, 46305},   {107, 46337}, {207, 46337},  {307, 46337},
                                             {407, 46337}, {507, 46337}, {607, 46369},  {707, 46369},
                                             {818, 46401}, {910, 46401}, {1007, 46401}, {1107, 46401}};
  constexpr std::int64_t kStep = 37'700'000;  // 1,207 ms over 32 steps
  const auto a = AnalyzeCell(StoredRss(samples, kStep, 2, 32, 0));
  ExpectTrendAboveTheFloor(a);
  const auto& d = a.info["rss_growth_bytes_per_step"];
  EXPECT_EQ(d["troughs_bytes"], nlohmann::json({46305 * 4096.0, 46337 * 4096.0, 46401 * 4096.0}));
  EXPECT_EQ(d.value("not_a_leak", ""), "the lowest readings rose 0.38 MiB, not more than 2.00 MiB");
  EXPECT_FALSE(d.value("leak", true));
  EXPECT_TRUE(a.verdict_reasons.empty()) << a.verdict_reasons[0];

  const auto leak = AnalyzeCell(StoredRss(samples, kStep, 2, 32, 262144));
  ASSERT_EQ(leak.verdict_reasons.size(), 1u);
  EXPECT_EQ(leak.verdict_reasons[0].rfind("leaking: host RSS grows ", 0), 0u) << leak.verdict_reasons[0];
}

// A stored BERT training cell (2026-12-05, the same machine: 289 measured steps of 13.7 ms, 40
// samples at 10 Hz) read "leaking: host RSS grows 32964 B/step [CI 7179, 55165]". Its RSS swings
// between 201 and 215 MiB with the activations a step holds, and its steps got slower half-way
// ("shifted"), so more samples caught the activations: the mean rose, the troughs did not (201 MiB
// from first to last). Not a leak; 64 KiB a step added to the same samples is one.
TEST(AnalysisTest, ActivationsSampledMoreOftenAreNotALeak) {
  const std::vector<StoredSample> samples = {
      {38, 51376},   {138, 51368},  {238, 51360},  {338, 54356},  {438, 53204},  {538, 51856},  {638, 51360},
      {738, 53464},  {838, 51366},  {938, 53392},  {1038, 51360}, {1138, 54768}, {1238, 53120}, {1338, 54352},
      {1438, 52576}, {1538, 55136}, {1638, 52272}, {1738, 51361}, {1838, 53216}, {1938, 53404}, {2038, 52768},
      {2138, 53766}, {2238, 54224}, {2338, 54932}, {2438, 53276}, {2538, 53888}, {2638, 54676}, {2738, 51344},
      {2840, 55046}, {2938, 52796}, {3038, 53360}, {3138, 54480}, {3238, 55104}, {3338, 54941}, {3438, 54624},
      {3538, 54596}, {3638, 55110}, {3738, 51376}, {3838, 53200}, {3938, 53392}};
  constexpr std::int64_t kStep = 13'727'000;  // 3,967 ms over 289 steps
  const auto a = AnalyzeCell(StoredRss(samples, kStep, 5, 289, 0));
  ExpectTrendAboveTheFloor(a);
  // The lowest of samples 0-12, 13-26 and 27-39.
  EXPECT_EQ(a.info["rss_growth_bytes_per_step"]["troughs_bytes"],
            nlohmann::json({51360 * 4096.0, 51361 * 4096.0, 51344 * 4096.0}));
  EXPECT_TRUE(a.verdict_reasons.empty()) << a.verdict_reasons[0];

  const auto leak = AnalyzeCell(StoredRss(samples, kStep, 5, 289, 65536));
  ASSERT_EQ(leak.verdict_reasons.size(), 1u);
  EXPECT_EQ(leak.verdict_reasons[0].rfind("leaking: host RSS grows ", 0), 0u) << leak.verdict_reasons[0];
}

// 300 measured steps of 50 ms after 10 of warm-up, RSS sampled every 10 steps (30 samples, at
// steps 0, 10, ..., 290 of the window): 800 MiB and rise(k) at step k, in whole pages.
AnalysisInput RisingRss(const std::function<double(double)>& rise) {
  constexpr std::int64_t kStep = 50'000'000;
  AnalysisInput in;
  in.steps = Steps(0, kStep, 310);
  in.window = record::MeasuredWindow{10, 300};
  in.scenario = Scenario::kTrain;
  for (int k = 0; k < 300; k += 10) {
    const double bytes = (800 << 20) + std::floor(rise(k) / 4096) * 4096;
    in.series.push_back({(10 + k) * kStep + 1'000'000, "proc.rss_bytes", bytes});
  }
  return in;
}

// Buffers filling to a high-water mark: 64 MiB approached as 1 - exp(-k / 75). Each third's trough
// is its first sample (the series only rises): steps 0, 100 and 200, 5 s apart. From the first to
// the middle the troughs rise 64 MiB x (1 - e^-4/3) = 47.13 MiB, 9.43 MiB/s; from there to the last
// 64 MiB x (e^-4/3 - e^-8/3) = 12.42 MiB, 2.48 MiB/s, under half the pace: levelling off, not a
// leak, although the slope's interval lies above the floor. The same 62.83 MiB risen at a steady
// pace over the window is a leak.
TEST(AnalysisTest, BuffersFillingToAHighWaterMarkAreNotALeak) {
  auto fill = [](double k) { return 64.0 * (1 << 20) * (1 - std::exp(-k / 75)); };
  const auto a = AnalyzeCell(RisingRss(fill));
  ExpectTrendAboveTheFloor(a);
  const auto& d = a.info["rss_growth_bytes_per_step"];
  auto level = [&](double k) { return (800 << 20) + std::floor(fill(k) / 4096) * 4096; };
  EXPECT_EQ(d["troughs_bytes"], nlohmann::json({level(0), level(100), level(200)}));
  EXPECT_EQ(d.value("not_a_leak", ""),
            "the lowest readings rose 9.43 MiB/s up to the middle third's and 2.48 MiB/s after it: levelling "
            "off");
  EXPECT_TRUE(a.verdict_reasons.empty()) << a.verdict_reasons[0];

  const double total = fill(300);
  const auto steady = AnalyzeCell(RisingRss([&](double k) { return total * k / 300; }));
  ASSERT_EQ(steady.verdict_reasons.size(), 1u);
  EXPECT_EQ(steady.verdict_reasons[0].rfind("leaking: host RSS grows ", 0), 0u) << steady.verdict_reasons[0];
  EXPECT_FALSE(steady.info["rss_growth_bytes_per_step"].contains("not_a_leak"));
}

// Degenerate inputs: a flat series (every pairwise slope 0) is judged and is no leak; the fewest
// samples judged (10: thirds of 3, 4 and 3) still show a steady leak of 1 MiB a step.
TEST(AnalysisTest, AFlatSeriesAndTheFewestSamplesAreJudged) {
  const auto flat = AnalyzeCell(RisingRss([](double) { return 0.0; }));
  const auto& d = flat.info["rss_growth_bytes_per_step"];
  EXPECT_DOUBLE_EQ(Metric(flat, "rss_growth_bytes_per_step"), 0.0);
  EXPECT_EQ(d["troughs_bytes"], nlohmann::json({800.0 * (1 << 20), 800.0 * (1 << 20), 800.0 * (1 << 20)}));
  EXPECT_FALSE(d.value("leak", true));
  EXPECT_FALSE(d.contains("not_a_leak"));
  EXPECT_TRUE(flat.verdict_reasons.empty());

  AnalysisInput ten = RisingRss([](double k) { return k * (1 << 20); });
  ten.series.resize(kLeakMinSamples);
  ten.window.steps = 100;
  const auto a = AnalyzeCell(ten);
  EXPECT_EQ(a.info["rss_growth_bytes_per_step"].value("samples", 0), 10);
  // Troughs at steps 0, 30 and 70 (samples 0-2, 3-6, 7-9).
  EXPECT_EQ(a.info["rss_growth_bytes_per_step"]["troughs_bytes"],
            nlohmann::json({800.0 * (1 << 20), 830.0 * (1 << 20), 870.0 * (1 << 20)}));
  ASSERT_EQ(a.verdict_reasons.size(), 1u);
  EXPECT_DOUBLE_EQ(Metric(a, "rss_growth_bytes_per_step"), 1 << 20);
}

TEST(AnalysisTest, TooFewSamplesGiveNoGrowthEstimate) {
  auto in = BaseInput();
  AddSeries(in.series, "proc.rss_bytes", 2 * kSecond, 12 * kSecond, 2 * kSecond,
            [](std::int64_t t) { return static_cast<double>(t); });
  auto a = AnalyzeCell(in);
  EXPECT_EQ(a.Find("rss_growth_bytes_per_step"), nullptr);
  EXPECT_TRUE(a.info["rss_growth_bytes_per_step"].contains("skipped"));
  EXPECT_DOUBLE_EQ(Metric(a, "proc_rss_peak_bytes"), 12.0 * kSecond);
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
