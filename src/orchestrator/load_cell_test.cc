// A load cell's records in the orchestrator (load_cell.h): every id once, the metrics and the
// verdict from hand-made records whose figures are computed here.
#include "orchestrator/load_cell.h"

#include <gtest/gtest.h>

#include "record/metrics.h"
#include "record/series.h"

namespace dlbench::orchestrator {
namespace {

namespace metric = record::metric;
constexpr std::int64_t kStart = 1'200'000'000'000;

LoadCellSettings Settings(const nlohmann::json& params) {
  nlohmann::json p = params;
  p["scenario"] = "infer";
  auto s = LoadCellSettingsOf(p, 1);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return *s;
}

config::MeasureSettings Fast() {
  config::MeasureSettings s;
  s.min_time_s = 0;
  return s;
}

// Server queries arriving every `gap_ns`, each with latency `latency_ns(i)`.
protocol::QueryBatch Arrivals(std::uint64_t first, std::size_t n, std::int64_t gap_ns,
                              const std::function<std::int64_t(std::size_t)>& latency_ns) {
  protocol::QueryBatch b;
  for (std::size_t i = 0; i < n; ++i) {
    record::QueryRecord r;
    r.query_id = first + i;
    r.scheduled_ns = kStart + static_cast<std::int64_t>(first + i) * gap_ns;
    r.issued_ns = r.scheduled_ns;
    r.completed_ns = r.scheduled_ns + latency_ns(first + i);
    r.samples = 1;
    b.records.push_back(r);
  }
  return b;
}

TEST(LoadRecorderTest, DroppedAndRepeatedIdsAreNamed) {
  LoadRecorder load(Fast(), Settings({{"load", "single_stream"}}));
  auto one_ms = [](std::size_t) { return 1'000'000; };
  ASSERT_FALSE(load.Add(Arrivals(0, 10, 2'000'000, one_ms), true));
  EXPECT_EQ(load.IdProblems(10), "");
  ASSERT_FALSE(load.Add(Arrivals(12, 3, 2'000'000, one_ms), true));  // 10, 11 never arrive
  ASSERT_FALSE(load.Add(Arrivals(13, 1, 2'000'000, one_ms), true));  // 13 again
  EXPECT_EQ(load.record_count(), 13);
  EXPECT_EQ(load.IdProblems(15),
            "2 issued queries never arrived (query id 10, 11); 1 record repeated a query id already "
            "received (query id 13)");
  // DONE said 40 were issued: 15..39 are missing too; five are named.
  EXPECT_EQ(load.IdProblems(40).substr(0, 70),
            "27 issued queries never arrived (query id 10, 11, 15, 16, 17 and 22 mo");
  protocol::QueryBatch other_rank;
  other_rank.rank = 1;
  EXPECT_EQ(load.Add(other_rank, true),
            std::optional<std::string>("QUERIES of rank 1: a load cell has one rank"));
}

// 1000 server queries at 1000/s; latency 2 ms, except ids 100..109 at 30 ms (over a 10 ms bound).
// p99 = sorted[990] = 30 ms: over the bound, so the verdict is over_bound naming the figure.
TEST(ConcludeLoadTest, AServerOverItsBoundIsOverBoundNamingThePercentile) {
  config::MeasureSettings m = Fast();
  m.max_steps = 1000;  // the policy stops at the last query
  LoadRecorder load(m, Settings({{"load", "server"}, {"target_qps", 1000}, {"latency_bound_ms", 10}}));
  ASSERT_FALSE(load.Add(Arrivals(0, 1000, 1'000'000,
                                 [](std::size_t i) { return i >= 100 && i < 110 ? 30'000'000 : 2'000'000; }),
                        true));
  record::CellRecord rec;
  const LoadConclusion c = ConcludeLoad(load, 1000, "max_steps", "stopped", rec);
  ASSERT_FALSE(c.invalid);
  ASSERT_EQ(c.reasons.size(), 1u);
  EXPECT_EQ(c.reasons[0], "over_bound: p99 30 ms > latency_bound_ms 10 (10 of 1000 queries over)");
  EXPECT_EQ(rec.window, (record::MeasuredWindow{0, 1000}));
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kLoadQueries), 1000);
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kQueryLatencyP50Ns), 2e6);
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kQueryLatencyP99Ns), 30e6);
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kQueryLatencyMeanNs), (990 * 2e6 + 10 * 30e6) / 1000);
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kLoadLatencyBoundMet), 0);
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kLoadIssueKeptUp), 1);
  // 999 gaps of 1 ms: 1000 scheduled and issued per second.
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kLoadScheduledPerS), 1000);
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kLoadIssuedPerS), 1000);
  // (1000 - 1) samples over 999 ms + 2 ms (the last completion).
  EXPECT_NEAR(*record::MetricValue(rec, metric::kLoadCompletedSamplesPerS), 999 / 1.001, 1e-9);
  // Every record is stored as series, two points each (latency, delay).
  EXPECT_EQ(rec.series.size(), 2000u);
  EXPECT_EQ(rec.series[0].series, std::string(record::series::kLoadLatencyNs));
  EXPECT_EQ(rec.extras["load"]["headline"]["metric"], std::string(metric::kLoadCompletedSamplesPerS));
}

TEST(ConcludeLoadTest, AServerWithinItsBoundIsValidAndOneThatFellBehindIsNot) {
  config::MeasureSettings m = Fast();
  LoadRecorder load(m, Settings({{"load", "server"}, {"target_qps", 1000}, {"latency_bound_ms", 10}}));
  ASSERT_FALSE(load.Add(Arrivals(0, 600, 1'000'000, [](std::size_t) { return 3'000'000; }), true));
  record::CellRecord rec;
  const LoadConclusion c = ConcludeLoad(load, 600, "early_stopping", "stopped", rec);
  EXPECT_TRUE(c.reasons.empty()) << c.reasons[0];
  EXPECT_EQ(rec.window, (record::MeasuredWindow{0, 459}));  // the policy's early-stopping point
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kLoadEarlyStoppingMet), 1);
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kLoadEarlyStoppingQueriesNeeded), 459);
  record::CellRecord behind;
  EXPECT_EQ(ConcludeLoad(load, 600, "stopped", "too_many_outstanding", behind).reasons.at(0).substr(0, 12),
            "fell_behind:");
}

// A runner that fell behind ends with its last queries outstanding (the H200's ResNet-50 server at
// 4,000/s left 49,392 of them): fell_behind naming the count, not a protocol fault; a gap before the
// tail, or a runner that ended normally, still is one.
TEST(ConcludeLoadTest, QueriesOutstandingWhenTheRunnerEndedBehindAreFellBehindNotInvalid) {
  const LoadCellSettings server =
      Settings({{"load", "server"}, {"target_qps", 1000}, {"latency_bound_ms", 10}});
  auto rising = [](std::size_t i) { return static_cast<std::int64_t>(i) * 100'000; };  // queueing grows
  {
    LoadRecorder load(Fast(), server);
    ASSERT_FALSE(load.Add(Arrivals(0, 400, 1'000'000, rising), true));
    record::CellRecord rec;
    const LoadConclusion c = ConcludeLoad(load, 600, "max_time", "drain_timeout", rec);
    EXPECT_FALSE(c.invalid) << *c.invalid;
    ASSERT_FALSE(c.reasons.empty());
    EXPECT_EQ(c.reasons[0],
              "fell_behind: 200 of 600 issued queries were still outstanding when the runner ended "
              "(drain_timeout): the system under test fell behind the schedule; the latencies shown are "
              "of the 400 completed queries only");
    EXPECT_EQ(std::count_if(c.reasons.begin(), c.reasons.end(),
                            [](const std::string& r) { return r.rfind("fell_behind:", 0) == 0; }),
              1);
    EXPECT_EQ(rec.extras["load"]["queries_outstanding_at_end"], 200);
    EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kLoadIssueKeptUp), 0);
  }
  {
    LoadRecorder load(Fast(), server);
    ASSERT_FALSE(load.Add(Arrivals(0, 100, 1'000'000, rising), true));
    ASSERT_FALSE(load.Add(Arrivals(150, 250, 1'000'000, rising), true));  // 100..149 never arrive
    record::CellRecord rec;
    const LoadConclusion c = ConcludeLoad(load, 600, "max_time", "drain_timeout", rec);
    ASSERT_TRUE(c.invalid);
    EXPECT_NE(c.invalid->find("never arrived (query id 100, 101"), std::string::npos) << *c.invalid;
  }
  {
    LoadRecorder load(Fast(), server);
    ASSERT_FALSE(load.Add(Arrivals(0, 400, 1'000'000, rising), true));
    record::CellRecord rec;
    const LoadConclusion c = ConcludeLoad(load, 600, "max_time", "stopped", rec);
    ASSERT_TRUE(c.invalid);
    EXPECT_NE(c.invalid->find("200 issued queries never arrived"), std::string::npos) << *c.invalid;
  }
}

TEST(ConcludeLoadTest, ASingleStreamCellReportsItsEarlyStoppingEstimate) {
  LoadRecorder load(Fast(), Settings({{"load", "single_stream"}}));
  // Latencies 1..100 ms: h(1) + 1 = 64 queries measured (the policy's stop); the estimate is the
  // t-th largest of those 64 for the largest t with h(t) + t <= 64, t = 1: the largest, 64 ms.
  ASSERT_FALSE(
      load.Add(Arrivals(0, 100, 200'000'000, [](std::size_t i) { return (i + 1) * 1'000'000; }), true));
  record::CellRecord rec;
  const LoadConclusion c = ConcludeLoad(load, 100, "min_queries", "stopped", rec);
  EXPECT_TRUE(c.reasons.empty());
  EXPECT_EQ(rec.window->steps, 64);
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kQueryLatencyEarlyStoppingNs), 64e6);
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kQueryLatencyP90Ns), 58e6);  // sorted[floor(64 x 0.9)]
  EXPECT_EQ(rec.extras["load"]["headline"]["name"], "90th percentile latency (early stopping)");
}

TEST(ConcludeLoadTest, MissingIdsMakeTheCellInvalid) {
  LoadRecorder load(Fast(), Settings({{"load", "single_stream"}}));
  ASSERT_FALSE(load.Add(Arrivals(0, 70, 2'000'000, [](std::size_t) { return 1'000'000; }), true));
  record::CellRecord rec;
  const LoadConclusion c = ConcludeLoad(load, 72, "min_queries", "stopped", rec);
  ASSERT_TRUE(c.invalid);
  EXPECT_EQ(*c.invalid,
            "the runner's query records are not each issued query once: 2 issued queries never arrived "
            "(query id 70, 71)");
}

}  // namespace
}  // namespace dlbench::orchestrator
