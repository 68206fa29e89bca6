// The report module end to end through the real dlbench binary: export in every format from a
// database written through the store API, and report/export of a run made by `dlbench run` with
// the null runner.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report_e2e_util.h"

namespace dlbench::e2e {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// `dlbench run` of the matrix `yaml` into `db`, then `dlbench report latest`: the report's HTML, ""
// after a failure (which the test has been told of).
std::string RunAndReport(const TempDir& dir, const std::string& db, const std::string& yaml) {
  WriteText(dir / "m.yaml", yaml);
  auto run = Dlbench({"run", dir / "m.yaml", "--out", dir / "out"}, dir, db);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  auto report = Dlbench({"report", "latest", "-o", dir / "report.html"}, dir, db);
  EXPECT_EQ(report.exit_code, 0) << report.err;
  auto html = ReadFile(dir / "report.html");
  EXPECT_TRUE(html.ok());
  return html.ok() ? *html : "";
}

TEST(ReportE2E, ExportJsonCarriesEveryCellAndTheEnvironment) {
  TempDir dir("export_json");
  const std::string db = dir / "r.db";
  const ReportDb ids = WriteReportDb(db);
  auto r = Dlbench({"export", std::to_string(ids.run), "--format", "json"}, dir, db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format"], "dlbench.export/2");
  EXPECT_EQ(j["run"]["id"], ids.run);
  EXPECT_EQ(j["run"]["environment"]["host"]["hostname"], "e2e-host");
  ASSERT_EQ(j["cells"].size(), 12u);
  EXPECT_EQ(j["cells"][0]["params"]["model"], kHostileModel);
  EXPECT_DOUBLE_EQ(j["cells"][4]["metrics"]["samples_per_s"]["value"].get<double>(), 100.0);
  EXPECT_EQ(j["cells"][4]["metrics"]["samples_per_s"]["unit"], "1/s");
}

TEST(ReportE2E, ExportCsvOneRowPerCell) {
  TempDir dir("export_csv");
  const std::string db = dir / "r.db";
  const ReportDb ids = WriteReportDb(db);
  auto r = Dlbench({"export", std::to_string(ids.run), "--format", "csv", "-o", dir / "cells.csv"}, dir, db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto text = ReadFile(dir / "cells.csv");
  ASSERT_TRUE(text.ok());
  const auto lines = Lines(*text);
  ASSERT_EQ(lines.size(), 13u);
  EXPECT_NE(lines[0].find("param.batch_size"), std::string::npos);
  EXPECT_NE(lines[0].find("samples_per_s"), std::string::npos);
  EXPECT_NE(lines[1].find(kHostileModel), std::string::npos);  // CSV holds text as it is
}

TEST(ReportE2E, ExportSeriesOneRowPerSampleWithUnits) {
  TempDir dir("export_series");
  const std::string db = dir / "r.db";
  const ReportDb ids = WriteReportDb(db);
  auto one = Dlbench({"export", std::to_string(ids.run), "--series", "--cell", "2"}, dir, db);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto lines = Lines(one.out);
  ASSERT_EQ(lines.size(), 11u);  // header + 10 sampling instants
  EXPECT_EQ(lines[0], "cell,cell_id,t_ns,t_s,gpu0.mem_used_bytes [B],gpu0.power_w [W],gpu0.sm_util_pct [%]");
  EXPECT_EQ(lines[1].rfind("2,", 0), 0u);
  auto all = Dlbench({"export", std::to_string(ids.run), "--series"}, dir, db);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(Lines(all.out).size(), 121u);
  auto missing = Dlbench({"export", std::to_string(ids.run), "--series", "--cell", "99"}, dir, db);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no cell with index 99"), std::string::npos);
}

TEST(ReportE2E, ExportPrometheusTextfile) {
  TempDir dir("export_prom");
  const std::string db = dir / "r.db";
  const ReportDb ids = WriteReportDb(db);
  auto r = Dlbench({"export", std::to_string(ids.run), "--format", "prometheus", "-o", dir / "dlbench.prom"},
                   dir, db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto text = ReadFile(dir / "dlbench.prom");
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("# TYPE dlbench_samples_per_second gauge"), std::string::npos);
  EXPECT_NE(
      text->find(
          "dlbench_cell_regression{model=\"resnet50\",scenario=\"train\",batch_size=\"8\",precision=\"fp32\","
          "device=\"cpu\",strategy=\"none\",host=\"e2e-host\",variant=\"\"} 1\n"),
      std::string::npos)
      << *text;
  EXPECT_NE(text->find("dlbench_gpu_util_mean_ratio{"), std::string::npos);
  EXPECT_EQ(text->find("dlbench_run_active"), std::string::npos);  // a file describes no live run
}

TEST(ReportE2E, ExportTraceWindow) {
  TempDir dir("export_trace");
  const std::string db = dir / "r.db";
  const ReportDb ids = WriteReportDb(db);
  auto r = Dlbench({"export", std::to_string(ids.run), "--format", "trace", "--cell", "1", "--steps", "5:10"},
                   dir, db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  int steps = 0, phases = 0, counters = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "step") ++steps;
    if (e["ph"] == "X" && e["cat"] == "phase") ++phases;
    if (e["ph"] == "C") ++counters;
    if (e.contains("pid")) {
      EXPECT_EQ(e["pid"], 2);
    }
  }
  EXPECT_EQ(steps, 5);
  EXPECT_EQ(phases, 15);
  EXPECT_GT(counters, 0);
  auto bad = Dlbench({"export", std::to_string(ids.run), "--format", "trace", "--steps", "9:3"}, dir, db);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("B must be greater than A"), std::string::npos);
}

TEST(ReportE2E, UnknownRunIsAUsageError) {
  TempDir dir("export_unknown");
  const std::string db = dir / "r.db";
  WriteReportDb(db);
  auto r = Dlbench({"export", "4242"}, dir, db);
  EXPECT_NE(r.exit_code, 0);
  auto h = Dlbench({"report", "no-such-tag", "-o", dir / "x.html"}, dir, db);
  EXPECT_NE(h.exit_code, 0);
}

TEST(ReportE2E, ReportWithBaselineFromTheStore) {
  TempDir dir("report_html");
  const std::string db = dir / "r.db";
  const ReportDb ids = WriteReportDb(db);
  auto r = Dlbench({"report", std::to_string(ids.run), "--baseline", std::to_string(ids.baseline_run), "-o",
                    dir / "report.html"},
                   dir, db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto html = ReadFile(dir / "report.html");
  ASSERT_TRUE(html.ok());
  EXPECT_EQ(html->find("<script>alert("), std::string::npos);
  EXPECT_EQ(html->find("<img src=x"), std::string::npos);
  EXPECT_NE(html->find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html->find("The environments differ"), std::string::npos);
  EXPECT_NE(html->find("1 slower beyond the threshold"), std::string::npos);
}

// A run made by the real pipeline (null runner), then reported and exported.
TEST(ReportE2E, NullRunnerRunIsReportedAndExported) {
  TempDir dir("report_null_run");
  const std::string db = dir / "r.db";
  const std::string html = RunAndReport(dir, db, R"(name: report-null
runner: null
matrix:
  model: [tiny]
  batch_size: [1, 4, 16]
  step_ms: [0.3]
measure:
  min_steps: 20
  min_time_s: 0.1
  max_time_s: 1.0
  target_rel_ci: 0.05
)");
  EXPECT_NE(html.find("<canvas id=\"chart-0\""), std::string::npos);
  auto json = Dlbench({"export", "latest"}, dir, db);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j["cells"].size(), 3u);
  for (const auto& c : j["cells"]) {
    EXPECT_EQ(c["outcome"], "ok");
    EXPECT_GT(c["metrics"]["samples_per_s"]["value"].get<double>(), 0);
  }
  auto trace = Dlbench({"export", "latest", "--format", "trace", "--cell", "0"}, dir, db);
  ASSERT_EQ(trace.exit_code, 0) << trace.err;
  EXPECT_GT(nlohmann::json::parse(trace.out)["traceEvents"].size(), 20u);
}

// The charts of a stored batch sweep of dlbench-null cells (issue: the report counted the
// samples_per_step that the registry fills from batch_size as configuration, so a sweep had no
// throughput chart and a latency chart per batch). A samples_per_step that follows batch_size is
// no configuration: batches 1, 4 and 16 are one throughput curve and one latency chart of three
// distributions. One set apart (samples_per_step: 1 at batches 4 and 16, of 3 ms steps) is a
// configuration of its own, a second curve.
TEST(ReportE2E, ABatchSweepIsOneConfigurationWhateverSamplesPerStepFollows) {
  TempDir dir("report_batch_sweep");
  const std::string db = dir / "r.db";
  const std::string html = RunAndReport(dir, db, R"(name: report-sweep
runner: null
matrix:
  virtual_time: true
  scenario: infer
  step_ms: 2
  batch_size: [1, 4, 16]
include:
  - {virtual_time: true, scenario: infer, step_ms: 3, batch_size: 4, samples_per_step: 1}
  - {virtual_time: true, scenario: infer, step_ms: 3, batch_size: 16, samples_per_step: 1}
measure:
  min_steps: 20
  max_steps: 200
  min_time_s: 0.1
  max_time_s: 1.0
  target_rel_ci: 0.05
)");
  ASSERT_FALSE(html.empty());
  // The stored cells carry the filled-in samples_per_step: the case the report must see through.
  const auto exported = nlohmann::json::parse(Dlbench({"export", "latest"}, dir, db).out);
  ASSERT_EQ(exported["cells"].size(), 5u);
  EXPECT_EQ(exported["cells"][2]["params"]["samples_per_step"], 16) << exported["cells"][2]["params"].dump();
  const std::string open = "<script id=\"dlbench-data\" type=\"application/json\">";
  const auto begin = html.find(open);
  ASSERT_NE(begin, std::string::npos);
  const auto end = html.find("</script>", begin);
  const auto data = nlohmann::json::parse(html.substr(begin + open.size(), end - begin - open.size()));
  std::map<std::string, std::vector<nlohmann::json>> by_section;
  for (const auto& chart : data["charts"]) by_section[chart["section"]].push_back(chart);
  ASSERT_EQ(by_section["throughput"].size(), 2u) << data["charts"].dump();
  ASSERT_EQ(by_section["latency"].size(), 2u) << data["charts"].dump();
  std::size_t set_apart = 0;
  for (const auto& chart : by_section["throughput"]) {
    const std::string config = chart["configuration"];
    EXPECT_EQ(config.find("batch_size"), std::string::npos) << config;
    if (config.find("samples_per_step=1") != std::string::npos) {
      ++set_apart;
    } else {
      EXPECT_EQ(config.find("samples_per_step"), std::string::npos) << config;
    }
  }
  EXPECT_EQ(set_apart, 1u);
  std::size_t distributions = 0;
  for (const auto& chart : by_section["latency"]) distributions += chart["datasets"].size();
  EXPECT_EQ(distributions, 5u) << data["charts"].dump();
}

}  // namespace
}  // namespace dlbench::e2e
