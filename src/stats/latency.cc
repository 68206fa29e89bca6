#include "stats/latency.h"

#include <algorithm>
#include <numeric>

#include "stats/descriptive.h"

namespace dlbench::stats {

double LoadGenPercentileSorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty() || !(p >= 0.0 && p < 1.0)) return NAN;
  const auto index = static_cast<std::size_t>(static_cast<double>(sorted.size()) * p);
  return sorted[std::min(index, sorted.size() - 1)];
}

LatencySummary SummarizeLatencies(std::vector<double> latencies) {
  LatencySummary s;
  s.count = latencies.size();
  if (latencies.empty()) return s;
  std::sort(latencies.begin(), latencies.end());
  s.min = latencies.front();
  s.max = latencies.back();
  s.mean = ComputeMoments(latencies).mean;
  s.p50 = LoadGenPercentileSorted(latencies, 0.50);
  s.p90 = LoadGenPercentileSorted(latencies, 0.90);
  s.p95 = LoadGenPercentileSorted(latencies, 0.95);
  s.p97 = LoadGenPercentileSorted(latencies, 0.97);
  s.p99 = LoadGenPercentileSorted(latencies, 0.99);
  s.p999 = LoadGenPercentileSorted(latencies, 0.999);
  return s;
}

double RatePerSecond(std::size_t n, std::int64_t first_ns, std::int64_t last_ns) {
  if (n < 2 || last_ns <= first_ns) return NAN;
  return static_cast<double>(n - 1) / (static_cast<double>(last_ns - first_ns) * 1e-9);
}

IssueRateCheck CheckIssueRate(const std::vector<std::int64_t>& scheduled_ns,
                              const std::vector<std::int64_t>& issued_ns, double tolerance) {
  IssueRateCheck c;
  const std::size_t n = std::min(scheduled_ns.size(), issued_ns.size());
  if (n < 2) return c;
  const auto [s_lo, s_hi] = std::minmax_element(scheduled_ns.begin(), scheduled_ns.begin() + n);
  const auto [i_lo, i_hi] = std::minmax_element(issued_ns.begin(), issued_ns.begin() + n);
  c.scheduled_per_s = RatePerSecond(n, *s_lo, *s_hi);
  c.achieved_per_s = RatePerSecond(n, *i_lo, *i_hi);
  // All issued at one instant (the clock did not move) is an infinite rate: it kept up.
  if (std::isnan(c.achieved_per_s) && *i_hi == *i_lo) c.achieved_per_s = INFINITY;
  c.kept_up = !std::isnan(c.scheduled_per_s) && c.achieved_per_s >= (1.0 - tolerance) * c.scheduled_per_s;
  return c;
}

}  // namespace dlbench::stats
