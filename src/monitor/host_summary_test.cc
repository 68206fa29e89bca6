// SummarizeHost (host_summary.h) on hand-computed series, and on degenerate ones.
#include "monitor/host_summary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace dlbench::monitor {
namespace {

constexpr std::int64_t kS = 1'000'000'000;

TEST(HostSummaryTest, EveryFigureFromHandComputedSeries) {
  const std::vector<record::SeriesPoint> series = {
      // Three rounds over 2 s, given out of time order.
      {2 * kS, "host.cpu_busy_cores", 3.0},
      {1 * kS, "host.cpu_busy_cores", 1.0},
      {2 * kS, "host.mem_used_bytes", 900.0},
      {0, "host.mem_used_bytes", 1000.0},
      {1 * kS, "host.mem_used_bytes", 800.0},
      {1 * kS, "host.cpu_util_pct", 10.0},
      {2 * kS, "host.cpu_util_pct", 30.0},
      {0, "proc.cpu_s", 5.0},
      {1 * kS, "proc.cpu_s", 5.5},
      {2 * kS, "proc.cpu_s", 8.0},
      {0, "proc.rss_bytes", 100.0},
      {2 * kS, "proc.rss_bytes", 300.0},
      {0, "gpu1.sm_util_pct", 50.0},
      {1 * kS, "gpu1.sm_util_pct", 100.0},
      {0, "gpu1.power_w", 200.0},
      {1 * kS, "gpu1.power_w", 400.0},
      {2 * kS, "gpu1.power_w", 300.0},
      {2 * kS, "gpu1.mem_used_bytes", 7.0},
      {2 * kS, "gpu1.temp_c", 61.0},
      {2 * kS, "gpu10.temp_c", 40.0},
      {2 * kS, "gpux.odd", 1.0},  // not a GPU's: ignored
  };
  const nlohmann::json s = SummarizeHost(series);
  EXPECT_EQ(s["rounds"], 3);
  EXPECT_DOUBLE_EQ(s["span_s"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(s["host_cpu_busy_cores_mean"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(s["host_cpu_busy_cores_max"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(s["host_cpu_util_mean_pct"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(s["host_mem_peak_bytes"].get<double>(), 1000.0);
  EXPECT_DOUBLE_EQ(s["runner_cpu_cores"].get<double>(), 1.5);  // (8 - 5) CPU s over 2 s
  EXPECT_DOUBLE_EQ(s["runner_rss_peak_bytes"].get<double>(), 300.0);
  ASSERT_EQ(s["gpus"].size(), 2u) << s.dump();
  const nlohmann::json& g = s["gpus"][0];
  EXPECT_EQ(g["index"], 1);
  EXPECT_DOUBLE_EQ(g["util_mean_pct"].get<double>(), 75.0);
  EXPECT_DOUBLE_EQ(g["board_power_mean_w"].get<double>(), 300.0);
  EXPECT_DOUBLE_EQ(g["board_power_max_w"].get<double>(), 400.0);
  EXPECT_DOUBLE_EQ(g["mem_used_peak_bytes"].get<double>(), 7.0);
  EXPECT_DOUBLE_EQ(g["temp_peak_c"].get<double>(), 61.0);
  EXPECT_EQ(s["gpus"][1], (nlohmann::json{{"index", 10}, {"temp_peak_c", 40.0}}));
  EXPECT_LT(s.dump().size(), kMaxHostReportBytes);
}

TEST(HostSummaryTest, AbsentOrNaNSeriesGiveAbsentFiguresNeverZero) {
  EXPECT_EQ(SummarizeHost({}), (nlohmann::json{{"rounds", 0}}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // One round: no span, so no runner CPU; NaN readings count as none.
  const nlohmann::json one = SummarizeHost({{kS, "proc.cpu_s", 2.0},
                                            {kS, "host.mem_used_bytes", nan},
                                            {kS, "gpu0.power_w", nan},
                                            {kS, "host.cpu_busy_cores", 0.5}});
  EXPECT_EQ(one, (nlohmann::json{{"rounds", 1},
                                 {"span_s", 0.0},
                                 {"host_cpu_busy_cores_mean", 0.5},
                                 {"host_cpu_busy_cores_max", 0.5}}))
      << one.dump();
}

}  // namespace
}  // namespace dlbench::monitor
