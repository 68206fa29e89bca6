// Inference under load in the real dlbench-torch on the CPU, driven through its protocol pipes by
// runner_harness: every scenario on tiny models, each query id reported exactly once, and the
// server's records scheduled at the Poisson arrivals the cell's seed defines (so latency, which is
// completed - scheduled, counts from the arrival and not from the issue).
#include <gtest/gtest.h>

#include <string>

#include "load/schedule.h"
#include "load/settings.h"
#include "runner_harness.h"

namespace dlbench::torchrunner {
namespace {

using nlohmann::json;
using testing::CellTranscript;
using testing::HarnessOptions;
using testing::RunCell;

const std::string kRunner = std::string(DLBENCH_BIN_DIR) + "/dlbench-torch";

json Tiny(const std::string& model) {
  json p;
  if (model == "resnet50") p = {{"image_size", 32}, {"base_width", 8}, {"num_classes", 10}};
  if (model == "mobilenet_v2") p = {{"image_size", 64}, {"width_mult", 0.25}, {"num_classes", 10}};
  if (model == "ssd_mobilenet") p = {{"image_size", 64}, {"width_mult", 0.25}, {"num_classes", 5}};
  if (model == "bert_base") {
    p = {{"layers", 1},   {"hidden_size", 32}, {"heads", 2},
         {"seq_len", 16}, {"vocab_size", 100}, {"num_classes", 2}};
  }
  p["model"] = model;
  p["scenario"] = "infer";
  p["device"] = "cpu";
  p["precision"] = "fp32";
  p["batch_size"] = 4;
  p["threads"] = 1;
  p["sample_library_size"] = 16;
  return p;
}

CellTranscript RunLoadCell(json params, std::int64_t stop_after_queries = 60,
                           std::int64_t max_queries = 100'000) {
  protocol::CellConfig c;
  c.params = std::move(params);
  c.seed = 11;
  c.limits.max_steps = max_queries;
  c.limits.max_time_s = 120.0;
  HarnessOptions options;
  options.stop_after_queries = stop_after_queries;
  options.stop_after_steps = 1;  // a load cell must send no STEPS; if it did, it would stop at once
  auto t = RunCell(kRunner, c, options);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  if (!t.ok()) return {};
  EXPECT_TRUE(t->exit.success()) << t->exit.Describe();
  return std::move(*t);
}

// Ids 0, 1, 2, ... each once, in order, and every record internally consistent.
void ExpectWellFormed(const CellTranscript& t, std::uint32_t samples) {
  ASSERT_FALSE(t.error) << t.error->dump();
  ASSERT_TRUE(t.done);
  EXPECT_TRUE(t.steps.empty());
  ASSERT_GE(t.queries.size(), 60u);
  EXPECT_EQ(t.done->value("steps", -1), static_cast<std::int64_t>(t.queries.size()));
  for (std::size_t i = 0; i < t.queries.size(); ++i) {
    const protocol::QueryRecord& q = t.queries[i];
    ASSERT_EQ(q.query_id, i);
    EXPECT_EQ(q.samples, samples);
    EXPECT_LE(q.scheduled_ns, q.issued_ns);
    EXPECT_LE(q.issued_ns, q.completed_ns);
    EXPECT_GT(q.compute_ns, 0);
  }
}

TEST(TorchLoad, SingleStreamOnEveryModel) {
  for (const char* model : {"resnet50", "mobilenet_v2", "bert_base", "ssd_mobilenet"}) {
    json p = Tiny(model);
    p["load"] = "single_stream";
    const CellTranscript t = RunLoadCell(p);
    ExpectWellFormed(t, 1);
    ASSERT_TRUE(t.ready);
    const json& load = t.ready->at("load");
    EXPECT_EQ(load.value("scenario", ""), "single_stream") << model;
    EXPECT_EQ(load.value("input_residency", ""), "host");
    for (const protocol::QueryRecord& q : t.queries) {
      EXPECT_EQ(q.scheduled_ns, q.issued_ns);  // closed loop: scheduled when issued
      EXPECT_EQ(q.present, record::kQueryHasHostPre | record::kQueryHasCompute | record::kQueryHasHostPost);
      EXPECT_EQ(q.batch_samples, 1u);
    }
    for (std::size_t i = 1; i < t.queries.size(); ++i) {
      EXPECT_GE(t.queries[i].issued_ns, t.queries[i - 1].completed_ns) << model;  // one at a time
    }
  }
}

TEST(TorchLoad, MultiStreamRunsEachQueryAsOneBatch) {
  json p = Tiny("resnet50");
  p["load"] = "multi_stream";
  p["samples_per_query"] = 3;
  const CellTranscript t = RunLoadCell(p);
  ExpectWellFormed(t, 3);
  for (const protocol::QueryRecord& q : t.queries) EXPECT_EQ(q.batch_samples, 3u);
  EXPECT_EQ(t.ready->at("load").value("samples_per_query", 0), 3);
}

TEST(TorchLoad, OfflineServesAQueryInBatchesOfBatchSize) {
  json p = Tiny("mobilenet_v2");
  p["load"] = "offline";
  p["offline_samples"] = 10;  // parts of 4, 4, 2
  const CellTranscript t = RunLoadCell(p);
  ExpectWellFormed(t, 10);
  for (const protocol::QueryRecord& q : t.queries) EXPECT_EQ(q.batch_samples, 4u);
  const json& warmed = t.ready->at("load").at("warmed_batch_sizes");
  EXPECT_EQ(warmed, json::array({4, 2}));
}

TEST(TorchLoad, ServerArrivalsAreThePoissonScheduleOfTheCellSeed) {
  json p = Tiny("resnet50");
  p["load"] = "server";
  p["target_qps"] = 200;
  p["max_batch"] = 4;
  p["batch_timeout_us"] = 500;
  p["streams"] = 2;
  const CellTranscript t = RunLoadCell(p);
  ExpectWellFormed(t, 1);
  const json& load = t.ready->at("load");
  EXPECT_EQ(load.value("streams", 0), 2);
  EXPECT_EQ(load.value("latency_from", ""), "scheduled arrival (queueing and issue lateness count)");
  // Replay the schedule from the seeds the runner reported.
  load::EffectiveLoadSettings s;
  s.scenario = load::Scenario::kServer;
  s.target_qps = 200;
  s.schedule_seed = load.at("schedule_seed").get<std::uint64_t>();
  s.sample_seed = load.at("sample_seed").get<std::uint64_t>();
  load::QuerySchedule schedule(s, 16);
  const std::int64_t start = t.queries.front().scheduled_ns;
  for (const protocol::QueryRecord& q : t.queries) {
    ASSERT_EQ(q.scheduled_ns - start, schedule.Next().offset_ns) << q.query_id;
    EXPECT_GE(q.batch_samples, 1u);
    EXPECT_LE(q.batch_samples, 4u);
  }
}

TEST(TorchLoad, DeviceResidentInputTimesComputeOnly) {
  json p = Tiny("bert_base");
  p["load"] = "single_stream";
  p["input_residency"] = "device";
  const CellTranscript t = RunLoadCell(p);
  ExpectWellFormed(t, 1);
  EXPECT_EQ(t.ready->at("load").value("input_residency", ""), "device");
  for (const protocol::QueryRecord& q : t.queries) EXPECT_EQ(q.present, record::kQueryHasCompute);
}

TEST(TorchLoad, TheQueryCeilingEndsTheCell) {
  json p = Tiny("resnet50");
  p["load"] = "single_stream";
  const CellTranscript t = RunLoadCell(p, /*stop_after_queries=*/1'000'000, /*max_queries=*/25);
  ASSERT_TRUE(t.done);
  EXPECT_EQ(t.done->value("reason", ""), "max_steps");
  EXPECT_EQ(t.queries.size(), 25u);
}

// The peak search on the CPU within a time budget: which rates pass depends on the machine, so
// the test checks what must hold whatever they are: the bracketing's first steps, every record
// accounted to a probe's warm-up or measured window, and a measured window long enough for its
// claim wherever early stopping was met.
TEST(TorchLoad, PeakSearchAccountsEveryQueryToAProbe) {
  json p = Tiny("resnet50");
  p["load"] = "server";
  p["target_qps"] = "max";
  p["latency_bound_ms"] = 250;
  p["early_stopping_confidence"] = 0.6;  // h(0) = 92 queries at p99: short probes
  p["max_batch"] = 4;
  protocol::CellConfig c;
  c.params = p;
  c.seed = 11;
  c.limits.max_steps = 1'000'000;
  c.limits.max_time_s = 6.0;
  HarnessOptions options;
  options.stop_after_queries = 1'000'000'000;
  options.timeout_s = 120;
  auto t = RunCell(kRunner, c, options);
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_FALSE(t->error) << t->error->dump();
  ASSERT_TRUE(t->done);
  const std::string reason = t->done->value("reason", "");
  EXPECT_TRUE(reason == "max_time" || reason == "peak_search") << reason;
  ASSERT_FALSE(t->extras.empty());
  const json& search = t->extras.back().at("info").at("load").at("peak_search");
  const json& probes = search.at("probes");
  ASSERT_GE(probes.size(), 1u);
  EXPECT_EQ(probes[0].at("target_qps"), 100.0);
  if (probes.size() > 1) {
    EXPECT_EQ(probes[1].at("target_qps"), probes[0].at("passed").get<bool>() ? 200.0 : 50.0);
  }
  std::uint64_t next = 0;
  for (const json& probe : probes) {
    EXPECT_EQ(probe.at("warmup_first_query").get<std::uint64_t>(), next);
    next =
        probe.at("warmup_first_query").get<std::uint64_t>() + probe.at("warmup_queries").get<std::uint64_t>();
    EXPECT_EQ(probe.at("first_query").get<std::uint64_t>(), next);
    next += probe.at("queries").get<std::uint64_t>();
    if (probe.at("early_stopping_met").get<bool>()) {
      EXPECT_GE(probe.at("queries").get<int>(), 92);
    }
    if (probe.at("passed").get<bool>()) {
      EXPECT_LE(probe.at("latency_percentile_ms").get<double>(), 250.0);
    }
  }
  ASSERT_EQ(t->queries.size(), next);
  for (std::size_t i = 0; i < t->queries.size(); ++i) ASSERT_EQ(t->queries[i].query_id, i);
  EXPECT_EQ(t->done->value("steps", -1), static_cast<std::int64_t>(next));
}

TEST(TorchLoad, BadLoadCellsEndWithAnError) {
  struct Case {
    json change;
    std::string kind;
    std::string message;
  };
  const std::vector<Case> cases = {
      {json::object({{"load", "server"}}), "invalid", "needs target_qps"},
      {json::object({{"load", "single_stream"}, {"scenario", "train"}}), "invalid",
       "load needs scenario: infer"},
      {json::object({{"load", "single_stream"}, {"target_qps", 5}}), "invalid",
       "applies only with load: server"},
  };
  for (const Case& c : cases) {
    json p = Tiny("resnet50");
    p.update(c.change);
    const CellTranscript t = RunLoadCell(p);
    ASSERT_TRUE(t.error) << c.change.dump();
    EXPECT_EQ(t.error->value("kind", ""), c.kind) << c.change.dump();
    EXPECT_NE(t.error->value("message", "").find(c.message), std::string::npos) << t.error->dump();
    EXPECT_TRUE(t.queries.empty());
  }
}

}  // namespace
}  // namespace dlbench::torchrunner
