// `dlbench serve` scraped by a real Prometheus server (Debian's `prometheus`) on loopback: the
// values read back through Prometheus's HTTP query API are the stored ones in base units, and
// every query of the Grafana dashboard in deploy/grafana returns data.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "report_e2e_util.h"

namespace dlbench::e2e {
namespace {

std::optional<nlohmann::json> Query(int port, const std::string& promql) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  client.set_read_timeout(5);
  auto res = client.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
  if (!res || res->status != 200) return std::nullopt;
  auto body = nlohmann::json::parse(res->body, nullptr, false);
  if (body.is_discarded() || body.value("status", "") != "success") return std::nullopt;
  return body["data"]["result"];
}

// The query's result once it is non-empty (Prometheus needs a scrape or two), within a bound.
nlohmann::json QueryUntilData(int port, const std::string& promql, double timeout_s = 30) {
  nlohmann::json result = nlohmann::json::array();
  WaitFor(
      [&] {
        auto r = Query(port, promql);
        if (r && !r->empty()) result = *r;
        return !result.empty();
      },
      timeout_s);
  return result;
}

double SampleValue(const nlohmann::json& sample) { return std::stod(sample["value"][1].get<std::string>()); }

bool HttpOk(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(1);
  auto res = client.Get(path.c_str());
  return res && res->status == 200;
}

TEST(ReportPrometheus, ServeIsScrapedAndEveryDashboardQueryHasData) {
  const std::string prometheus = FindInPath("prometheus");
  if (prometheus.empty())
    GTEST_SKIP() << "prometheus is not installed (apt-get install prometheus); test skipped";
  TempDir dir("report_prometheus");
  const std::string db = dir / "r.db";
  WriteReportDb(db);
  // A run in progress, as `dlbench run` would describe it; this process stands in for it.
  WriteText(db + ".progress.json", nlohmann::json({{"run_id", 3},
                                                   {"cells_total", 8},
                                                   {"cells_done", 2},
                                                   {"current_cell", "resnet50 bs=64"},
                                                   {"started_wall_ns", 1'760'000'000'000'000'000},
                                                   {"updated_wall_ns", 1'760'000'100'000'000'000},
                                                   {"pid", ::getpid()}})
                                       .dump());

  const int serve_port = FreeLoopbackPort();
  SpawnOptions serve_options;
  serve_options.argv = {
      Bin("dlbench"), "serve", "--db", db, "--listen", "127.0.0.1:" + std::to_string(serve_port)};
  serve_options.stdout_path = dir / "serve.out";
  serve_options.stderr_path = dir / "serve.err";
  auto serve = Subprocess::Spawn(serve_options);
  ASSERT_TRUE(serve.ok()) << serve.error().message;
  ASSERT_TRUE(WaitFor([&] { return HttpOk(serve_port, "/metrics"); }, 20))
      << "dlbench serve did not answer: "
      << (ReadFile(dir / "serve.err").ok() ? *ReadFile(dir / "serve.err") : "");

  const int prom_port = FreeLoopbackPort();
  WriteText(dir / "prometheus.yml",
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: dlbench\n    static_configs:\n"
            "      - targets: ['127.0.0.1:" +
                std::to_string(serve_port) + "']\n");
  SpawnOptions prom_options;
  prom_options.argv = {prometheus, "--config.file=" + (dir / "prometheus.yml"),
                       "--storage.tsdb.path=" + (dir / "tsdb"),
                       "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)};
  prom_options.stdout_path = dir / "prometheus.out";
  prom_options.stderr_path = dir / "prometheus.err";
  auto prom = Subprocess::Spawn(prom_options);
  ASSERT_TRUE(prom.ok()) << prom.error().message;
  ASSERT_TRUE(WaitFor([&] { return HttpOk(prom_port, "/-/ready"); }, 60))
      << "prometheus did not become ready: "
      << (ReadFile(dir / "prometheus.err").ok() ? *ReadFile(dir / "prometheus.err") : "");

  // The scrape target is healthy.
  const auto up = QueryUntilData(prom_port, "up{job=\"dlbench\"} == 1");
  ASSERT_EQ(up.size(), 1u) << "Prometheus never scraped dlbench serve successfully";

  // Stored values, in base units, through Prometheus.
  const auto tput = QueryUntilData(
      prom_port, R"(dlbench_samples_per_second{model="resnet50",scenario="train",batch_size="8"})");
  ASSERT_EQ(tput.size(), 1u);
  EXPECT_DOUBLE_EQ(SampleValue(tput[0]), 320.0);  // the newest run: 400 x 0.8
  EXPECT_EQ(tput[0]["metric"]["host"], "e2e-host");
  EXPECT_EQ(tput[0]["metric"]["precision"], "fp32");
  const auto step = QueryUntilData(
      prom_port, R"(dlbench_step_time_mean_seconds{model="resnet50",scenario="train",batch_size="8"})");
  ASSERT_EQ(step.size(), 1u);
  EXPECT_NEAR(SampleValue(step[0]), 0.025, 1e-12);  // 8 samples / 320 per s
  const auto util =
      QueryUntilData(prom_port, R"(dlbench_gpu_util_mean_ratio{model="resnet50",batch_size="16"})");
  ASSERT_EQ(util.size(), 1u);
  EXPECT_DOUBLE_EQ(SampleValue(util[0]), 0.645);
  const auto hostile = QueryUntilData(
      prom_port, R"(dlbench_samples_per_second{model="<script>alert(1)</script>",batch_size="32"})");
  ASSERT_EQ(hostile.size(), 1u);
  EXPECT_DOUBLE_EQ(SampleValue(hostile[0]), 900.0);
  const auto regression = QueryUntilData(prom_port, "dlbench_cell_regression == 1");
  ASSERT_EQ(regression.size(), 1u);
  EXPECT_EQ(regression[0]["metric"]["model"], "resnet50");
  EXPECT_EQ(regression[0]["metric"]["batch_size"], "8");
  const auto progress = QueryUntilData(prom_port, "dlbench_run_progress_ratio");
  ASSERT_EQ(progress.size(), 1u);
  EXPECT_DOUBLE_EQ(SampleValue(progress[0]), 0.25);
  EXPECT_EQ(QueryUntilData(prom_port, "dlbench_build_info").size(), 1u);
  EXPECT_EQ(QueryUntilData(prom_port, "dlbench_environment_info{host=\"e2e-host\"}").size(), 1u);

  // Every panel query of the Grafana dashboard, with its variables at "All".
  std::ifstream dashboard_file(std::string(DLBENCH_SOURCE_DIR) + "/deploy/grafana/dlbench.json");
  const auto dashboard = nlohmann::json::parse(dashboard_file, nullptr, false);
  ASSERT_FALSE(dashboard.is_discarded()) << "deploy/grafana/dlbench.json does not parse";
  int queries = 0;
  for (const auto& panel : dashboard["panels"]) {
    for (const auto& target : panel["targets"]) {
      std::string expr = target["expr"].get<std::string>();
      for (const std::string var : {"$model", "$device", "$host"}) {
        for (auto pos = expr.find(var); pos != std::string::npos; pos = expr.find(var))
          expr.replace(pos, var.size(), ".*");
      }
      ASSERT_EQ(expr.find('$'), std::string::npos) << "unhandled dashboard variable in " << expr;
      ++queries;
      EXPECT_FALSE(QueryUntilData(prom_port, expr, 15).empty())
          << "panel '" << panel["title"].get<std::string>() << "' has no data: " << expr;
    }
  }
  EXPECT_GE(queries, 10);
  // Template variables resolve too.
  for (const auto& var : dashboard["templating"]["list"]) {
    const std::string def = var["definition"].get<std::string>();  // label_values(METRIC, LABEL)
    const std::string metric = def.substr(def.find('(') + 1, def.find(',') - def.find('(') - 1);
    EXPECT_FALSE(QueryUntilData(prom_port, metric, 15).empty()) << def;
  }

  prom->Terminate(5000);
  // SIGTERM ends serve cleanly (exit 0), through its signal-waiting thread.
  const ExitStatus serve_end = serve->Terminate(5000);
  EXPECT_TRUE(serve_end.success()) << serve_end.Describe();
}

}  // namespace
}  // namespace dlbench::e2e
