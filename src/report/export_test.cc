#include "report/export.h"

#include <gtest/gtest.h>

#include "report/test_store.h"

namespace dlbench::report {
namespace {

using testing::MakeCell;

record::RunRecord SampleRun() {
  record::RunRecord run;
  run.id = 7;
  run.name = "nightly";
  run.status = record::RunStatus::kCompleted;
  run.started_wall_ns = 1'700'000'000'000'000'000;
  run.environment = {{"hostname", "box"}, {"os", "Debian 12"}};
  run.environment_hash = "abc123";
  run.tags = {"baseline"};
  return run;
}

TEST(RunToJson, CarriesRunEnvironmentAndEveryCellField) {
  auto a = MakeCell(7, 0, "resnet50", 32, 1200.5);
  a.metrics.push_back({"step_time_mean_ns", 2.5e7, "ns"});
  a.verdict_reasons = nlohmann::json::array({"noisy"});
  a.window = record::MeasuredWindow{5, 20};
  a.effective = {{"threads", 4}};
  auto b = MakeCell(7, 1, "resnet50", 64, 0);
  b.outcome = record::Outcome::kOom;
  b.metrics = {{"bad", std::nan(""), "ratio"}};
  const nlohmann::json j = RunToJson(SampleRun(), {a, b});
  EXPECT_EQ(j["format"], kExportFormat);
  EXPECT_EQ(j["run"]["id"], 7);
  EXPECT_EQ(j["run"]["environment"]["os"], "Debian 12");
  EXPECT_EQ(j["run"]["started_utc"], "2023-11-14T22:13:20Z");
  EXPECT_TRUE(j["run"]["finished_utc"].is_null());
  EXPECT_EQ(j["run"]["selection"], nlohmann::json::object()) << "the whole matrix";
  record::RunRecord sharded = SampleRun();
  sharded.selection = {{"model=resnet50"}, "1/2"};
  EXPECT_EQ(RunToJson(sharded, {})["run"]["selection"],
            nlohmann::json::parse(R"({"only": ["model=resnet50"], "shard": "1/2"})"));
  ASSERT_EQ(j["cells"].size(), 2u);
  const auto& c0 = j["cells"][0];
  EXPECT_EQ(c0["params"]["batch_size"], 32);
  EXPECT_EQ(c0["effective"]["threads"], 4);
  EXPECT_EQ(c0["outcome"], "ok");
  EXPECT_EQ(c0["verdict_reasons"][0], "noisy");
  EXPECT_EQ(c0["warmup_steps"], 5);
  EXPECT_DOUBLE_EQ(c0["metrics"]["samples_per_s"]["value"].get<double>(), 1200.5);
  EXPECT_EQ(c0["metrics"]["step_time_mean_ns"]["unit"], "ns");
  EXPECT_EQ(j["cells"][1]["outcome"], "oom");
  EXPECT_TRUE(j["cells"][1]["warmup_steps"].is_null());
  // NaN has no JSON spelling: null, and the document still serialises.
  EXPECT_TRUE(j["cells"][1]["metrics"]["bad"]["value"].is_null());
  EXPECT_NO_THROW((void)j.dump());
}

TEST(CellsToCsv, OneRowPerCellWithUnionOfParamsAndMetrics) {
  auto a = MakeCell(7, 0, "bert, base", 8, 100);
  a.metrics.push_back({"step_time_p99_ns", 1e6, "ns"});
  auto b = MakeCell(7, 1, "mobilenet", 16, 0.25);
  b.params["extra"] = "x";
  b.message = "said \"no\"";
  const std::string csv = CellsToCsv({a, b});
  const std::string header =
      "run_id,index,cell_id,key,label,repetition,seed,outcome,verdict,verdict_reasons,message,param.batch_"
      "size,"
      "param.device,param.extra,param.model,param.precision,param.scenario,param.strategy,samples_per_s,"
      "step_time_p99_ns\n";
  ASSERT_EQ(csv.substr(0, header.size()), header);
  EXPECT_NE(csv.find(",8,cpu,,\"bert, base\",fp32,train,none,100,1000000\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\"said \"\"no\"\"\",16,cpu,x,mobilenet,fp32,train,none,0.25,\n"), std::string::npos)
      << csv;
  // Header plus two rows.
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
}

TEST(CellsToCsv, NoCellsGivesTheFixedHeaderOnly) {
  EXPECT_EQ(CellsToCsv({}),
            "run_id,index,cell_id,key,label,repetition,seed,outcome,verdict,verdict_reasons,message\n");
}

TEST(SeriesUnit, FromSuffix) {
  const std::pair<std::string, std::string> cases[] = {
      {"gpu0.power_w", "W"},   {"gpu0.sm_util_pct", "%"},
      {"proc.rss_bytes", "B"}, {"gpu0.sm_clock_mhz", "MHz"},
      {"gpu0.temp_c", "C"},    {"host.net_bytes_per_s", "B/s"},
      {"host.load", ""},       {"gpu0.energy_j", "J"},
  };
  for (const auto& [name, unit] : cases) EXPECT_EQ(SeriesUnit(name), unit) << name;
}

TEST(SeriesToCsv, OneRowPerInstantTimeFromFirstStep) {
  auto c = MakeCell(7, 3, "m", 1, 1);
  c.cell_id = "m-bs1#r0";
  c.steps.push_back({0, record::StepRecord{1'000'000'000, 1'100'000'000}});
  c.series = {{1'000'000'000, "gpu0.power_w", 250},
              {1'000'000'000, "gpu0.sm_util_pct", 90},
              {1'500'000'000, "gpu0.power_w", 260}};
  const std::string csv = SeriesToCsv({c});
  EXPECT_EQ(csv,
            "cell,cell_id,t_ns,t_s,gpu0.power_w [W],gpu0.sm_util_pct [%]\n"
            "3," +
                c.cell_id +
                ",1000000000,0,250,90\n"
                "3," +
                c.cell_id + ",1500000000,0.5,260,\n");
}

TEST(CellOriginNs, StepsThenSeriesThenZero) {
  record::CellRecord c;
  EXPECT_EQ(CellOriginNs(c), 0);
  c.series = {{50, "x", 1}, {40, "x", 1}};
  EXPECT_EQ(CellOriginNs(c), 40);
  c.steps = {{1, record::StepRecord{70, 80}}, {0, record::StepRecord{60, 90}}};
  EXPECT_EQ(CellOriginNs(c), 60);
}

TEST(FormatNumber, ShortestRoundTripAndSpecials) {
  EXPECT_EQ(FormatNumber(0.1), "0.1");
  EXPECT_EQ(FormatNumber(1e-9), "1e-09");
  EXPECT_EQ(FormatNumber(1200), "1200");
  EXPECT_EQ(FormatNumber(std::nan("")), "NaN");
  EXPECT_EQ(FormatNumber(-1.0 / 0.0), "-Inf");
}

}  // namespace
}  // namespace dlbench::report
