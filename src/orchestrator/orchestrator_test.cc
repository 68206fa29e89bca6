// RunCell against the real dlbench-null runner: every way a cell can end becomes its outcome.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "common/clock.h"
#include "orchestrator/cell_metrics.h"
#include "orchestrator/cell_runner.h"

namespace dlbench::orchestrator {
namespace {

class CellRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_dir_ = std::filesystem::temp_directory_path() /
               ("dlbench_orch_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(log_dir_);
    auto runner = ResolveRunner(config::RunnerSpec{"null", {}}, DLBENCH_BIN_DIR);
    ASSERT_TRUE(runner.ok()) << runner.error().message;
    options_.runner = *runner;
    options_.log_dir = log_dir_.string();
    options_.timeout_s = 20;
    options_.measure.min_steps = 20;
    options_.measure.min_time_s = 0.05;
    options_.measure.max_time_s = 2.0;
    options_.measure.target_rel_ci = 0.05;
  }
  void TearDown() override { std::filesystem::remove_all(log_dir_); }

  record::CellRecord Run(nlohmann::json params) {
    plan::Cell cell;
    cell.index = 0;
    cell.id = "c#r0";
    cell.key = "c";
    cell.seed = 42;
    for (auto& [k, v] : params.items()) cell.params[k] = v;
    return RunCell(cell, options_);
  }

  std::filesystem::path log_dir_;
  CellRunOptions options_;
};

TEST_F(CellRunnerTest, HealthyCellIsOkWithStepsMetricsAndVerdict) {
  // Virtual time: the step times are the configured ones whatever the machine's load.
  auto rec = Run({{"step_ms", 0.2}, {"batch_size", 8}, {"virtual_time", true}});
  ASSERT_EQ(rec.outcome, record::Outcome::kOk) << rec.message;
  EXPECT_GE(rec.steps.size(), 20u);
  ASSERT_TRUE(rec.window.has_value());
  EXPECT_FALSE(rec.stop_reason.empty());
  const auto* sps = FindMetric(rec, "samples_per_s");
  ASSERT_NE(sps, nullptr);
  // 8 samples per 0.2 ms step: tens of thousands per second, far from zero or infinity.
  EXPECT_GT(sps->value, 8 / 0.2e-3 / 3);
  EXPECT_LT(sps->value, 8 / 0.2e-3 * 1.1);
  const auto* mean = FindMetric(rec, "step_time_mean_ns");
  ASSERT_NE(mean, nullptr);
  EXPECT_GE(mean->value, 0.2e6);
  EXPECT_EQ(rec.hello["runner"], "null");
  EXPECT_EQ(rec.effective["samples_per_step"], 8);
  EXPECT_NE(rec.verdict, record::Verdict::kNotApplicable);
}

TEST_F(CellRunnerTest, TimelineSplitsTheCellsWallTime) {
  // The null runner busy-waits setup_ms between CONFIGURE and READY: that is setup_s.
  auto rec = Run({{"step_ms", 0.2}, {"setup_ms", 300}});
  ASSERT_EQ(rec.outcome, record::Outcome::kOk) << rec.message;
  auto value = [&](const char* name) {
    const auto* m = FindMetric(rec, name);
    EXPECT_NE(m, nullptr) << name;
    return m != nullptr ? m->value : -1.0;
  };
  const double hello = value("time_to_hello_s"), setup = value("setup_s"), warmup = value("warmup_s"),
               to_measure = value("time_to_measure_s"), wall = value("cell_wall_s");
  EXPECT_GT(hello, 0.0);
  EXPECT_GE(setup, 0.3);
  EXPECT_GE(warmup, 0.0);
  EXPECT_NEAR(to_measure, hello + setup + warmup, 1e-6);  // consecutive spans
  EXPECT_GT(wall, to_measure);
}

TEST(CellMetricsTest, TimelineMetricsFromHandPlacedMoments) {
  record::CellRecord rec;
  // Rank 0 steps start at 10, 11, 12, 13 s; rank 1's must be ignored.
  for (int i = 0; i < 4; ++i) {
    record::StepRow row;
    row.record.start_ns = (10 + i) * 1'000'000'000LL;
    row.record.end_ns = row.record.start_ns + 900'000'000LL;
    rec.steps.push_back(row);
    row.rank = 1;
    row.record.start_ns = 1;
    rec.steps.push_back(row);
  }
  CellTimeline t{1'000'000'000LL, 3'000'000'000LL, 7'500'000'000LL, 15'000'000'000LL};
  AddTimelineMetrics(t, /*warmup_steps=*/2, rec);
  EXPECT_DOUBLE_EQ(FindMetric(rec, "time_to_hello_s")->value, 2.0);
  EXPECT_DOUBLE_EQ(FindMetric(rec, "setup_s")->value, 7.0);   // HELLO at 3 s to the first step at 10 s
  EXPECT_DOUBLE_EQ(FindMetric(rec, "warmup_s")->value, 2.0);  // 12 s - 10 s
  EXPECT_DOUBLE_EQ(FindMetric(rec, "time_to_measure_s")->value, 11.0);
  EXPECT_DOUBLE_EQ(FindMetric(rec, "cell_wall_s")->value, 14.0);

  // Every step is warm-up: no measured start, so neither warm-up nor time to measure.
  record::CellRecord all_warmup = rec;
  all_warmup.metrics.clear();
  AddTimelineMetrics(t, 4, all_warmup);
  EXPECT_EQ(FindMetric(all_warmup, "warmup_s"), nullptr);
  EXPECT_EQ(FindMetric(all_warmup, "time_to_measure_s"), nullptr);
  EXPECT_NE(FindMetric(all_warmup, "cell_wall_s"), nullptr);

  // No steps at all: setup ends at READY.
  record::CellRecord no_steps;
  AddTimelineMetrics(t, 0, no_steps);
  EXPECT_DOUBLE_EQ(FindMetric(no_steps, "setup_s")->value, 4.5);
  EXPECT_EQ(FindMetric(no_steps, "warmup_s"), nullptr);

  // A runner that never said HELLO: no hello or setup figures.
  record::CellRecord silent;
  AddTimelineMetrics(CellTimeline{1, 0, 0, 5}, 0, silent);
  EXPECT_EQ(FindMetric(silent, "time_to_hello_s"), nullptr);
  EXPECT_EQ(FindMetric(silent, "setup_s"), nullptr);
}

TEST_F(CellRunnerTest, CrashIsReportedWithTheSignalName) {
  auto rec = Run({{"step_ms", 0.1}, {"inject", "crash"}, {"inject_at_step", 5}});
  EXPECT_EQ(rec.outcome, record::Outcome::kCrashed);
  EXPECT_NE(rec.message.find("SIGSEGV"), std::string::npos) << rec.message;
  EXPECT_NE(rec.message.find("crashing on purpose"), std::string::npos)
      << "stderr tail missing: " << rec.message;
}

TEST_F(CellRunnerTest, NonZeroExitIsAnErrorWithTheCodeAndStderr) {
  auto rec = Run({{"step_ms", 0.1}, {"inject", "exit"}, {"inject_at_step", 3}, {"exit_code", 7}});
  EXPECT_EQ(rec.outcome, record::Outcome::kError);
  EXPECT_NE(rec.message.find("exit code 7"), std::string::npos) << rec.message;
}

TEST_F(CellRunnerTest, HangIsKilledAtTheTimeoutWithItsGroup) {
  options_.timeout_s = 1.0;
  const auto t0 = MonotonicNowNs();
  auto rec = Run({{"step_ms", 0.1}, {"inject", "hang"}, {"inject_at_step", 3}});
  EXPECT_EQ(rec.outcome, record::Outcome::kTimeout) << rec.message;
  EXPECT_LT(NsToSeconds(MonotonicNowNs() - t0), 10.0);
}

TEST_F(CellRunnerTest, GarbageOnThePipeIsAProtocolViolation) {
  auto rec = Run({{"step_ms", 0.1}, {"inject", "garbage"}, {"inject_at_step", 3}});
  EXPECT_EQ(rec.outcome, record::Outcome::kInvalid);
  EXPECT_NE(rec.message.find("protocol violation"), std::string::npos) << rec.message;
}

TEST_F(CellRunnerTest, ReportedOomIsOom) {
  auto rec = Run({{"step_ms", 0.1}, {"inject", "oom"}, {"inject_at_step", 3}});
  EXPECT_EQ(rec.outcome, record::Outcome::kOom);
  EXPECT_EQ(rec.extras.value("oom_requested_bytes", 0LL), 80LL << 30);
}

TEST_F(CellRunnerTest, BadParameterIsAnErrorNamingIt) {
  auto rec = Run({{"inject", "explode"}});
  EXPECT_EQ(rec.outcome, record::Outcome::kError);
  EXPECT_NE(rec.message.find("explode"), std::string::npos) << rec.message;
}

TEST_F(CellRunnerTest, TooLittleDataIsInvalid) {
  options_.measure.min_steps = 1000;
  options_.measure.max_time_s = 0.2;
  auto rec = Run({{"step_ms", 2.0}});
  EXPECT_EQ(rec.outcome, record::Outcome::kInvalid);
  EXPECT_NE(rec.message.find("too little data"), std::string::npos) << rec.message;
}

TEST_F(CellRunnerTest, InterruptStopsTheCell) {
  std::atomic<int> pressed{1};
  options_.interrupts = &pressed;
  auto rec = Run({{"step_ms", 0.5}});
  EXPECT_EQ(rec.outcome, record::Outcome::kInterrupted);
}

// Presses Ctrl-C `times` times, `after_ms` apart, while the cell runs.
class Presser {
 public:
  Presser(std::atomic<int>& pressed, int times, int after_ms)
      : thread_([&pressed, times, after_ms] {
          for (int i = 0; i < times; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
            pressed.fetch_add(1);
          }
        }) {}
  ~Presser() { thread_.join(); }

 private:
  std::thread thread_;
};

// A runner that ignores STOP and SIGTERM: the first Ctrl-C still ends the cell within the
// interrupt grace (2 s: STOP, SIGTERM at 1 s, SIGKILL at 2 s), not after the 10 s STOP grace
// and more (13 s before).
TEST_F(CellRunnerTest, CtrlCEndsAHungRunnerWithinTheInterruptGrace) {
  std::atomic<int> pressed{0};
  options_.interrupts = &pressed;
  options_.timeout_s = 60;
  record::CellRecord rec;
  std::int64_t pressed_ns = 0;
  {
    Presser presser(pressed, 1, 300);
    const auto t0 = MonotonicNowNs();
    rec = Run({{"step_ms", 0.1}, {"inject", "hang_after_stop"}, {"virtual_time", true}});
    pressed_ns = MonotonicNowNs() - t0;
  }
  EXPECT_EQ(rec.outcome, record::Outcome::kInterrupted) << rec.message;
  EXPECT_EQ(rec.message, "stopped by Ctrl-C");
  EXPECT_LT(NsToSeconds(pressed_ns), 8.0) << "the interrupt grace is 2 s";
}

// The second Ctrl-C does not wait for any grace: with a grace of 60 s, only it can end the cell.
TEST_F(CellRunnerTest, ASecondCtrlCKillsAtOnce) {
  std::atomic<int> pressed{0};
  options_.interrupts = &pressed;
  options_.timeout_s = 120;
  options_.interrupt_grace_s = 60;
  record::CellRecord rec;
  std::int64_t took_ns = 0;
  {
    Presser presser(pressed, 2, 300);
    const auto t0 = MonotonicNowNs();
    rec = Run({{"step_ms", 0.1}, {"inject", "hang"}, {"inject_at_step", 3}});
    took_ns = MonotonicNowNs() - t0;
  }
  EXPECT_EQ(rec.outcome, record::Outcome::kInterrupted) << rec.message;
  EXPECT_EQ(rec.message, "stopped by a second Ctrl-C (its process group was killed at once)");
  EXPECT_LT(NsToSeconds(took_ns), 30.0)
      << "half the grace, when SIGTERM would go out: the second press did it";
}

TEST_F(CellRunnerTest, MissingRunnerIsNamed) {
  auto runner = ResolveRunner(config::RunnerSpec{"nosuch", {}}, DLBENCH_BIN_DIR);
  ASSERT_FALSE(runner.ok());
  EXPECT_NE(runner.error().message.find("dlbench-nosuch"), std::string::npos);
}

TEST_F(CellRunnerTest, ProbeReadsHello) {
  auto hello = ProbeRunner(options_.runner, 10);
  ASSERT_TRUE(hello.ok()) << hello.error().message;
  EXPECT_EQ((*hello)["runner"], "null");
  EXPECT_EQ((*hello)["protocol"], 1);
}

TEST(CellMetricsTest, NoisyCellIsInvalidAndNamesTheTarget) {
  measure::Outcome m;
  m.summary.ci_rel_halfwidth = 0.08;
  m.stop_reason = "max_time";
  config::MeasureSettings s;
  s.target_rel_ci = 0.02;
  record::CellRecord rec;
  m.summary.window_s = 2.0;
  ApplyVerdict(m, s, rec);
  EXPECT_EQ(rec.verdict, record::Verdict::kNoisy);
  ASSERT_EQ(rec.verdict_reasons.size(), 1u);
  EXPECT_NE(rec.verdict_reasons[0].get<std::string>().find("8.00%"), std::string::npos);
  // The advice: (8% / 2%)^2 x 2 s of measurement would reach the target.
  EXPECT_NE(rec.verdict_reasons[0].get<std::string>().find("about 32 s"), std::string::npos)
      << rec.verdict_reasons[0];
  m.summary.ci_rel_halfwidth = 0.01;
  record::CellRecord ok;
  ApplyVerdict(m, s, ok);
  EXPECT_EQ(ok.verdict, record::Verdict::kValid);
}

TEST(CellMetricsTest, TooFewStepsIsTooShortWithTheTimeThatWouldDo) {
  measure::Outcome m;
  m.summary.steps = 8;
  m.summary.window_s = 2.0;  // 0.25 s a step: 20 steps x 1.25 margin -> 6.25 s, +1 s -> 8 s
  m.summary.ci_rel_halfwidth = NAN;
  config::MeasureSettings s;
  record::CellRecord rec;
  ApplyVerdict(m, s, rec);
  EXPECT_EQ(rec.verdict, record::Verdict::kTooShort);
  ASSERT_EQ(rec.verdict_reasons.size(), 1u);
  const std::string reason = rec.verdict_reasons[0].get<std::string>();
  EXPECT_EQ(reason.rfind("too_short: 8 measured steps; a confidence interval needs 20", 0), 0u) << reason;
  EXPECT_NE(reason.find("raise max_time_s to about 8 s"), std::string::npos) << reason;
}

// The measured window's stability decides drifting/shifted, and its figures are kept; a monitor
// reason (contended) outranks them as the cause.
TEST(CellMetricsTest, ADriftingWindowIsDriftingAndContentionComesFirst) {
  record::CellRecord rec;
  std::int64_t t = 5'000'000'000;
  for (int i = 0; i < 400; ++i) {
    const auto d = static_cast<std::int64_t>(10'000'000 * (1.0 + 0.4 * i / 400.0));  // +40% over the window
    rec.steps.push_back({0, record::StepRecord{t, t + d, 0, 0, 0, 1, 0}});
    t += d;
  }
  rec.window = record::MeasuredWindow{0, 400};
  measure::Outcome m;
  m.summary.steps = 400;
  m.summary.window_s = 4.8;
  m.summary.ci_rel_halfwidth = 0.01;
  config::MeasureSettings s;
  ApplyVerdict(m, s, rec);
  EXPECT_EQ(rec.verdict, record::Verdict::kDrifting) << rec.verdict_reasons.dump();
  ASSERT_EQ(rec.verdict_reasons.size(), 1u);
  const std::string reason = rec.verdict_reasons[0].get<std::string>();
  EXPECT_EQ(reason.rfind("drifting: step time moved +", 0), 0u) << reason;
  EXPECT_NE(reason.find("no clock, power or host-load change explains it"), std::string::npos) << reason;
  EXPECT_TRUE(rec.extras["stability"].contains("slope_rel_per_s"));

  record::CellRecord contended = rec;
  contended.verdict_reasons =
      nlohmann::json::array({"contended: 1.30 CPU cores were busy outside the runner"});
  ApplyVerdict(m, s, contended);
  EXPECT_EQ(contended.verdict, record::Verdict::kContended);
  EXPECT_EQ(contended.verdict_reasons.size(), 2u);
}

TEST(CellMetricsTest, ExtrasAndMemoryBecomeMetrics) {
  record::CellRecord rec;
  AbsorbExtras({{"metrics",
                 {{{"name", "flops_per_sample"}, {"value", 1e9}, {"unit", "FLOP"}},
                  {{"name", "peak_flops_per_s"}, {"value", 1e12}, {"unit", "FLOP/s"}}}},
                {"info", {{"threads", 2}}}},
               rec);
  rec.extras["memory"].push_back({{"label", "end"}, {"device_allocated_peak_bytes", 1024}});
  rec.extras["memory"].push_back({{"label", "after_warmup"}, {"host_rss_bytes", 2048}});
  measure::Outcome m;
  m.summary.steps = 10;
  m.summary.samples_per_s = 100;
  AddStepMetrics(m, rec);
  ASSERT_NE(FindMetric(rec, "achieved_flops_per_s"), nullptr);
  EXPECT_DOUBLE_EQ(FindMetric(rec, "achieved_flops_per_s")->value, 1e11);
  EXPECT_DOUBLE_EQ(FindMetric(rec, "mfu_ratio")->value, 0.1);
  EXPECT_DOUBLE_EQ(FindMetric(rec, "device_allocated_peak_bytes")->value, 1024);
  EXPECT_DOUBLE_EQ(FindMetric(rec, "after_warmup_host_rss_bytes")->value, 2048);
  EXPECT_EQ(rec.extras["info"]["threads"], 2);
  EXPECT_FALSE(rec.extras.contains("undeclared_metrics"));
  EXPECT_FALSE(rec.extras.contains("warnings")) << rec.extras.dump();
}

// The MFU bug: a producer's spelling nobody reads must show up, not vanish. Only declared runner
// metrics in their declared unit are stored; anything else is kept aside with one warning each.
TEST(CellMetricsTest, UndeclaredOrForeignRunnerMetricsAreKeptAsideWithAWarning) {
  record::CellRecord rec;
  const nlohmann::json extras = {
      {"metrics",
       {{{"name", "device_peak_flops_per_s"}, {"value", 1e12}, {"unit", "FLOP/s"}},  // undeclared
        {{"name", "samples_per_s"}, {"value", 5.0}, {"unit", "1/s"}},                // dlbench computes it
        {{"name", "compile_time_s"}, {"value", 3.0}, {"unit", "ms"}},                // wrong unit
        {{"name", "compile_time_s"}, {"value", 3.0}},                                // no unit: declared one
        {{"name", 7}, {"value", 1.0}},                                               // wrong type: ignored
        {{"name", "flops_per_sample"}, {"value", "many"}}}}};                        // wrong type: ignored
  AbsorbExtras(extras, rec);
  AbsorbExtras(extras, rec);  // twice: the warnings are not repeated
  ASSERT_EQ(rec.metrics.size(), 1u);
  EXPECT_EQ(rec.metrics[0].name, "compile_time_s");
  EXPECT_EQ(rec.metrics[0].unit, "s");
  ASSERT_TRUE(rec.extras["undeclared_metrics"].is_array());
  EXPECT_EQ(rec.extras["undeclared_metrics"].size(), 6u);
  ASSERT_EQ(rec.extras["warnings"].size(), 3u) << rec.extras["warnings"].dump();
  EXPECT_NE(rec.extras["warnings"][0].get<std::string>().find("'device_peak_flops_per_s'"),
            std::string::npos);
  EXPECT_NE(rec.extras["warnings"][1].get<std::string>().find("orchestrator computes it"), std::string::npos);
  EXPECT_NE(rec.extras["warnings"][2].get<std::string>().find("not the declared 's'"), std::string::npos);
  // Without the declared peak there is no MFU: the stored figures say so by its absence.
  measure::Outcome m;
  m.summary.steps = 10;
  m.summary.samples_per_s = 100;
  AddStepMetrics(m, rec);
  EXPECT_EQ(FindMetric(rec, "mfu_ratio"), nullptr);
  EXPECT_EQ(rec.window, (record::MeasuredWindow{0, 10}));
}

TEST(CellMetricsTest, MemoryFieldsOutsideTheDataModelAreNotMetrics) {
  record::CellRecord rec;
  rec.extras["memory"].push_back({{"label", "end"}, {"device_free_bytes", 7}, {"host_rss_bytes", 8}});
  rec.extras["memory"].push_back({{"label", 7}, {"host_rss_bytes", 9}});  // a label of the wrong type: "end"
  measure::Outcome m;
  AddStepMetrics(m, rec);
  EXPECT_EQ(FindMetric(rec, "device_free_bytes"), nullptr);
  ASSERT_NE(FindMetric(rec, "host_rss_bytes"), nullptr);
  EXPECT_DOUBLE_EQ(FindMetric(rec, "host_rss_bytes")->value, 9);
  ASSERT_EQ(rec.extras["warnings"].size(), 1u);
}

}  // namespace
}  // namespace dlbench::orchestrator
