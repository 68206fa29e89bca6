// The null runner's simulated system under test on its virtual clock (virtual_load.h): every
// timestamp is exact, so each scenario's latencies are checked against values computed here
// independently (the server's against a FIFO queue's recursion).
#include "runners/null/virtual_load.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "load/load_generator.h"

namespace dlbench::nullrunner {
namespace {

constexpr std::int64_t kStart = 1'200'000'000'000;  // a large offset, as CLOCK_MONOTONIC has

class RecordingSink final : public load::QueryRecordSink {
 public:
  void Write(const record::QueryRecord* records, std::size_t count) override {
    std::lock_guard<std::mutex> lock(mutex_);
    records_.insert(records_.end(), records, records + count);
  }
  bool StopRequested() override { return false; }
  std::vector<record::QueryRecord> records() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return records_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<record::QueryRecord> records_;
};

load::EffectiveLoadSettings Settings(const nlohmann::json& params) {
  nlohmann::json p = params;
  p["scenario"] = "infer";
  auto s = load::ResolveLoadSettings(p, 7);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return *s;
}

std::vector<record::QueryRecord> Serve(const load::EffectiveLoadSettings& settings,
                                       const VirtualService& service, std::uint64_t queries,
                                       load::RunResult* result_out = nullptr) {
  // A speed-up of 1e9: the test does not wait for the virtual clock.
  VirtualLoadServer server(settings, service, kStart, 1e9);
  load::LoadGenerator generator(settings, server);
  RecordingSink sink;
  load::RunLimits limits;
  limits.max_queries = queries;
  const load::RunResult result = generator.Run(server, server, sink, limits);
  if (result_out != nullptr) *result_out = result;
  EXPECT_EQ(result.end, load::RunEnd::kMaxQueries) << result.error;
  return sink.records();
}

TEST(VirtualLoadTest, SingleStreamLatencyIsTheServiceTimeAndQueriesFollowEachOther) {
  const VirtualService service{2'000'000, 500'000};  // 2.5 ms for one sample
  const auto records = Serve(Settings({{"load", "single_stream"}}), service, 100);
  ASSERT_EQ(records.size(), 100u);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const record::QueryRecord& r = records[i];
    EXPECT_EQ(r.query_id, i);
    EXPECT_EQ(r.scheduled_ns, r.issued_ns);
    EXPECT_EQ(r.completed_ns - r.scheduled_ns, 2'500'000) << i;
    EXPECT_EQ(r.compute_ns, 2'500'000);
    if (i > 0) EXPECT_EQ(r.issued_ns, records[i - 1].completed_ns) << i;
  }
  EXPECT_EQ(records.front().scheduled_ns, kStart);
}

TEST(VirtualLoadTest, OfflineServesItsQueryInBatchesOfBatchSize) {
  const VirtualService service{1'000'000, 100'000};
  // 10 samples in batches of 4: 4 + 4 + 2, each batch 1 ms + 0.1 ms per sample.
  const auto records =
      Serve(Settings({{"load", "offline"}, {"offline_samples", 10}, {"batch_size", 4}}), service, 3);
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) {
    EXPECT_EQ(r.samples, 10u);
    EXPECT_EQ(r.completed_ns - r.scheduled_ns, 1'400'000 + 1'400'000 + 1'200'000);
  }
}

// One server, no batching: each query completes at max(its arrival, the previous completion) +
// the service time, the recursion of a FIFO single-server queue (Lindley's).
TEST(VirtualLoadTest, ServerWithOneStreamIsAFifoQueue) {
  const VirtualService service{1'000'000, 0};  // capacity 1000 queries/s
  const auto settings = Settings({{"load", "server"}, {"target_qps", 800}, {"max_batch", 1}});
  const auto records = Serve(settings, service, 2000);
  ASSERT_EQ(records.size(), 2000u);
  std::int64_t previous_done = 0;
  std::int64_t queued = 0;
  for (const auto& r : records) {
    EXPECT_EQ(r.issued_ns, r.scheduled_ns);  // the simulated system never blocks the issue thread
    const std::int64_t expected = std::max(r.scheduled_ns, previous_done) + service.per_batch_ns;
    ASSERT_EQ(r.completed_ns, expected) << "query " << r.query_id;
    if (r.completed_ns - r.scheduled_ns > service.per_batch_ns) ++queued;
    previous_done = r.completed_ns;
  }
  EXPECT_GT(queued, 100);  // at 80% load a good share of queries waits: queueing is in the latency
}

// Several streams and batches: every query once, batches within max_batch, and no query
// completes before its arrival plus the service time of a batch of its size.
TEST(VirtualLoadTest, ServerBatchesWithinMaxBatchOnSeveralStreams) {
  const VirtualService service{2'000'000, 250'000};
  const auto settings = Settings({{"load", "server"},
                                  {"target_qps", 3000},
                                  {"max_batch", 4},
                                  {"streams", 2},
                                  {"batch_timeout_us", 500}});
  const auto records = Serve(settings, service, 5000);
  ASSERT_EQ(records.size(), 5000u);
  std::uint32_t largest = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    ASSERT_EQ(r.query_id, i);
    ASSERT_GE(r.batch_samples, 1u);
    ASSERT_LE(r.batch_samples, 4u);
    largest = std::max(largest, r.batch_samples);
    EXPECT_GE(r.completed_ns - r.issued_ns, service.Of(r.batch_samples)) << i;
    // The oldest query of a batch waits at most the timeout for a free stream's batch to fill,
    // and then for a stream; never less than the batch's service time.
    EXPECT_EQ(r.compute_ns, service.Of(r.batch_samples));
  }
  EXPECT_EQ(largest, 4u);  // at 3000/s with 2 streams of ~3 ms batches, batches fill
}

TEST(VirtualLoadTest, AnOverloadedServerFallsBehindUntilTooManyAreOutstanding) {
  const VirtualService service{1'000'000, 0};  // 1000/s; asked for 2000/s
  auto settings = Settings({{"load", "server"}, {"target_qps", 2000}, {"max_batch", 1}});
  settings.max_outstanding = 1024;
  VirtualLoadServer server(settings, service, kStart, 1e9);
  load::LoadGenerator generator(settings, server);
  RecordingSink sink;
  const load::RunResult result = generator.Run(server, server, sink, load::RunLimits{});
  EXPECT_EQ(result.end, load::RunEnd::kTooManyOutstanding);
  EXPECT_EQ(result.completed, result.issued);  // the flush serves what was queued
}

TEST(VirtualLoadTest, OptionsComeFromTheParameters) {
  auto o = LoadOptionsFromParams({{"service_us", 250}, {"service_per_sample_us", 10.5}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->service.per_batch_ns, 250'000);
  EXPECT_EQ(o->service.per_sample_ns, 10'500);
  EXPECT_EQ(LoadOptionsFromParams(nlohmann::json::object())->service.per_batch_ns, 1'000'000);
  EXPECT_EQ(LoadOptionsFromParams({{"service_us", 1e-9}})->service.per_batch_ns, 1);  // at least 1 ns
  EXPECT_FALSE(LoadOptionsFromParams({{"service_us", -1}}).ok());
}

}  // namespace
}  // namespace dlbench::nullrunner
