// The scenarios in simulated time: a synchronous system under test "takes" its service time by
// advancing the SimulatedLoadClock inside IssueQuery, so every timestamp is exact and the expected
// records are computed independently (for the server, by Lindley's recursion of a one-server
// queue: latency counts from the scheduled arrival, so queueing shows).
#include "load/load_generator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "load/peak_search.h"

namespace dlbench::load {
namespace {

constexpr std::int64_t kStart = 1'200'000'000'000;  // a large offset, as CLOCK_MONOTONIC has

class Library final : public QuerySampleLibrary {
 public:
  explicit Library(std::uint32_t n) : n_(n) {}
  std::uint32_t SampleCount() const override { return n_; }

 private:
  std::uint32_t n_;
};

class RecordingSink final : public QueryRecordSink {
 public:
  explicit RecordingSink(std::size_t stop_after = SIZE_MAX) : stop_after_(stop_after) {}
  void Write(const record::QueryRecord* records, std::size_t count) override {
    std::lock_guard<std::mutex> lock(mutex_);
    records_.insert(records_.end(), records, records + count);
  }
  bool StopRequested() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return records_.size() >= stop_after_;
  }
  std::vector<record::QueryRecord> records() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return records_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<record::QueryRecord> records_;
  std::size_t stop_after_;
};

// Serves each query on the issue thread: advances the clock by service(query) and completes it,
// in parts of `part_samples` for queries with more samples (offline).
class SyncSut final : public SystemUnderTest {
 public:
  SyncSut(SimulatedLoadClock& clock, std::function<std::int64_t(const Query&)> service,
          std::uint32_t part_samples = UINT32_MAX)
      : clock_(clock), service_(std::move(service)), part_samples_(part_samples) {}
  void IssueQuery(const Query& query, QueryCompleter& completer) override {
    queries.push_back(query);
    if (query.samples <= part_samples_) {
      const std::int64_t t = service_(query);
      clock_.AdvanceNs(t);
      QueryTiming timing;
      timing.compute_ns = t;
      timing.present = record::kQueryHasCompute;
      timing.batch_samples = query.samples;
      completer.Complete(query.id, timing);
      return;
    }
    for (std::uint32_t done = 0; done < query.samples; done += part_samples_) {
      const std::uint32_t n = std::min(part_samples_, query.samples - done);
      const std::int64_t t = service_(query);
      clock_.AdvanceNs(t);
      QueryTiming timing;
      timing.compute_ns = t;
      timing.present = record::kQueryHasCompute;
      timing.batch_samples = n;
      completer.CompleteSamples(query.id, n, timing);
    }
  }
  void FlushQueries() override { ++flushes; }
  std::vector<Query> queries;
  int flushes = 0;

 private:
  SimulatedLoadClock& clock_;
  std::function<std::int64_t(const Query&)> service_;
  std::uint32_t part_samples_;
};

EffectiveLoadSettings Settings(Scenario scenario) {
  EffectiveLoadSettings s;
  s.scenario = scenario;
  s.target_qps = 1000;
  s.samples_per_query = scenario == Scenario::kMultiStream ? 8 : 1;
  s.schedule_seed = 99;
  s.sample_seed = 7;
  return s;
}

RunLimits MaxQueries(std::uint64_t n) {
  RunLimits l;
  l.max_queries = n;
  return l;
}

void ExpectIdsInOrder(const std::vector<record::QueryRecord>& records, std::uint64_t first, std::size_t n) {
  ASSERT_EQ(records.size(), n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(records[i].query_id, first + i) << i;
}

TEST(LoadGeneratorTest, SingleStreamIssuesOnCompletionAndTimesFromIssue) {
  SimulatedLoadClock clock(kStart);
  LoadGenerator gen(Settings(Scenario::kSingleStream), clock);
  SyncSut sut(clock, [](const Query&) { return 2'000'000; });
  RecordingSink sink;
  const RunResult r = gen.Run(sut, Library(16), sink, MaxQueries(100));
  EXPECT_EQ(r.end, RunEnd::kMaxQueries);
  EXPECT_EQ(r.issued, 100u);
  EXPECT_EQ(r.completed, 100u);
  EXPECT_EQ(sut.flushes, 1);
  const auto records = sink.records();
  ExpectIdsInOrder(records, 0, 100);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const record::QueryRecord& q = records[i];
    EXPECT_EQ(q.scheduled_ns, q.issued_ns);
    EXPECT_EQ(q.completed_ns - q.scheduled_ns, 2'000'000);
    EXPECT_EQ(q.issued_ns, kStart + static_cast<std::int64_t>(i) * 2'000'000);
    EXPECT_EQ(q.samples, 1u);
    EXPECT_EQ(q.compute_ns, 2'000'000);
    EXPECT_EQ(q.present, record::kQueryHasCompute);
    if (i > 0) {
      EXPECT_EQ(q.issued_ns, records[i - 1].completed_ns);  // the next goes at completion
    }
    EXPECT_LT(sut.queries[i].first_sample, 16u);
  }
}

TEST(LoadGeneratorTest, ServerLatencyCountsFromTheScheduledArrival) {
  SimulatedLoadClock clock(kStart);
  const EffectiveLoadSettings settings = Settings(Scenario::kServer);
  LoadGenerator gen(settings, clock);
  constexpr std::int64_t kService = 800'000;  // 0.8 ms at 1000/s: utilisation 0.8, so queues form
  SyncSut sut(clock, [](const Query&) { return kService; });
  RecordingSink sink;
  const RunResult r = gen.Run(sut, Library(16), sink, MaxQueries(2000));
  ASSERT_EQ(r.end, RunEnd::kMaxQueries);
  const auto records = sink.records();
  ExpectIdsInOrder(records, 0, 2000);

  // The same schedule, replayed; a synchronous server is a one-server FIFO queue.
  QuerySchedule schedule(settings, 16);
  std::int64_t free_at = kStart;
  int queued = 0;
  for (const record::QueryRecord& q : records) {
    const std::int64_t arrival = kStart + schedule.Next().offset_ns;
    const std::int64_t start = std::max(arrival, free_at);
    free_at = start + kService;
    ASSERT_EQ(q.scheduled_ns, arrival) << q.query_id;
    ASSERT_EQ(q.issued_ns, start) << q.query_id;
    ASSERT_EQ(q.completed_ns, free_at) << q.query_id;
    if (q.completed_ns - q.scheduled_ns > kService) ++queued;
  }
  EXPECT_GT(queued, 100);  // queueing delay is in the latency, not hidden
}

TEST(LoadGeneratorTest, MultiStreamAtAFixedIntervalCountsLatenessWhenServiceIsLonger) {
  for (const std::int64_t service : {4'000'000LL, 15'000'000LL}) {
    SimulatedLoadClock clock(kStart);
    EffectiveLoadSettings s = Settings(Scenario::kMultiStream);
    s.query_interval_ns = 10'000'000;
    LoadGenerator gen(s, clock);
    SyncSut sut(clock, [service](const Query&) { return service; });
    RecordingSink sink;
    gen.Run(sut, Library(64), sink, MaxQueries(20));
    const auto records = sink.records();
    ExpectIdsInOrder(records, 0, 20);
    std::int64_t prev_done = kStart;
    for (std::size_t i = 0; i < records.size(); ++i) {
      const record::QueryRecord& q = records[i];
      EXPECT_EQ(q.samples, 8u);
      EXPECT_EQ(q.scheduled_ns, kStart + static_cast<std::int64_t>(i) * 10'000'000);
      EXPECT_EQ(q.issued_ns, std::max(q.scheduled_ns, prev_done));
      EXPECT_EQ(q.completed_ns, q.issued_ns + service);
      prev_done = q.completed_ns;
      // Eight contiguous samples from the drawn first one, wrapping at the library's end.
      EXPECT_EQ(sut.queries[i].SampleIndex(7), (sut.queries[i].first_sample + 7) % 64);
    }
  }
}

TEST(LoadGeneratorTest, MultiStreamOnCompletionIsClosedLoop) {
  SimulatedLoadClock clock(kStart);
  LoadGenerator gen(Settings(Scenario::kMultiStream), clock);
  SyncSut sut(clock, [](const Query&) { return 3'000'000; });
  RecordingSink sink;
  gen.Run(sut, Library(64), sink, MaxQueries(10));
  const auto records = sink.records();
  ExpectIdsInOrder(records, 0, 10);
  for (std::size_t i = 1; i < records.size(); ++i) {
    EXPECT_EQ(records[i].scheduled_ns, records[i - 1].completed_ns);
    EXPECT_EQ(records[i].completed_ns - records[i].scheduled_ns, 3'000'000);
  }
}

TEST(LoadGeneratorTest, OfflineQueryCompletesWithItsLastPart) {
  SimulatedLoadClock clock(kStart);
  EffectiveLoadSettings s = Settings(Scenario::kOffline);
  s.samples_per_query = 100;
  LoadGenerator gen(s, clock);
  SyncSut sut(
      clock, [](const Query&) { return 1'000'000; }, /*part_samples=*/32);
  RecordingSink sink;
  gen.Run(sut, Library(64), sink, MaxQueries(3));
  const auto records = sink.records();
  ExpectIdsInOrder(records, 0, 3);
  for (const record::QueryRecord& q : records) {
    EXPECT_EQ(q.samples, 100u);
    EXPECT_EQ(q.completed_ns - q.scheduled_ns, 4'000'000);  // parts of 32, 32, 32, 4 samples
    EXPECT_EQ(q.compute_ns, 4'000'000);                     // the parts' timings are summed
    EXPECT_EQ(q.batch_samples, 32u);
  }
  EXPECT_EQ(sut.queries[1].first_sample, 36u);  // offline walks the library in order
}

TEST(LoadGeneratorTest, MaxDurationEndsAClosedLoopRun) {
  SimulatedLoadClock clock(kStart);
  LoadGenerator gen(Settings(Scenario::kSingleStream), clock);
  SyncSut sut(clock, [](const Query&) { return 1'000'000; });
  RecordingSink sink;
  RunLimits limits;
  limits.max_duration_ns = 100'000'000;
  const RunResult r = gen.Run(sut, Library(4), sink, limits);
  EXPECT_EQ(r.end, RunEnd::kMaxDuration);
  EXPECT_EQ(r.issued, 100u);  // issued at 0, 1, ..., 99 ms
  EXPECT_EQ(sink.records().size(), 100u);
}

TEST(LoadGeneratorTest, RecordsArriveInIdOrderWhenCompletionsDoNot) {
  // Holds each even query and completes it after the following odd one.
  class Swapping final : public SystemUnderTest {
   public:
    void IssueQuery(const Query& q, QueryCompleter& c) override {
      if (q.id % 2 == 0) {
        held_ = q.id;
        return;
      }
      c.Complete(q.id, {});
      c.Complete(held_, {});
    }
    void FlushQueries() override {}

   private:
    std::uint64_t held_ = 0;
  };
  SimulatedLoadClock clock(kStart);
  LoadGenerator gen(Settings(Scenario::kServer), clock);
  Swapping sut;
  RecordingSink sink;
  const RunResult r = gen.Run(sut, Library(4), sink, MaxQueries(5000));
  EXPECT_EQ(r.end, RunEnd::kMaxQueries);
  const auto records = sink.records();
  ExpectIdsInOrder(records, 0, 5000);
  for (std::size_t i = 0; i + 1 < records.size(); i += 2) {
    EXPECT_EQ(records[i].completed_ns, records[i + 1].completed_ns);
  }
}

TEST(LoadGeneratorTest, DuplicateAndUnknownCompletionsEndTheRunNamingTheQuery) {
  struct Faulty final : SystemUnderTest {
    std::uint64_t bad_at = 0;
    bool unknown = false;
    void IssueQuery(const Query& q, QueryCompleter& c) override {
      c.Complete(q.id, {});
      if (q.id == bad_at) c.Complete(unknown ? q.id + 1000 : q.id, {});
    }
    void FlushQueries() override {}
  };
  for (const bool unknown : {false, true}) {
    SimulatedLoadClock clock(kStart);
    LoadGenerator gen(Settings(Scenario::kSingleStream), clock);
    Faulty sut;
    sut.bad_at = 3;
    sut.unknown = unknown;
    RecordingSink sink;
    const RunResult r = gen.Run(sut, Library(4), sink, MaxQueries(100));
    EXPECT_EQ(r.end, RunEnd::kCompletionError);
    EXPECT_NE(r.error.find(unknown ? "query 1003, which was never issued" : "query 3 twice"),
              std::string::npos)
        << r.error;
    EXPECT_EQ(r.issued, 4u);
    ExpectIdsInOrder(sink.records(), 0, 4);  // each completed query still reported once
  }
}

TEST(LoadGeneratorTest, TooManySamplesInPartsIsAnError) {
  struct Over final : SystemUnderTest {
    void IssueQuery(const Query& q, QueryCompleter& c) override {
      c.CompleteSamples(q.id, q.samples - 1, {});
      c.CompleteSamples(q.id, 2, {});  // one more than is left
    }
    void FlushQueries() override {}
  };
  SimulatedLoadClock clock(kStart);
  EffectiveLoadSettings s = Settings(Scenario::kOffline);
  s.samples_per_query = 10;
  LoadGenerator gen(s, clock);
  Over sut;
  RecordingSink sink;
  RunLimits limits = MaxQueries(5);
  limits.drain_timeout_ns = 1'000'000;
  const RunResult r = gen.Run(sut, Library(4), sink, limits);
  EXPECT_EQ(r.end, RunEnd::kCompletionError);
  EXPECT_NE(r.error.find("query 0"), std::string::npos);
  EXPECT_TRUE(sink.records().empty());
}

TEST(LoadGeneratorTest, AServerThatFallsBehindEndsEarly) {
  struct BlackHole final : SystemUnderTest {
    void IssueQuery(const Query&, QueryCompleter&) override {}
    void FlushQueries() override {}
  };
  SimulatedLoadClock clock(kStart);
  EffectiveLoadSettings s = Settings(Scenario::kServer);
  s.max_outstanding = 8;
  LoadGenerator gen(s, clock);
  BlackHole sut;
  RecordingSink sink;
  RunLimits limits = MaxQueries(1000);
  limits.drain_timeout_ns = 1'000'000;
  const RunResult r = gen.Run(sut, Library(4), sink, limits);
  EXPECT_EQ(r.end, RunEnd::kTooManyOutstanding);
  EXPECT_EQ(r.issued, 8u);
  EXPECT_EQ(r.completed, 0u);
  EXPECT_NE(r.error.find("too many outstanding queries: 8"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("query 0 was issued and never completed"), std::string::npos) << r.error;
}

TEST(LoadGeneratorTest, AHungQueryIsADrainTimeout) {
  struct HangsOnTwo final : SystemUnderTest {
    void IssueQuery(const Query& q, QueryCompleter& c) override {
      if (q.id != 2) c.Complete(q.id, {});
    }
    void FlushQueries() override {}
  };
  SimulatedLoadClock clock(kStart);
  LoadGenerator gen(Settings(Scenario::kServer), clock);
  HangsOnTwo sut;
  RecordingSink sink;
  RunLimits limits = MaxQueries(10);
  limits.drain_timeout_ns = 1'000'000;
  const RunResult r = gen.Run(sut, Library(4), sink, limits);
  EXPECT_EQ(r.end, RunEnd::kDrainTimeout);
  EXPECT_EQ(r.completed, 9u);
  EXPECT_NE(r.error.find("query 2 was issued and never completed (1 outstanding"), std::string::npos)
      << r.error;
  ExpectIdsInOrder(sink.records(), 0, 2);  // the records after the gap are held back
}

// A server far behind its schedule when STOP comes: its queue would take longer to serve than the
// orchestrator's grace after STOP. The drain waits stop_drain_timeout_ns, then the system drops
// what it has not started; the run ends dropped_after_stop with those queries outstanding (the
// last ones issued), not after the 10 s drain.
TEST(LoadGeneratorTest, AfterStopTheQueueIsDroppedAndTheRunEndsWithinTheStopDrain) {
  struct Backlog final : SystemUnderTest {
    void IssueQuery(const Query& q, QueryCompleter& c) override {
      if (q.id < 5) {
        c.Complete(q.id, {});
      } else {
        ++queued;
      }
    }
    void FlushQueries() override {}
    std::uint64_t DropQueued() override {
      ++drops;
      return std::exchange(queued, 0);
    }
    std::uint64_t queued = 0;
    int drops = 0;
  };
  SimulatedLoadClock clock(kStart);
  LoadGenerator gen(Settings(Scenario::kServer), clock);
  Backlog sut;
  RecordingSink sink(/*stop_after=*/5);
  RunLimits limits = MaxQueries(50);
  limits.stop_drain_timeout_ns = 20'000'000;  // the 10 s drain_timeout_ns stays
  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r = gen.Run(sut, Library(4), sink, limits);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.end, RunEnd::kDroppedAfterStop) << r.error;
  EXPECT_EQ(DoneReason(r.end), std::optional<std::string>("dropped_after_stop"));
  EXPECT_EQ(sut.drops, 1);
  EXPECT_EQ(r.completed, 5u);
  EXPECT_NE(r.error.find("dropped by the system under test before they ran"), std::string::npos) << r.error;
  EXPECT_LT(seconds, 5.0) << "the drain ran to its 10 s limit instead of the stop drain";
  ExpectIdsInOrder(sink.records(), 0, 5);
}

// Without STOP a hung query is still a drain timeout, reported as an error (no DONE reason).
TEST(LoadGeneratorTest, ADrainTimeoutWithoutStopHasNoDoneReason) {
  EXPECT_FALSE(DoneReason(RunEnd::kDrainTimeout).has_value());
  EXPECT_EQ(DoneReason(RunEnd::kTooManyOutstanding), std::optional<std::string>("too_many_outstanding"));
}

// A system under test that completes on its own thread, in real time.
class ThreadedSut final : public SystemUnderTest {
 public:
  ThreadedSut() : worker_([this] { Loop(); }) {}
  ~ThreadedSut() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
    }
    cv_.notify_one();
    worker_.join();
  }
  void IssueQuery(const Query& q, QueryCompleter& c) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(q.id);
      completer_ = &c;
    }
    cv_.notify_one();
  }
  void FlushQueries() override {}

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [this] { return quit_ || !queue_.empty(); });
      if (queue_.empty()) return;
      const std::uint64_t id = queue_.front();
      queue_.pop_front();
      QueryCompleter* c = completer_;
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      c->Complete(id, {});
      lock.lock();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::uint64_t> queue_;
  QueryCompleter* completer_ = nullptr;
  bool quit_ = false;
  std::thread worker_;
};

TEST(LoadGeneratorTest, AsynchronousCompletionsInRealTime) {
  MonotonicLoadClock clock;
  LoadGenerator gen(Settings(Scenario::kSingleStream), clock);
  ThreadedSut sut;
  RecordingSink sink;
  const RunResult r = gen.Run(sut, Library(4), sink, MaxQueries(300));
  EXPECT_EQ(r.end, RunEnd::kMaxQueries);
  const auto records = sink.records();
  ExpectIdsInOrder(records, 0, 300);
  for (std::size_t i = 1; i < records.size(); ++i) {
    EXPECT_GE(records[i].issued_ns, records[i - 1].completed_ns);  // one query in flight at a time
    EXPECT_GE(records[i].completed_ns, records[i].issued_ns);
  }
}

TEST(LoadGeneratorTest, StopFromTheSinkEndsTheRunAndEveryIssuedQueryIsReported) {
  MonotonicLoadClock clock;
  LoadGenerator gen(Settings(Scenario::kSingleStream), clock);
  ThreadedSut sut;
  RecordingSink sink(/*stop_after=*/200);
  const RunResult r = gen.Run(sut, Library(4), sink, MaxQueries(1'000'000));
  EXPECT_EQ(r.end, RunEnd::kStopped);
  EXPECT_LT(r.issued, 1'000'000u);
  ExpectIdsInOrder(sink.records(), 0, r.issued);
}

TEST(LoadGeneratorTest, RunsContinueIdsAndProbesRestartTheSchedule) {
  SimulatedLoadClock clock(kStart);
  LoadGenerator gen(Settings(Scenario::kServer), clock);
  SyncSut sut(clock, [](const Query&) { return 10'000; });
  RecordingSink first, second;
  gen.Run(sut, Library(4), first, MaxQueries(50));
  gen.SetTargetQps(10.0);
  const std::int64_t second_start = clock.NowNs();
  const RunResult r = gen.Run(sut, Library(4), second, MaxQueries(50));
  EXPECT_EQ(r.first_id, 50u);
  EXPECT_EQ(r.start_ns, second_start);
  const auto records = second.records();
  ExpectIdsInOrder(records, 50, 50);
  EXPECT_EQ(records[0].scheduled_ns, second_start);  // the first arrival is at the run's start
  // At 10/s the mean gap is 100 ms (49 gaps: a loose range, the seed makes it exact).
  const double mean_gap_ms =
      static_cast<double>(records.back().scheduled_ns - records.front().scheduled_ns) / 49 / 1e6;
  EXPECT_GT(mean_gap_ms, 50.0);
  EXPECT_LT(mean_gap_ms, 200.0);
}

// A server peak search from 100/s under a 10 ms p99 bound, without confirmation.
EffectiveLoadSettings PeakFrom100() {
  EffectiveLoadSettings settings = Settings(Scenario::kServer);
  settings.target_qps = 100;
  settings.peak_search = true;
  settings.latency_bound_ns = 10'000'000;
  settings.latency_percentile = 0.99;
  settings.peak_confirm_ns = 0;
  return settings;
}

// A peak-search probe whose system holds a query past the drain (a hung system) ends the search
// with an error naming the probe and the query, instead of letting the late completion land among
// the next probe's measured queries.
TEST(PeakSearchTest, AQueryHungPastTheDrainEndsTheSearchWithAnError) {
  SimulatedLoadClock clock(kStart);
  std::uint64_t hung_id = 0;
  SyncSut served(clock, [](const Query&) { return std::int64_t{100'000}; });
  struct HangsOnce final : SystemUnderTest {
    SyncSut& next;
    std::uint64_t id;
    HangsOnce(SyncSut& n, std::uint64_t i) : next(n), id(i) {}
    void IssueQuery(const Query& q, QueryCompleter& c) override {
      if (q.id != id) next.IssueQuery(q, c);
    }
    void FlushQueries() override {}
  };
  const EffectiveLoadSettings settings = PeakFrom100();
  LoadGenerator generator(settings, clock);
  // The first probe at 100/s warms up for 0.5 s (50 queries), then measures: query 120 is in its
  // measured part.
  hung_id = 120;
  HangsOnce sut(served, hung_id);
  RecordingSink sink;
  const PeakSearchOutcome outcome = RunPeakSearch(settings, generator, sut, Library(16), sink, clock,
                                                  kStart + 3'600'000'000'000, /*drain_timeout_ns=*/1'000'000);
  EXPECT_NE(outcome.error.find(
                "the peak search's probe at 100 queries/s: query 120 was issued and never completed"),
            std::string::npos)
      << outcome.error;
  ASSERT_EQ(outcome.probes.size(), 1u) << outcome.ToJson().dump();
  // Nothing after the hung query was measured in another probe: the records stop before it.
  for (const record::QueryRecord& r : sink.records()) EXPECT_LT(r.query_id, hung_id);
}

// Without a hung query the same search ends by its own rule, with no error.
TEST(PeakSearchTest, ASearchWhoseQueriesAllCompleteHasNoError) {
  SimulatedLoadClock clock(kStart);
  SyncSut sut(clock, [](const Query&) { return std::int64_t{1'000'000}; });
  const EffectiveLoadSettings settings = PeakFrom100();
  LoadGenerator generator(settings, clock);
  RecordingSink sink;
  const PeakSearchOutcome outcome = RunPeakSearch(settings, generator, sut, Library(16), sink, clock,
                                                  kStart + 3'600'000'000'000, /*drain_timeout_ns=*/1'000'000);
  EXPECT_TRUE(outcome.error.empty()) << outcome.error;
  EXPECT_EQ(outcome.reason, "peak_search");
  EXPECT_GT(outcome.probes.size(), 2u);
}

}  // namespace
}  // namespace dlbench::load
