#include "monitor/gpu_attribution.h"

#include <gtest/gtest.h>

namespace dlbench::monitor {
namespace {

// Monitor::Describe() of a host with two GPUs, as the NVML sampler writes it.
nlohmann::json TwoGpuHost() {
  return {{"nvml",
           {{"state", "ok"},
            {"facts",
             {{"devices",
               {{{"index", 0}, {"uuid", "GPU-aaaaaaaa-0000-0000-0000-000000000000"}},
                {{"index", 1}, {"uuid", "GPU-BBBBBBBB-1111-1111-1111-111111111111"}}}}}}}}};
}

TEST(GpuAttributionTest, UuidPicksTheNvmlIndexWhateverTheCaseOrPrefix) {
  // CUDA_VISIBLE_DEVICES=1 makes NVML's GPU 1 the runner's cuda:0: only the UUID tells.
  auto a = AttributeGpus({{"device", "cuda:0"},
                          {"device_uuids", nlohmann::json::array({"bbbbbbbb-1111-1111-1111-111111111111"})}},
                         TwoGpuHost());
  ASSERT_TRUE(a.nvml_indices.has_value()) << a.note;
  EXPECT_EQ(*a.nvml_indices, std::vector<int>{1});
  EXPECT_NE(a.note.find("gpu1"), std::string::npos) << a.note;

  auto both =
      AttributeGpus({{"device_uuids", nlohmann::json::array({"GPU-BBBBBBBB-1111-1111-1111-111111111111",
                                                             "GPU-aaaaaaaa-0000-0000-0000-000000000000"})}},
                    TwoGpuHost());
  EXPECT_EQ(*both.nvml_indices, (std::vector<int>{0, 1}));
}

TEST(GpuAttributionTest, NoUuidsMeansEveryGpuAndAnEmptyListMeansNone) {
  auto silent = AttributeGpus({{"device", "cuda"}}, TwoGpuHost());
  EXPECT_FALSE(silent.nvml_indices.has_value());
  EXPECT_NE(silent.note.find("named no device_uuids"), std::string::npos);

  auto cpu = AttributeGpus({{"device", "cpu"}, {"device_uuids", nlohmann::json::array()}}, TwoGpuHost());
  ASSERT_TRUE(cpu.nvml_indices.has_value());
  EXPECT_TRUE(cpu.nvml_indices->empty());
}

TEST(GpuAttributionTest, UnknownUuidFallsBackToEveryGpuAndSaysSo) {
  auto a = AttributeGpus(
      {{"device_uuids", nlohmann::json::array({"GPU-cccccccc-2222-2222-2222-222222222222"})}}, TwoGpuHost());
  EXPECT_FALSE(a.nvml_indices.has_value());
  EXPECT_NE(a.note.find("cccccccc"), std::string::npos) << a.note;
  // No NVML at all (a CPU-only host): nothing to map, nothing sampled.
  auto none =
      AttributeGpus({{"device_uuids", nlohmann::json::array({"GPU-aaaaaaaa-0000-0000-0000-000000000000"})}},
                    {{"nvml", {{"state", "unsupported: libnvidia-ml.so.1 not found"}, {"facts", {}}}}});
  EXPECT_FALSE(none.nvml_indices.has_value());
}

TEST(GpuAttributionTest, KeepGpuSeriesDropsOtherGpusOnly) {
  std::vector<record::SeriesPoint> series = {{1, "gpu0.power_w", 100.0}, {1, "gpu1.power_w", 650.0},
                                             {1, "gpu10.power_w", 90.0}, {1, "host.cpu_util_pct", 5.0},
                                             {1, "proc.rss_bytes", 1e9}, {1, "gpux.odd", 1.0}};
  KeepGpuSeries(series, {1});
  std::vector<std::string> names;
  for (const auto& p : series) names.push_back(p.series);
  EXPECT_EQ(names,
            (std::vector<std::string>{"gpu1.power_w", "host.cpu_util_pct", "proc.rss_bytes", "gpux.odd"}));
  KeepGpuSeries(series, {});
  EXPECT_EQ(series.size(), 3u);
}

}  // namespace
}  // namespace dlbench::monitor
