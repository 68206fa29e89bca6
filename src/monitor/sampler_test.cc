// The monitor thread: when it samples, what it stamps, how it stops.
#include "monitor/sampler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

namespace dlbench::monitor {
namespace {

// Records the calls it gets; emits one point per round whose value is the round number.
class ScriptedSampler final : public Sampler {
 public:
  explicit ScriptedSampler(SimulatedClock* advance_clock = nullptr) : clock_(advance_clock) {}
  std::string name() const override { return "scripted"; }
  std::string state() const override { return "ok"; }
  void SetTargetPid(pid_t pid) override {
    target_ = pid;
    rounds_since_target_ = 0;
  }
  void Sample(std::int64_t t_ns, std::vector<SeriesPoint>& out) override {
    // A point before SetTargetPid would break the contract; its value says so.
    out.push_back({t_ns, "scripted.round", static_cast<double>(rounds_since_target_++)});
    out.push_back({t_ns, "scripted.target", static_cast<double>(target_)});
    if (clock_ != nullptr) clock_->AdvanceNs(1000);
  }
  nlohmann::json Describe() const override { return {{"answer", 42}}; }

 private:
  SimulatedClock* clock_;
  pid_t target_ = -1;
  int rounds_since_target_ = 0;
};

std::unique_ptr<Monitor> MakeMonitor(const Clock& clock, double interval_ms,
                                     SimulatedClock* advance = nullptr) {
  std::vector<std::unique_ptr<Sampler>> samplers;
  samplers.push_back(std::make_unique<ScriptedSampler>(advance));
  return std::make_unique<Monitor>(std::move(samplers), clock, interval_ms);
}

std::vector<SeriesPoint> Only(const std::vector<SeriesPoint>& points, const std::string& series) {
  std::vector<SeriesPoint> out;
  for (const auto& p : points) {
    if (p.series == series) out.push_back(p);
  }
  return out;
}

TEST(MonitorTest, SamplesAtStartAndAtStopEvenWhenShorterThanOneInterval) {
  SimulatedClock clock(5'000'000'000);
  auto monitor = MakeMonitor(clock, /*interval_ms=*/60'000);
  monitor->Start(4242);
  clock.AdvanceNs(7);
  auto points = monitor->Stop();
  auto rounds = Only(points, "scripted.round");
  // Exactly two rounds: the interval (a minute) never elapsed.
  ASSERT_EQ(rounds.size(), 2u);
  EXPECT_EQ(rounds[0].value, 0);
  EXPECT_EQ(rounds[1].value, 1);
  EXPECT_EQ(rounds[1].t_ns, 5'000'000'007);
  for (const auto& p : Only(points, "scripted.target")) EXPECT_EQ(p.value, 4242);
}

TEST(MonitorTest, StopReturnsPromptlyInsteadOfWaitingOutTheInterval) {
  MonotonicClock clock;
  auto monitor = MakeMonitor(clock, /*interval_ms=*/3'600'000);
  monitor->Start(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto before = std::chrono::steady_clock::now();
  auto points = monitor->Stop();
  double waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
  // An hour-long interval: returning at all within a minute proves the wait was interrupted.
  EXPECT_LT(waited_s, 60.0);
  EXPECT_EQ(Only(points, "scripted.round").size(), 2u);
  EXPECT_FALSE(monitor->running());
}

TEST(MonitorTest, SamplesRepeatedlyAtTheIntervalWithOneStampPerRound) {
  SimulatedClock clock(0);
  auto monitor = MakeMonitor(clock, /*interval_ms=*/1, &clock);
  monitor->Start(7);
  // Wait for rounds by observation, not by a sleep of guessed length.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (clock.NowNs() < 5 * 1000 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  auto points = monitor->Stop();
  auto rounds = Only(points, "scripted.round");
  auto targets = Only(points, "scripted.target");
  ASSERT_GE(rounds.size(), 6u);
  ASSERT_EQ(rounds.size(), targets.size());
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    EXPECT_EQ(rounds[i].value, static_cast<double>(i));
    // Both points of a round carry the round's single stamp; the clock moves between rounds.
    EXPECT_EQ(rounds[i].t_ns, targets[i].t_ns);
    if (i > 0) {
      EXPECT_GT(rounds[i].t_ns, rounds[i - 1].t_ns);
    }
  }
}

TEST(MonitorTest, RestartsCleanAfterStopAndStopWithoutStartIsEmpty) {
  SimulatedClock clock(0);
  auto monitor = MakeMonitor(clock, 60'000);
  EXPECT_TRUE(monitor->Stop().empty());
  monitor->Start(1);
  auto first = monitor->Stop();
  clock.SetNs(1'000'000);
  monitor->Start(2);
  auto second = monitor->Stop();
  auto rounds = Only(second, "scripted.round");
  ASSERT_EQ(rounds.size(), 2u);
  EXPECT_EQ(rounds[0].value, 0);  // SetTargetPid reset the sampler before the first round
  for (const auto& p : second) EXPECT_EQ(p.t_ns, 1'000'000);
  for (const auto& p : Only(second, "scripted.target")) EXPECT_EQ(p.value, 2);
  EXPECT_EQ(first.size(), second.size());
}

// What a sampler saw of its life, kept outside it so it can be read after the monitor is gone.
struct SamplerLife {
  std::mutex mutex;
  int rounds = 0;
  bool destroyed = false;
  bool sampled_after_destroyed = false;
  std::thread::id last_thread;
};

class LifeSampler final : public Sampler {
 public:
  explicit LifeSampler(std::shared_ptr<SamplerLife> life) : life_(std::move(life)) {}
  ~LifeSampler() override {
    std::lock_guard<std::mutex> lock(life_->mutex);
    life_->destroyed = true;
  }
  std::string name() const override { return "life"; }
  std::string state() const override { return "ok"; }
  void SetTargetPid(pid_t) override {}
  void Sample(std::int64_t, std::vector<SeriesPoint>&) override {
    std::lock_guard<std::mutex> lock(life_->mutex);
    if (life_->destroyed) life_->sampled_after_destroyed = true;
    ++life_->rounds;
    life_->last_thread = std::this_thread::get_id();
  }
  nlohmann::json Describe() const override { return nlohmann::json::object(); }

 private:
  std::shared_ptr<SamplerLife> life_;
};

TEST(MonitorTest, DestructorStopsARunningMonitor) {
  SimulatedClock clock(0);
  auto life = std::make_shared<SamplerLife>();
  std::vector<std::unique_ptr<Sampler>> samplers;
  samplers.push_back(std::make_unique<LifeSampler>(life));
  // An hour's interval: no scheduled round can fall between Start and the destructor.
  auto monitor = std::make_unique<Monitor>(std::move(samplers), clock, /*interval_ms=*/3'600'000.0);
  monitor->Start(1);
  monitor.reset();  // must stop the thread (a joinable std::thread would terminate the process)
  std::lock_guard<std::mutex> lock(life->mutex);
  // The round at Start and the final round that only Stop() takes: the destructor stopped it.
  EXPECT_EQ(life->rounds, 2);
  EXPECT_TRUE(life->destroyed);
  EXPECT_FALSE(life->sampled_after_destroyed);
  // Every round ran on the monitor's thread, which the destructor joined.
  EXPECT_NE(life->last_thread, std::this_thread::get_id());
  EXPECT_NE(life->last_thread, std::thread::id());
}

TEST(MonitorTest, DescribeNamesEachSamplerWithItsStateAndFacts) {
  SimulatedClock clock(0);
  auto monitor = MakeMonitor(clock, 100);
  auto d = monitor->Describe();
  ASSERT_TRUE(d.contains("scripted"));
  EXPECT_EQ(d["scripted"]["state"], "ok");
  EXPECT_EQ(d["scripted"]["facts"]["answer"], 42);
}

TEST(MonitorTest, DefaultSamplersIncludeEverySourceWithAState) {
  auto samplers = DefaultSamplers();
  std::set<std::string> names;
  for (const auto& s : samplers) {
    names.insert(s->name());
    const std::string state = s->state();
    EXPECT_TRUE(state == "ok" || state.rfind("unsupported: ", 0) == 0) << s->name() << ": " << state;
  }
  EXPECT_EQ(names, (std::set<std::string>{"nvml", "procfs", "rapl"}));
}

}  // namespace
}  // namespace dlbench::monitor
