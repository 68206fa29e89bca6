#include "load/settings.h"

#include <gtest/gtest.h>

namespace dlbench::load {
namespace {

nlohmann::json Cell(const nlohmann::json& load_keys) {
  nlohmann::json p = {{"model", "m"}, {"scenario", "infer"}, {"batch_size", 4}};
  p.update(load_keys);
  return p;
}

TEST(LoadSettingsTest, DefaultsPerScenario) {
  auto ss = ResolveLoadSettings(Cell({{"load", "single_stream"}}), 7);
  ASSERT_TRUE(ss.ok()) << ss.error().message;
  EXPECT_EQ(ss->scenario, Scenario::kSingleStream);
  EXPECT_EQ(ss->samples_per_query, 1u);
  EXPECT_EQ(ss->max_batch, 1u);
  EXPECT_DOUBLE_EQ(ss->latency_percentile, 0.90);
  EXPECT_DOUBLE_EQ(ss->confidence, 0.99);
  EXPECT_EQ(ss->input_residency, InputResidency::kHost);

  auto ms = ResolveLoadSettings(Cell({{"load", "multi_stream"}}), 7);
  ASSERT_TRUE(ms.ok());
  EXPECT_EQ(ms->samples_per_query, 8u);
  EXPECT_EQ(ms->max_batch, 8u);
  EXPECT_FALSE(ms->query_interval_ns.has_value());
  EXPECT_DOUBLE_EQ(ms->latency_percentile, 0.99);

  auto server =
      ResolveLoadSettings(Cell({{"load", "server"}, {"target_qps", 250}, {"latency_bound_ms", 15}}), 7);
  ASSERT_TRUE(server.ok()) << server.error().message;
  EXPECT_DOUBLE_EQ(server->target_qps, 250.0);
  EXPECT_EQ(server->max_batch, 4u);  // = batch_size
  EXPECT_EQ(server->streams, 1u);
  EXPECT_EQ(server->batch_timeout_ns, 0);
  EXPECT_EQ(*server->latency_bound_ns, 15'000'000);

  auto offline = ResolveLoadSettings(Cell({{"load", "offline"}}), 7);
  ASSERT_TRUE(offline.ok());
  EXPECT_EQ(offline->samples_per_query, 24'576u);
  EXPECT_EQ(offline->max_batch, 4u);
}

TEST(LoadSettingsTest, ExplicitValuesAndUnits) {
  auto s = ResolveLoadSettings(Cell({{"load", "server"},
                                     {"target_qps", "max"},
                                     {"latency_bound_ms", 10.5},
                                     {"max_batch", 32},
                                     {"batch_timeout_us", 250},
                                     {"streams", 2},
                                     {"min_queries", 1000},
                                     {"early_stopping_confidence", 0.95},
                                     {"sample_library_size", 128},
                                     {"input_residency", "device"}}),
                               1);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_TRUE(s->peak_search);
  EXPECT_EQ(*s->latency_bound_ns, 10'500'000);
  EXPECT_EQ(s->max_batch, 32u);
  EXPECT_EQ(s->batch_timeout_ns, 250'000);
  EXPECT_EQ(s->streams, 2u);
  EXPECT_EQ(*s->min_queries, 1000);
  EXPECT_DOUBLE_EQ(s->confidence, 0.95);
  EXPECT_EQ(s->sample_library_size, 128u);
  EXPECT_EQ(s->input_residency, InputResidency::kDevice);
  const nlohmann::json j = s->ToJson();
  EXPECT_EQ(j["target_qps"], "max");
  EXPECT_EQ(j["latency_bound_ms"], 10.5);
  EXPECT_EQ(j["batch_timeout_us"], 250.0);
  // The search's bounds: the defaults, then each key read.
  EXPECT_EQ(s->peak_max_probes, kDefaultPeakMaxProbes);
  EXPECT_DOUBLE_EQ(s->peak_resolution, kDefaultPeakResolution);
  EXPECT_FALSE(s->peak_max_time_ns);
  EXPECT_EQ(s->peak_min_probe_ns, kDefaultPeakMinProbeNs);
  EXPECT_EQ(s->peak_confirm_ns, kDefaultPeakConfirmNs);
  EXPECT_EQ(s->ToJson()["peak_confirm_s"], 15.0);
  auto bounded = ResolveLoadSettings(Cell({{"load", "server"},
                                           {"target_qps", "max"},
                                           {"latency_bound_ms", 10},
                                           {"peak_max_probes", 7},
                                           {"peak_resolution", 0.02},
                                           {"peak_max_time_s", 30},
                                           {"peak_min_probe_s", 0},
                                           {"peak_confirm_s", 0}}),
                                     1);
  ASSERT_TRUE(bounded.ok()) << bounded.error().message;
  EXPECT_EQ(bounded->peak_max_probes, 7u);
  EXPECT_DOUBLE_EQ(bounded->peak_resolution, 0.02);
  EXPECT_EQ(*bounded->peak_max_time_ns, 30'000'000'000);
  EXPECT_EQ(bounded->ToJson()["peak_max_time_s"], 30.0);
  EXPECT_EQ(bounded->peak_min_probe_ns, 0);  // 0: the early-stopping minimum alone
  EXPECT_EQ(bounded->ToJson()["peak_min_probe_s"], 0.0);
  EXPECT_EQ(bounded->peak_confirm_ns, 0);  // 0: no confirmation
  EXPECT_EQ(bounded->ToJson()["peak_confirm_s"], 0.0);

  auto ms = ResolveLoadSettings(
      Cell({{"load", "multi_stream"}, {"samples_per_query", 4}, {"query_interval_ms", 50}}), 1);
  ASSERT_TRUE(ms.ok());
  EXPECT_EQ(ms->samples_per_query, 4u);
  EXPECT_EQ(*ms->query_interval_ns, 50'000'000);
  EXPECT_EQ(ms->ToJson()["latency_from"], "scheduled arrival (queueing and issue lateness count)");
}

TEST(LoadSettingsTest, SeedsDependOnTheCellSeedOnly) {
  auto a = ResolveLoadSettings(Cell({{"load", "single_stream"}}), 42);
  auto b = ResolveLoadSettings(Cell({{"load", "single_stream"}}), 42);
  auto c = ResolveLoadSettings(Cell({{"load", "single_stream"}}), 43);
  EXPECT_EQ(a->schedule_seed, b->schedule_seed);
  EXPECT_EQ(a->sample_seed, b->sample_seed);
  EXPECT_NE(a->schedule_seed, c->schedule_seed);
  EXPECT_NE(a->schedule_seed, a->sample_seed);
}

TEST(LoadSettingsTest, RulesAreCheckedAgainInTheRunner) {
  struct Case {
    nlohmann::json keys;
    std::string message;
  };
  const std::vector<Case> cases = {
      {nlohmann::json::object({{"load", "burst"}}), "must be one of single_stream"},
      {nlohmann::json::object({{"load", "server"}}), "needs target_qps"},
      {nlohmann::json::object({{"load", "server"}, {"target_qps", "max"}}), "needs latency_bound_ms"},
      {nlohmann::json::object({{"load", "server"}, {"target_qps", 0}}), "'target_qps' must be a number > 0"},
      {nlohmann::json::object({{"load", "server"}, {"target_qps", "fast"}}),
       "'target_qps' must be a number > 0"},
      {nlohmann::json::object({{"load", "server"}, {"target_qps", 5}, {"latency_bound_ms", 0}}),
       "'latency_bound_ms' must be a number > 0"},
      {nlohmann::json::object({{"load", "single_stream"}, {"target_qps", 5}}),
       "'target_qps' applies only with load: server"},
      {nlohmann::json::object({{"load", "offline"}, {"samples_per_query", 4}}),
       "applies only with load: multi_stream"},
      {nlohmann::json::object({{"load", "server"}, {"target_qps", 5}, {"offline_samples", 4}}),
       "applies only with load: offline"},
      {nlohmann::json::object({{"load", "offline"}, {"latency_percentile", 0.9}}),
       "single_stream or multi_stream or server"},
      {nlohmann::json::object({{"load", "server"}, {"target_qps", 5}, {"streams", 0}}),
       "'streams' must be an integer between 1 and 64"},
      {nlohmann::json::object({{"load", "single_stream"}, {"input_residency", "gpu"}}),
       "'input_residency' must be one of host, device"},
      {nlohmann::json::object({{"load", "single_stream"}, {"scenario", "train"}}),
       "load needs scenario: infer"},
      {nlohmann::json::object({{"load", "server"}, {"target_qps", 5}, {"peak_max_probes", 3}}),
       "'peak_max_probes' applies only with target_qps: max"},
      {nlohmann::json::object(
           {{"load", "server"}, {"target_qps", "max"}, {"latency_bound_ms", 5}, {"peak_max_probes", 101}}),
       "'peak_max_probes' must be an integer between 1 and 100"},
      {nlohmann::json::object(
           {{"load", "server"}, {"target_qps", "max"}, {"latency_bound_ms", 5}, {"peak_resolution", 0}}),
       "'peak_resolution' must be a number >= 0.001"},
      {nlohmann::json::object(
           {{"load", "server"}, {"target_qps", "max"}, {"latency_bound_ms", 5}, {"peak_max_time_s", -1}}),
       "'peak_max_time_s' must be a number > 0"},
      {nlohmann::json::object(
           {{"load", "server"}, {"target_qps", "max"}, {"latency_bound_ms", 5}, {"peak_min_probe_s", 3601}}),
       "'peak_min_probe_s' must be a number >= 0.0 and <= 3600.0"},
      {nlohmann::json::object({{"load", "server"}, {"target_qps", 5}, {"peak_min_probe_s", 2}}),
       "'peak_min_probe_s' applies only with target_qps: max"},
      {nlohmann::json::object(
           {{"load", "server"}, {"target_qps", "max"}, {"latency_bound_ms", 5}, {"peak_confirm_s", 3601}}),
       "'peak_confirm_s' must be a number >= 0.0 and <= 3600.0"},
      {nlohmann::json::object({{"load", "server"}, {"target_qps", 5}, {"peak_confirm_s", 15}}),
       "'peak_confirm_s' applies only with target_qps: max"},
  };
  for (const Case& c : cases) {
    auto s = ResolveLoadSettings(Cell(c.keys), 1);
    ASSERT_FALSE(s.ok()) << c.keys.dump();
    EXPECT_EQ(s.error().kind, ErrorKind::kInvalidInput);
    EXPECT_NE(s.error().message.find(c.message), std::string::npos)
        << c.keys.dump() << ": " << s.error().message;
  }
  EXPECT_FALSE(LoadRequested(Cell(nlohmann::json::object())));
  EXPECT_FALSE(LoadRequested(Cell(nlohmann::json::object({{"load", nullptr}}))));
  EXPECT_TRUE(LoadRequested(Cell({{"load", "offline"}})));
}

}  // namespace
}  // namespace dlbench::load
