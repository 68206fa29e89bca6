// The memory growth (leak) test of AnalyzeCell on synthetic and replayed RSS and device memory
// series with hand-computed answers: the slope, its floor, the troughs rule, a whole-run window and
// degenerate inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "monitor/analysis.h"
#include "monitor/analysis_test_util.h"

namespace dlbench::monitor {
namespace {

using namespace analysis_test;  // the helpers the analysis tests share

// What the leak rule's first two conditions call a leak (the trend), before its troughs are looked
// at: a significant trend whose whole
// interval lies above the floor.
void ExpectTrendAboveTheFloor(const CellAnalysis& a) {
  const auto& d = a.info["rss_growth_bytes_per_step"];
  EXPECT_LT(d.value("mann_kendall_p", 1.0), kLeakMaxPValue) << d.dump();
  EXPECT_GT(d.value("ci_low", 0.0), d.value("floor_bytes_per_step", 0.0)) << d.dump();
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

}  // namespace
}  // namespace dlbench::monitor
