// The null runner's simulated system under test on its virtual clock (virtual_load.h): every
// timestamp is exact, so each scenario's latencies are checked against values computed here
// independently (the server's against a FIFO queue's recursion, the peak search's against an M/D/1
// queue's waiting-time distribution).
#include "runners/null/virtual_load.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <optional>

#include "load/load_generator.h"
#include "load/peak_search.h"

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
    if (i > 0) {
      EXPECT_EQ(r.issued_ns, records[i - 1].completed_ns) << i;
    }
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

// A sink that asks to stop once `stop_after` records arrived, as the orchestrator's STOP does.
class StoppingSink final : public load::QueryRecordSink {
 public:
  explicit StoppingSink(std::size_t stop_after) : stop_after_(stop_after) {}
  void Write(const record::QueryRecord* records, std::size_t count) override { inner_.Write(records, count); }
  bool StopRequested() override { return inner_.records().size() >= stop_after_; }
  std::vector<record::QueryRecord> records() const { return inner_.records(); }

 private:
  RecordingSink inner_;
  std::size_t stop_after_;
};

// serve_after_stop_us: after STOP the server serves its queue for only that much more virtual time;
// the load generator's STOP drain (0 here) then drops the rest, and the batch in service finishes.
TEST(VirtualLoadTest, AfterStopTheServerServesOnlyServeAfterStopAndDropsTheRestOfItsQueue) {
  const VirtualService service{1'000'000, 0};  // 1000/s; asked for 2000/s
  const auto settings = Settings({{"load", "server"}, {"target_qps", 2000}, {"max_batch", 1}});
  VirtualLoadServer server(settings, service, kStart, 1000, /*serve_after_stop_ns=*/3'000'000);
  load::LoadGenerator generator(settings, server);
  StoppingSink sink(100);
  load::RunLimits limits;
  limits.stop_drain_timeout_ns = 0;
  const load::RunResult result = generator.Run(server, server, sink, limits);
  ASSERT_EQ(result.end, load::RunEnd::kDroppedAfterStop) << result.error;
  const std::vector<record::QueryRecord> records = sink.records();
  ASSERT_EQ(records.size(), result.completed);
  ASSERT_LT(result.completed, result.issued);
  for (std::size_t i = 0; i < records.size(); ++i) ASSERT_EQ(records[i].query_id, i);
  // The server, busy throughout, went on for 3 ms after STOP (after the last query was issued,
  // which the dropped ones came after), and the batch then in service finished.
  const std::int64_t last_issue = records.back().issued_ns;
  for (const record::QueryRecord& r : records) ASSERT_LE(r.issued_ns, last_issue);
  EXPECT_GT(records.back().completed_ns, last_issue + 3'000'000);
  for (std::size_t i = 1; i < records.size(); ++i)
    ASSERT_GT(records[i].completed_ns, records[i - 1].completed_ns);
  EXPECT_NE(result.error.find("dropped by the system under test before they ran"), std::string::npos)
      << result.error;

  // Without serve_after_stop_us the queue is served at once: nothing is dropped.
  VirtualLoadServer whole(settings, service, kStart, 1000);
  load::LoadGenerator generator2(settings, whole);
  StoppingSink sink2(100);
  const load::RunResult all = generator2.Run(whole, whole, sink2, limits);
  EXPECT_EQ(all.end, load::RunEnd::kStopped) << all.error;
  EXPECT_EQ(all.completed, all.issued);
  EXPECT_EQ(sink2.records().size(), all.issued);
}

TEST(VirtualLoadTest, OptionsComeFromTheParameters) {
  auto o = LoadOptionsFromParams({{"service_us", 250}, {"service_per_sample_us", 10.5}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->service.per_batch_ns, 250'000);
  EXPECT_EQ(o->service.per_sample_ns, 10'500);
  EXPECT_EQ(LoadOptionsFromParams(nlohmann::json::object())->service.per_batch_ns, 1'000'000);
  EXPECT_EQ(LoadOptionsFromParams({{"service_us", 1e-9}})->service.per_batch_ns, 1);  // at least 1 ns
  EXPECT_FALSE(LoadOptionsFromParams({{"service_us", -1}}).ok());
  EXPECT_FALSE(o->serve_after_stop_ns);
  EXPECT_EQ(LoadOptionsFromParams({{"serve_after_stop_us", 2.5}})->serve_after_stop_ns, 2'500);
  EXPECT_FALSE(LoadOptionsFromParams({{"serve_after_stop_us", -1}}).ok());
}

// An M/D/1 queue (Poisson arrivals at `lambda`, one server, service time `s`): the probability
// that a query waits at most `t`, Erlang's formula
//   P(W <= t) = (1 - rho) sum_{k=0}^{floor(t/s)} (lambda (k s - t))^k / k! e^{-lambda (k s - t)},
// rho = lambda s. The terms alternate; for t / s <= 10 and rho < 1 they stay below e^20, so double
// keeps about 8 significant digits.
double MD1WaitCdf(double lambda, double s, double t) {
  double sum = 0;
  for (int k = 0; k <= static_cast<int>(std::floor(t / s)); ++k) {
    const double x = lambda * (k * s - t);
    sum += std::pow(x, k) / std::tgamma(k + 1.0) * std::exp(-x);
  }
  return (1 - lambda * s) * sum;
}

// The highest rate whose latency (wait + s) has its percentile `p` within `bound`.
double MD1Peak(double bound, double s, double p) {
  double lo = 1, hi = 1 / s;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (MD1WaitCdf(mid, s, bound - s) >= p ? lo : hi) = mid;
  }
  return lo;
}

load::PeakSearchOutcome SearchOnTheVirtualServer(const load::EffectiveLoadSettings& settings,
                                                 const VirtualService& service, std::int64_t budget_ns,
                                                 std::vector<record::QueryRecord>* records_out = nullptr) {
  VirtualLoadServer server(settings, service, kStart, 1e9);
  load::LoadGenerator generator(settings, server);
  RecordingSink sink;
  load::PeakSearchOutcome outcome =
      load::RunPeakSearch(settings, generator, server, server, sink, server, kStart + budget_ns);
  if (records_out != nullptr) *records_out = sink.records();
  return outcome;
}

// A server of 1 ms per query (capacity 1000/s) under a 10 ms p99 bound: the M/D/1 queue sustains
// 773.5 queries/s. With 20,000 queries a probe, the seeded schedule's p99 is within a few percent
// of the stationary one, so the search's converged bracket holds the queue's peak within the
// search's stated resolution (5%), and every record belongs to exactly one probe.
TEST(VirtualLoadTest, ThePeakSearchFindsTheRateAnMD1QueueSustainsWithinItsBound) {
  const double expected = MD1Peak(10e-3, 1e-3, 0.99);
  EXPECT_NEAR(expected, 773.49, 0.01);
  EXPECT_NEAR(MD1WaitCdf(500, 1e-3, 0), 0.5, 1e-12);  // P(no wait) = 1 - rho
  const auto settings = Settings({{"load", "server"},
                                  {"target_qps", "max"},
                                  {"latency_bound_ms", 10},
                                  {"max_batch", 1},
                                  {"min_queries", 20000}});
  std::vector<record::QueryRecord> records;
  const load::PeakSearchOutcome outcome =
      SearchOnTheVirtualServer(settings, VirtualService{1'000'000, 0}, 100'000'000'000'000, &records);
  EXPECT_EQ(outcome.search.end, stats::PeakSearchEnd::kConverged);
  EXPECT_EQ(outcome.reason, "peak_search");
  ASSERT_TRUE(outcome.search.peak_per_s && outcome.search.lowest_failing_per_s);
  const double lo = *outcome.search.peak_per_s, hi = *outcome.search.lowest_failing_per_s;
  EXPECT_LE(hi / lo - 1, settings.peak_resolution);
  EXPECT_LE(std::abs(lo / expected - 1), settings.peak_resolution) << lo << " .. " << hi;
  EXPECT_LE(std::abs(hi / expected - 1), settings.peak_resolution) << lo << " .. " << hi;
  // Bracketing from 100/s doubles while probes pass: 100, 200 and 400 are far below the peak.
  ASSERT_GE(outcome.probes.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(outcome.probes[i].target_qps, 100.0 * std::pow(2.0, static_cast<double>(i)));
    if (i < 3) {
      EXPECT_TRUE(outcome.probes[i].passed) << i;
    }
  }
  std::uint64_t next = 0;
  for (const load::ProbeReport& p : outcome.probes) {
    EXPECT_EQ(p.warmup_first_query, next);
    EXPECT_EQ(p.first_query, p.warmup_first_query + p.warmup_queries);
    next = p.first_query + p.queries;
    if (p.passed) {
      EXPECT_GE(p.queries, 20000u);
      EXPECT_LE(*p.latency_at_percentile_ns, 10e6);
    }
  }
  EXPECT_EQ(next, records.size());
  EXPECT_EQ(outcome.issued, records.size());
}

// peak_min_probe_s: each probe measures at least its rate x that many seconds of queries (h(0) =
// 459 at p99 when that is more); 0 leaves the early-stopping minimum alone. On the M/D/1 server
// (peak 773.5/s), probes of the minimum alone, a fraction of a second each, put the whole bracket
// above the queue's peak (835-872/s on this seed: a short probe's p99 misses the queue a
// sustained rate builds, as the H200's 72 ms probes did); probes of the default 5 s bracket it.
TEST(VirtualLoadTest, EachPeakProbeMeasuresAtLeastItsMinimumDurationAtItsRate) {
  const VirtualService service{1'000'000, 0};
  const double expected = MD1Peak(10e-3, 1e-3, 0.99);
  auto search = [&](std::optional<double> min_s, std::uint32_t max_probes) {
    nlohmann::json keys = {{"load", "server"},
                           {"target_qps", "max"},
                           {"latency_bound_ms", 10},
                           {"max_batch", 1},
                           {"peak_max_probes", max_probes}};
    if (min_s) keys["peak_min_probe_s"] = *min_s;
    keys["peak_confirm_s"] = 0;  // the search's probes alone (as before peak_confirm_s)
    return SearchOnTheVirtualServer(Settings(keys), service, 100'000'000'000'000);
  };
  const load::PeakSearchOutcome bare = search(0.0, 4);
  ASSERT_EQ(bare.probes.size(), 4u);
  EXPECT_EQ(bare.probes[0].queries, 459u);  // 100/s: every query within the bound, h(0) met at once
  EXPECT_EQ(bare.ToJson()["probe_min_s"], 0.0);
  const load::PeakSearchOutcome ten = search(10.0, 4);
  ASSERT_EQ(ten.probes.size(), 4u);
  EXPECT_EQ(ten.probes[0].queries, 1000u);  // 10 s at 100/s
  for (const load::ProbeReport& p : ten.probes) {
    EXPECT_GE(static_cast<double>(p.queries), std::ceil(p.target_qps * 10)) << p.target_qps;
  }
  EXPECT_EQ(ten.ToJson()["probe_min_s"], 10.0);

  const load::PeakSearchOutcome short_probes = search(0.0, load::kDefaultPeakMaxProbes);
  ASSERT_EQ(short_probes.search.end, stats::PeakSearchEnd::kConverged);
  EXPECT_GT(*short_probes.search.peak_per_s, expected * 1.05);
  const load::PeakSearchOutcome default_probes = search(std::nullopt, load::kDefaultPeakMaxProbes);
  EXPECT_EQ(default_probes.ToJson()["probe_min_s"], 5.0);
  ASSERT_EQ(default_probes.search.end, stats::PeakSearchEnd::kConverged);
  EXPECT_LE(*default_probes.search.peak_per_s, expected);
  EXPECT_GE(*default_probes.search.lowest_failing_per_s, expected);
}

// The bounds end the search early: the probe cap with the bracket still open, the time budget
// (virtual time) cutting the first probe short of its early-stopping floor (so it cannot pass),
// and a bound below the service time, which no rate meets down to the search's 1 query/s.
TEST(VirtualLoadTest, ThePeakSearchsBoundsEndIt) {
  const VirtualService service{1'000'000, 0};
  auto capped = Settings({{"load", "server"},
                          {"target_qps", "max"},
                          {"latency_bound_ms", 10},
                          {"max_batch", 1},
                          {"peak_max_probes", 3},
                          {"peak_confirm_s", 0}});
  const load::PeakSearchOutcome cap = SearchOnTheVirtualServer(capped, service, 100'000'000'000'000);
  EXPECT_EQ(cap.search.end, stats::PeakSearchEnd::kProbeCap);
  ASSERT_EQ(cap.probes.size(), 3u);
  EXPECT_EQ(cap.probes[2].target_qps, 400.0);
  EXPECT_EQ(*cap.search.peak_per_s, 400.0);
  EXPECT_FALSE(cap.search.lowest_failing_per_s);

  // 459 queries at 100/s take 4.6 s; the budget is 3 s.
  auto timed =
      Settings({{"load", "server"}, {"target_qps", "max"}, {"latency_bound_ms", 10}, {"max_batch", 1}});
  const load::PeakSearchOutcome time = SearchOnTheVirtualServer(timed, service, 3'000'000'000);
  EXPECT_EQ(time.reason, "max_time");
  EXPECT_EQ(time.search.end, stats::PeakSearchEnd::kStopped);
  ASSERT_EQ(time.probes.size(), 1u);
  EXPECT_FALSE(time.probes[0].passed);
  EXPECT_FALSE(time.probes[0].early_stopping_met);
  EXPECT_LT(time.probes[0].queries, 459u);
  // Its queries were all within the bound: the budget cut it before it passed or failed, so it is
  // no failing rate (before `cut` it read as one: lowest failing 100/s).
  EXPECT_TRUE(time.probes[0].cut);
  EXPECT_TRUE(time.search.probes[0].cut);
  EXPECT_FALSE(time.search.lowest_failing_per_s);

  auto tight =
      Settings({{"load", "server"}, {"target_qps", "max"}, {"latency_bound_ms", 0.5}, {"max_batch", 1}});
  const load::PeakSearchOutcome none = SearchOnTheVirtualServer(tight, service, 100'000'000'000'000);
  EXPECT_EQ(none.search.end, stats::PeakSearchEnd::kNoPassingRate);
  EXPECT_FALSE(none.search.peak_per_s);
  ASSERT_EQ(none.probes.size(), 8u);  // 100, 50, 25, 12.5, 6.25, 3.125, 1.5625, 1
  EXPECT_EQ(none.probes.back().target_qps, 1.0);
}

// peak_confirm_s (docs/load.md "Confirmation"): after the search the peak runs again for at
// least 15 s at its rate; if it fails, confirmations of the same length bisect below it
// (load::NextConfirmationRate), at most 5 in all. On the M/D/1 server (peak 773.5/s) the search of
// short probes (the early-stopping minimum alone) converged at 835.4/s, above the queue's peak,
// with 800/s the highest passing rate below it and 400/s the next. 835.4/s fails its
// confirmation; the bracket [800, 835.4] is within peak_resolution, so 800/s is confirmed itself
// and fails; then the bisection of [400, 800] confirms 565.7, 672.7 and 733.6/s, the last 0.948
// of the queue's peak (a step down to the search's 400/s would have been 0.517). The search of 5 s
// probes found a peak below the queue's, which its confirmation keeps. peak_confirm_s: 0 runs none.
TEST(VirtualLoadTest, APeakThatFailsItsConfirmationIsBisectedDownToARateTheQueueSustains) {
  const VirtualService service{1'000'000, 0};
  const double expected = MD1Peak(10e-3, 1e-3, 0.99);
  auto search = [&](double min_s, std::optional<double> confirm_s) {
    nlohmann::json keys = {{"load", "server"},
                           {"target_qps", "max"},
                           {"latency_bound_ms", 10},
                           {"max_batch", 1},
                           {"peak_min_probe_s", min_s}};
    if (confirm_s) keys["peak_confirm_s"] = *confirm_s;
    std::vector<record::QueryRecord> records;
    load::PeakSearchOutcome outcome =
        SearchOnTheVirtualServer(Settings(keys), service, 100'000'000'000'000, &records);
    // Every record in one probe's range, the confirmations' too.
    std::uint64_t next = 0;
    for (const load::ProbeReport& p : outcome.probes) {
      EXPECT_EQ(p.warmup_first_query, next);
      next = p.first_query + p.queries;
    }
    EXPECT_EQ(next, records.size());
    return outcome;
  };
  // The search's probes, then its confirmations: each at least 15 s at its rate.
  auto confirmations = [](const load::PeakSearchOutcome& o) {
    std::vector<load::ProbeReport> out;
    for (std::size_t i = 0; i < o.probes.size(); ++i) {
      if (o.probes[i].confirmation) {
        out.push_back(o.probes[i]);
        EXPECT_EQ(o.search.probes[i].rate_per_s, o.probes[i].target_qps);
        EXPECT_EQ(o.search.probes[i].passed, o.probes[i].passed);
      } else {
        EXPECT_TRUE(out.empty()) << "a search probe after a confirmation";
      }
    }
    for (const load::ProbeReport& c : out) {
      EXPECT_GE(static_cast<double>(c.queries), std::ceil(c.target_qps * 15)) << c.target_qps;
    }
    return out;
  };

  const load::PeakSearchOutcome short_probes = search(0.0, std::nullopt);
  ASSERT_EQ(short_probes.search.end, stats::PeakSearchEnd::kConverged);
  EXPECT_EQ(short_probes.reason, "peak_search");
  EXPECT_EQ(short_probes.ToJson()["confirm_s"], 15.0);
  const double found = *short_probes.search.peak_per_s;
  EXPECT_NEAR(found, 835.42, 0.01);
  EXPECT_GT(found, expected * 1.05);
  // The search's passing rates below its peak: 800/s and the bracketing step's 400/s.
  std::vector<double> passing;
  for (const load::ProbeReport& p : short_probes.probes) {
    if (!p.confirmation && p.passed && p.target_qps < found) passing.push_back(p.target_qps);
  }
  std::sort(passing.rbegin(), passing.rend());
  ASSERT_GE(passing.size(), 2u);
  ASSERT_EQ(passing[0], 800.0);
  ASSERT_EQ(passing[1], 400.0);
  const std::vector<load::ProbeReport> bisected = confirmations(short_probes);
  ASSERT_EQ(bisected.size(), static_cast<std::size_t>(load::kMaxPeakConfirmations));
  ASSERT_EQ(load::kMaxPeakConfirmations, 5);
  const double first_mid = std::sqrt(400.0 * 800.0);
  const double second_mid = std::sqrt(first_mid * 800.0);
  const double third_mid = std::sqrt(second_mid * 800.0);
  const std::vector<double> rates = {found, 800.0, first_mid, second_mid, third_mid};
  const std::vector<bool> passed = {false, false, true, true, true};
  for (std::size_t i = 0; i < bisected.size(); ++i) {
    EXPECT_EQ(bisected[i].target_qps, rates[i]) << i;
    EXPECT_EQ(bisected[i].passed, passed[i]) << i;
  }
  // The confirmed peak: the highest passed confirmation, at or below the queue's peak and within
  // 6% of it; the lowest failed confirmation above it, 800/s, is its bracket's upper end.
  EXPECT_NEAR(third_mid, 733.60, 0.01);
  EXPECT_LE(third_mid, expected);
  EXPECT_GE(third_mid, 0.94 * expected);
  EXPECT_FALSE(load::NextConfirmationRate(short_probes.probes, short_probes.rel_tolerance));

  const load::PeakSearchOutcome default_probes = search(5.0, std::nullopt);
  ASSERT_EQ(default_probes.search.end, stats::PeakSearchEnd::kConverged);
  const std::vector<load::ProbeReport> kept = confirmations(default_probes);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].target_qps, *default_probes.search.peak_per_s);
  EXPECT_TRUE(kept[0].passed);

  const load::PeakSearchOutcome off = search(0.0, 0.0);
  EXPECT_TRUE(confirmations(off).empty());
  EXPECT_EQ(off.ToJson()["confirm_s"], 0.0);
  // The search itself is the same with or without its confirmation.
  ASSERT_EQ(off.probes.size() + bisected.size(), short_probes.probes.size());
  for (std::size_t i = 0; i < off.probes.size(); ++i) {
    EXPECT_EQ(off.probes[i].target_qps, short_probes.probes[i].target_qps) << i;
    EXPECT_EQ(off.probes[i].passed, short_probes.probes[i].passed) << i;
  }

  // The report round-trips the flag; the cell allows peak_max_probes plus the confirmations.
  const nlohmann::json json = short_probes.ToJson();
  auto parsed = load::ParseProbeReports(json, load::kDefaultPeakMaxProbes + load::kMaxPeakConfirmations);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ(parsed->size(), short_probes.probes.size());
  for (std::size_t i = 0; i < parsed->size(); ++i) {
    EXPECT_EQ((*parsed)[i].confirmation, short_probes.probes[i].confirmation) << i;
  }
  EXPECT_FALSE(load::ParseProbeReports(json, short_probes.probes.size() - 1).ok());
  // A report from before the flag: no probe is a confirmation.
  nlohmann::json old = json;
  for (nlohmann::json& p : old["probes"]) p.erase("confirmation");
  auto old_parsed = load::ParseProbeReports(old, load::kDefaultPeakMaxProbes + load::kMaxPeakConfirmations);
  ASSERT_TRUE(old_parsed.ok()) << old_parsed.error().message;
  for (const load::ProbeReport& p : *old_parsed) EXPECT_FALSE(p.confirmation);
  nlohmann::json bad = json;
  bad["probes"][0]["confirmation"] = "yes";
  auto refused = load::ParseProbeReports(bad, load::kDefaultPeakMaxProbes + load::kMaxPeakConfirmations);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "probe 1: confirmation must be true or false");
}

// The time budget ends the confirmations as it ends the search: a search that converges with too
// little budget left for its confirmation reports none and ends max_time.
TEST(VirtualLoadTest, ThePeakSearchsBudgetBoundsItsConfirmations) {
  const VirtualService service{1'000'000, 0};
  auto settings = Settings({{"load", "server"},
                            {"target_qps", "max"},
                            {"latency_bound_ms", 10},
                            {"max_batch", 1},
                            {"peak_min_probe_s", 0},
                            {"peak_confirm_s", 0}});
  // The search alone: its virtual duration, from its last record.
  std::vector<record::QueryRecord> records;
  const load::PeakSearchOutcome alone =
      SearchOnTheVirtualServer(settings, service, 100'000'000'000'000, &records);
  ASSERT_EQ(alone.search.end, stats::PeakSearchEnd::kConverged);
  const std::int64_t search_ns = records.back().completed_ns - kStart;
  settings.peak_confirm_ns = 15'000'000'000;
  // 1 s more than the search: the confirmation starts and is cut (a failure would make it no cut).
  const load::PeakSearchOutcome cut = SearchOnTheVirtualServer(settings, service, search_ns + 1'000'000'000);
  EXPECT_EQ(cut.reason, "max_time");
  EXPECT_EQ(cut.search.end, stats::PeakSearchEnd::kConverged);
  ASSERT_EQ(cut.probes.size(), alone.probes.size() + 1);
  EXPECT_TRUE(cut.probes.back().confirmation);
  EXPECT_FALSE(cut.probes.back().passed);
}

// STOP in an overloaded probe (1,600/s against 1,000/s) whose queue the server keeps after STOP
// (serve_after_stop 0): after the generator's 2 s STOP drain the queue is dropped, and the probe's
// report accounts for it: its warm-up and measured records, then `dropped`, tile every issued id;
// the probe fell behind, so it did not pass.
TEST(VirtualLoadTest, APeakProbeCutByStopReportsTheQueriesItsServerDropped) {
  const auto settings =
      Settings({{"load", "server"}, {"target_qps", "max"}, {"latency_bound_ms", 100}, {"max_batch", 1}});
  auto start = settings;
  start.target_qps = 1600;
  // 10x real time: the STOP (500 records, 0.5 s of virtual time) comes about 120 ms of real time
  // before the probe would fall behind on its own; at 100x that margin was 12 ms, and on a loaded
  // 2-core machine (session 30, a CI build beside it) the records reached the sink late enough
  // that the probe ended first and a second one began, every time.
  VirtualLoadServer server(start, VirtualService{1'000'000, 0}, kStart, 10, /*serve_after_stop_ns=*/0);
  load::LoadGenerator generator(start, server);
  StoppingSink sink(500);
  const load::PeakSearchOutcome outcome =
      load::RunPeakSearch(start, generator, server, server, sink, server, kStart + 1'000'000'000'000);
  const std::vector<record::QueryRecord> records = sink.records();
  EXPECT_EQ(outcome.reason, "stopped");
  ASSERT_EQ(outcome.probes.size(), 1u);
  const load::ProbeReport& p = outcome.probes[0];
  EXPECT_EQ(p.target_qps, 1600);
  EXPECT_GT(p.dropped, 0u);
  EXPECT_EQ(p.warmup_first_query, 0u);
  EXPECT_EQ(p.first_query, p.warmup_queries);
  EXPECT_EQ(p.first_query + p.queries, records.size());
  EXPECT_EQ(records.size() + p.dropped, outcome.issued);
  EXPECT_FALSE(p.passed);
  EXPECT_FALSE(p.cut);  // it fell behind: a failure, not a probe cut short of one
  EXPECT_FALSE(outcome.search.probes[0].issue_kept_up);
  const nlohmann::json json = outcome.ToJson();
  EXPECT_EQ(json["probes"][0]["dropped"], p.dropped);
  auto parsed = load::ParseProbeReports(json, 20);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ((*parsed)[0].dropped, p.dropped);
}

}  // namespace
}  // namespace dlbench::nullrunner
