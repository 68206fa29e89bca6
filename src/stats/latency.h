// Per-query latency statistics as MLPerf LoadGen reports them (mlcommons/inference
// loadgen/results.cc, PerformanceSummary::ProcessLatencies and the QPS figures), and the check
// that a load generator kept up with its schedule. Pure functions in double; no I/O.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dlbench::stats {

// LoadGen's percentile of an ascending-sorted sample: sorted[floor(n p)], the index computed as
// LoadGen does (size_t(n * p) in double). Not type 7 (no interpolation), and not trtexec's rule
// (sorted[max(n - 1 - floor((1 - p) n), 0)]). Empty input, or p outside [0, 1) or NaN -> NaN.
double LoadGenPercentileSorted(const std::vector<double>& sorted, double p);

// The latency figures of LoadGen's summary: min, max, mean and the percentiles 50, 90, 95, 97,
// 99 and 99.9, LoadGen's index rule. Mean in double over the values (LoadGen's is an integer
// division of an integer sum). count 0: every figure NaN.
struct LatencySummary {
  std::size_t count = 0;
  double min = NAN;
  double max = NAN;
  double mean = NAN;
  double p50 = NAN;
  double p90 = NAN;
  double p95 = NAN;
  double p97 = NAN;
  double p99 = NAN;
  double p999 = NAN;
};
LatencySummary SummarizeLatencies(std::vector<double> latencies);

// Throughput over a time range with LoadGen's convention: (n - 1) / (last - first), "the start of
// the final sample represents the open end of the time range". Times in ns; result per second.
// NaN for n < 2 or a range that is not positive.
double RatePerSecond(std::size_t n, std::int64_t first_ns, std::int64_t last_ns);

// Whether the load generator issued queries as fast as its schedule asked (issue 11: "a target
// rate the runner cannot issue is INVALID, naming the achieved issue rate"). Both rates use
// RatePerSecond over the same queries: scheduled from the first to the last scheduled time,
// achieved from the first to the last issue time. kept_up when achieved >= (1 - tolerance) x
// scheduled. Fewer than two queries: both NaN and kept_up false (nothing shows it kept up).
struct IssueRateCheck {
  double scheduled_per_s = NAN;
  double achieved_per_s = NAN;
  bool kept_up = false;
};
IssueRateCheck CheckIssueRate(const std::vector<std::int64_t>& scheduled_ns,
                              const std::vector<std::int64_t>& issued_ns, double tolerance);

}  // namespace dlbench::stats
