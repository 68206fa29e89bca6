#include "orchestrator/load_decomposition.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "record/metrics.h"
#include "stats/descriptive.h"
#include "stats/latency.h"

namespace dlbench::orchestrator {
namespace {

namespace metric = record::metric;

struct Part {
  std::uint32_t bit;  // 0: the derived queue part, carried by every query
  std::int64_t record::QueryRecord::*field;
  std::string_view mean;
  std::string_view p99;
  std::string_view share;
};

constexpr Part kParts[] = {
    {record::kQueryHasHostPre, &record::QueryRecord::host_pre_ns, metric::kQueryHostPreMeanNs,
     metric::kQueryHostPreP99Ns, metric::kQueryHostPreSharePct},
    {record::kQueryHasH2d, &record::QueryRecord::h2d_ns, metric::kQueryH2dMeanNs, metric::kQueryH2dP99Ns,
     metric::kQueryH2dSharePct},
    {record::kQueryHasCompute, &record::QueryRecord::compute_ns, metric::kQueryComputeMeanNs,
     metric::kQueryComputeP99Ns, metric::kQueryComputeSharePct},
    {record::kQueryHasD2h, &record::QueryRecord::d2h_ns, metric::kQueryD2hMeanNs, metric::kQueryD2hP99Ns,
     metric::kQueryD2hSharePct},
    {record::kQueryHasHostPost, &record::QueryRecord::host_post_ns, metric::kQueryHostPostMeanNs,
     metric::kQueryHostPostP99Ns, metric::kQueryHostPostSharePct},
};

// The queue part of one query: its latency less every part it carries.
double QueuePart(const record::QueryRecord& r) {
  std::int64_t parts = 0;
  for (const Part& p : kParts) {
    if (r.present & p.bit) parts += r.*p.field;
  }
  return static_cast<double>(r.completed_ns - r.scheduled_ns - parts);
}

void Summarise(std::vector<double> values, double mean_latency, std::string_view mean_name,
               std::string_view p99_name, std::string_view share_name, record::CellRecord& rec) {
  if (values.empty()) return;
  const double mean = stats::ComputeMoments(values).mean;
  std::sort(values.begin(), values.end());
  record::SetMetric(rec, mean_name, mean);
  record::SetMetric(rec, p99_name, stats::LoadGenPercentileSorted(values, 0.99));
  if (mean_latency > 0 && std::isfinite(mean_latency))
    record::SetMetric(rec, share_name, mean / mean_latency * 100);
}

}  // namespace

void AddLatencyDecomposition(const std::vector<record::QueryRecord>& records, std::size_t begin,
                             std::size_t end, record::CellRecord& rec) {
  end = std::min(end, records.size());
  if (begin >= end) return;
  std::vector<double> latencies, queue;
  latencies.reserve(end - begin);
  queue.reserve(end - begin);
  for (std::size_t i = begin; i < end; ++i) {
    latencies.push_back(static_cast<double>(records[i].completed_ns - records[i].scheduled_ns));
    queue.push_back(QueuePart(records[i]));
  }
  const double mean_latency = stats::ComputeMoments(latencies).mean;
  Summarise(std::move(queue), mean_latency, metric::kQueryQueueMeanNs, metric::kQueryQueueP99Ns,
            metric::kQueryQueueSharePct, rec);
  for (const Part& p : kParts) {
    std::vector<double> values;
    for (std::size_t i = begin; i < end; ++i) {
      if (records[i].present & p.bit) values.push_back(static_cast<double>(records[i].*p.field));
    }
    Summarise(std::move(values), mean_latency, p.mean, p.p99, p.share, rec);
  }
}

}  // namespace dlbench::orchestrator
