#include "load/batcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "load/load_generator.h"

namespace dlbench::load {
namespace {

BatcherSettings Settings(std::uint32_t max_batch, std::int64_t timeout_ns, std::uint32_t streams = 1) {
  BatcherSettings s;
  s.max_batch = max_batch;
  s.batch_timeout_ns = timeout_ns;
  s.streams = streams;
  return s;
}

TEST(DecideBatchTest, TheRuleOnHandCases) {
  const BatcherSettings s = Settings(8, 1000);
  // Nothing queued: wait for an arrival.
  EXPECT_FALSE(DecideBatch(0, 0, 0, 0, 5, s, false).dispatch);
  // Three queued, the oldest at 100, now 500: wait until 1100.
  BatchDecision d = DecideBatch(3, 3, 3, 100, 500, s, false);
  EXPECT_FALSE(d.dispatch);
  EXPECT_EQ(d.wake_at_ns, 1100);
  // At 1100 the oldest has waited the timeout: run what is queued.
  d = DecideBatch(3, 3, 3, 100, 1100, s, false);
  EXPECT_TRUE(d.dispatch);
  EXPECT_EQ(d.queries, 3u);
  EXPECT_EQ(d.samples, 3u);
  // A full batch goes at once, however young.
  d = DecideBatch(8, 8, 8, 400, 400, s, false);
  EXPECT_TRUE(d.dispatch);
  EXPECT_EQ(d.samples, 8u);
  // More queued than fit: the prefix is full.
  d = DecideBatch(12, 8, 8, 400, 400, s, false);
  EXPECT_TRUE(d.dispatch);
  EXPECT_EQ(d.queries, 8u);
  // The next query would not fit (samples 5 + 4 > 8): full at 5.
  EXPECT_TRUE(DecideBatch(2, 1, 5, 400, 400, s, false).dispatch);
  // Flushing, or no timeout: whatever is queued.
  EXPECT_TRUE(DecideBatch(1, 1, 1, 400, 401, s, true).dispatch);
  EXPECT_TRUE(DecideBatch(1, 1, 1, 400, 401, Settings(8, 0), false).dispatch);
}

// Records every batch, checks one batch per stream at a time, takes `service` per batch.
class Recorder final : public BatchExecutor {
 public:
  explicit Recorder(std::chrono::microseconds service, std::size_t fail_at = SIZE_MAX)
      : service_(service), fail_at_(fail_at) {}
  std::optional<QueryTiming> RunBatch(std::uint32_t stream, const Batch& batch) noexcept override {
    if (in_flight_[stream % 8].fetch_add(1) != 0) overlap_on_a_stream_ = true;
    const int now = total_in_flight_.fetch_add(1) + 1;
    int seen = max_in_flight_.load();
    while (now > seen && !max_in_flight_.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(service_);
    std::size_t index;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      index = batches_.size();
      std::vector<std::uint64_t> ids;
      for (std::size_t i = 0; i < batch.count; ++i) ids.push_back(batch.queries[i].id);
      batches_.push_back({batch.samples, ids});
    }
    total_in_flight_.fetch_sub(1);
    in_flight_[stream % 8].fetch_sub(1);
    if (index == fail_at_) return std::nullopt;
    QueryTiming t;
    t.compute_ns = service_.count() * 1000;
    t.present = record::kQueryHasCompute;
    return t;
  }
  struct Seen {
    std::uint32_t samples;
    std::vector<std::uint64_t> ids;
  };
  std::vector<Seen> batches() {
    std::lock_guard<std::mutex> lock(mutex_);
    return batches_;
  }
  std::atomic<bool> overlap_on_a_stream_{false};
  std::atomic<int> max_in_flight_{0};

 private:
  std::chrono::microseconds service_;
  std::size_t fail_at_;
  std::atomic<int> in_flight_[8] = {};
  std::atomic<int> total_in_flight_{0};
  std::mutex mutex_;
  std::vector<Seen> batches_;
};

class Sink final : public QueryRecordSink {
 public:
  void Write(const record::QueryRecord* r, std::size_t n) override {
    records.insert(records.end(), r, r + n);
  }
  bool StopRequested() override { return false; }
  std::vector<record::QueryRecord> records;
};

class Library final : public QuerySampleLibrary {
 public:
  std::uint32_t SampleCount() const override { return 16; }
};

// The batcher under a real server run: every query completes exactly once, batches respect
// max_batch, and no stream runs two batches at once. Timing-independent by design.
TEST(DynamicBatcherTest, ServesEveryQueryOnceWithinTheLimits) {
  for (const std::uint32_t streams : {1u, 3u}) {
    MonotonicLoadClock clock;
    EffectiveLoadSettings s;
    s.scenario = Scenario::kServer;
    s.target_qps = 20'000;  // faster than one stream serves, so batches form
    s.schedule_seed = 5;
    LoadGenerator gen(s, clock);
    Recorder executor(std::chrono::microseconds(200));
    Sink sink;
    {
      DynamicBatcher batcher(Settings(4, 100'000, streams), executor, clock);
      RunLimits limits;
      limits.max_queries = 600;
      const RunResult r = gen.Run(batcher, Library(), sink, limits);
      EXPECT_EQ(r.end, RunEnd::kMaxQueries) << r.error;
      EXPECT_FALSE(batcher.failed());
    }
    ASSERT_EQ(sink.records.size(), 600u);
    std::multiset<std::uint64_t> served;
    bool some_batch_above_one = false;
    for (const auto& b : executor.batches()) {
      EXPECT_GE(b.samples, 1u);
      EXPECT_LE(b.samples, 4u);
      EXPECT_EQ(b.samples, b.ids.size());
      some_batch_above_one = some_batch_above_one || b.samples > 1;
      served.insert(b.ids.begin(), b.ids.end());
    }
    ASSERT_EQ(served.size(), 600u);
    for (std::uint64_t id = 0; id < 600; ++id) EXPECT_EQ(served.count(id), 1u) << id;
    EXPECT_TRUE(some_batch_above_one);
    EXPECT_FALSE(executor.overlap_on_a_stream_.load());
    EXPECT_LE(executor.max_in_flight_.load(), static_cast<int>(streams));
    for (std::size_t i = 0; i < sink.records.size(); ++i) {
      const record::QueryRecord& q = sink.records[i];
      EXPECT_EQ(q.query_id, i);
      EXPECT_GE(q.batch_samples, 1u);
      EXPECT_LE(q.batch_samples, 4u);
      EXPECT_EQ(q.present, record::kQueryHasCompute);
      EXPECT_GE(q.issued_ns, q.scheduled_ns);
      EXPECT_GE(q.completed_ns, q.issued_ns);
    }
  }
}

TEST(DynamicBatcherTest, FlushRunsAPartialBatchWithoutWaitingForTheTimeout) {
  MonotonicLoadClock clock;
  Recorder executor(std::chrono::microseconds(0));
  struct Counter final : QueryCompleter {
    std::atomic<int> done{0};
    void Complete(std::uint64_t, const QueryTiming&) noexcept override { ++done; }
    void CompleteSamples(std::uint64_t, std::uint32_t, const QueryTiming&) noexcept override {}
    void CompleteBatch(const std::uint64_t*, std::size_t n, const QueryTiming&) noexcept override {
      done += static_cast<int>(n);
    }
  } counter;
  DynamicBatcher batcher(Settings(8, 3'600'000'000'000LL), executor, clock);  // an hour's timeout
  for (std::uint64_t id = 0; id < 3; ++id) {
    Query q;
    q.id = id;
    batcher.IssueQuery(q, counter);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(counter.done.load(), 0);  // three of eight, an hour to go: it waits
  batcher.FlushQueries();
  for (int i = 0; i < 2000 && counter.done.load() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(counter.done.load(), 3);
  ASSERT_EQ(executor.batches().size(), 1u);
  EXPECT_EQ(executor.batches()[0].samples, 3u);
}

TEST(DynamicBatcherTest, AFailedBatchDrainsTheRestWithoutRunningThem) {
  MonotonicLoadClock clock;
  EffectiveLoadSettings s;
  s.scenario = Scenario::kServer;
  s.target_qps = 5'000;
  s.schedule_seed = 6;
  LoadGenerator gen(s, clock);
  Recorder executor(std::chrono::microseconds(50), /*fail_at=*/2);
  Sink sink;
  DynamicBatcher batcher(Settings(2, 0), executor, clock);
  RunLimits limits;
  limits.max_queries = 200;
  const RunResult r = gen.Run(batcher, Library(), sink, limits);
  EXPECT_EQ(r.completed, 200u);  // every query completed, so the run drained at once
  EXPECT_TRUE(batcher.failed());
  EXPECT_EQ(executor.batches().size(), 3u);  // nothing ran after the failure
}

}  // namespace
}  // namespace dlbench::load
