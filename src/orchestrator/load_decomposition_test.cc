// The latency decomposition (load_decomposition.h) from hand-made records whose figures are
// computed here.
#include "orchestrator/load_decomposition.h"

#include <gtest/gtest.h>

#include "record/metrics.h"

namespace dlbench::orchestrator {
namespace {

namespace metric = record::metric;
constexpr std::int64_t kStart = 1'200'000'000'000;

// 100 queries of latency 4 ms on the GPU path: H2D 0.5 ms, compute 2 ms (query 99: 12 ms, and its
// latency 14 ms), D2H 0.25 ms, no host parts; the queue is the rest: 1.25 ms each.
std::vector<record::QueryRecord> GpuQueries() {
  std::vector<record::QueryRecord> out;
  for (std::uint64_t i = 0; i < 100; ++i) {
    record::QueryRecord r;
    r.query_id = i;
    r.scheduled_ns = kStart + static_cast<std::int64_t>(i) * 10'000'000;
    r.issued_ns = r.scheduled_ns;
    r.h2d_ns = 500'000;
    r.compute_ns = i == 99 ? 12'000'000 : 2'000'000;
    r.d2h_ns = 250'000;
    r.completed_ns = r.scheduled_ns + (i == 99 ? 14'000'000 : 4'000'000);
    r.present = record::kQueryHasH2d | record::kQueryHasCompute | record::kQueryHasD2h;
    r.samples = 1;
    out.push_back(r);
  }
  return out;
}

TEST(LatencyDecompositionTest, EachPartsMeanP99AndShareOfTheMeanLatency) {
  record::CellRecord rec;
  AddLatencyDecomposition(GpuQueries(), 0, 100, rec);
  // Mean latency (99 x 4 + 14) / 100 = 4.1 ms; mean compute (99 x 2 + 12) / 100 = 2.1 ms.
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kQueryComputeMeanNs), 2.1e6);
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kQueryComputeSharePct), 2.1 / 4.1 * 100);
  // LoadGen's p99 of 100 values is sorted[99]: the 12 ms one.
  EXPECT_EQ(*record::MetricValue(rec, metric::kQueryComputeP99Ns), 12e6);
  EXPECT_EQ(*record::MetricValue(rec, metric::kQueryH2dMeanNs), 0.5e6);
  EXPECT_EQ(*record::MetricValue(rec, metric::kQueryH2dP99Ns), 0.5e6);
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kQueryH2dSharePct), 0.5 / 4.1 * 100);
  EXPECT_EQ(*record::MetricValue(rec, metric::kQueryD2hMeanNs), 0.25e6);
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kQueryQueueMeanNs), 1.25e6);
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kQueryQueueP99Ns), 1.25e6);
  double shares = 0;
  for (auto name : {metric::kQueryQueueSharePct, metric::kQueryH2dSharePct, metric::kQueryComputeSharePct,
                    metric::kQueryD2hSharePct}) {
    shares += *record::MetricValue(rec, name);
  }
  EXPECT_NEAR(shares, 100, 1e-9);  // the parts and the queue add up to the latency
  // Parts no record carries are left out, not zero.
  EXPECT_FALSE(record::MetricValue(rec, metric::kQueryHostPreMeanNs));
  EXPECT_FALSE(record::MetricValue(rec, metric::kQueryHostPostSharePct));
}

TEST(LatencyDecompositionTest, AWindowInsideTheRecordsAndDegenerateRanges) {
  const std::vector<record::QueryRecord> q = GpuQueries();
  record::CellRecord rec;
  AddLatencyDecomposition(q, 90, 99, rec);  // without query 99
  EXPECT_EQ(*record::MetricValue(rec, metric::kQueryComputeMeanNs), 2e6);
  EXPECT_EQ(*record::MetricValue(rec, metric::kQueryComputeP99Ns), 2e6);
  EXPECT_DOUBLE_EQ(*record::MetricValue(rec, metric::kQueryComputeSharePct), 50);

  record::CellRecord one;
  AddLatencyDecomposition(q, 99, 100, one);
  EXPECT_EQ(*record::MetricValue(one, metric::kQueryComputeP99Ns), 12e6);
  EXPECT_DOUBLE_EQ(*record::MetricValue(one, metric::kQueryQueueMeanNs), 1.25e6);

  record::CellRecord none;
  AddLatencyDecomposition(q, 50, 50, none);
  AddLatencyDecomposition(q, 100, 200, none);
  EXPECT_TRUE(none.metrics.empty());
}

}  // namespace
}  // namespace dlbench::orchestrator
