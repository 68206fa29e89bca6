// Inference under load through the real dlbench binary: `plan` prints the queries each load
// cell's latency claim needs before anything runs (LoadGen's early stopping at c = 0.99, d = 0:
// h(1) + 1 = 64 for a p90 estimate, h(0) = 459 for a p99 bound; src/stats/early_stopping_test.cc
// checks those against the binomial CDF), and a load key that does not apply is a config error
// at its position in the file. `run` with the null runner, which serves queries on a virtual
// clock with a known service time (runners/null/virtual_load.h): each scenario's stored metrics
// are the ones that service time implies, a server under its capacity is valid and one over it is
// not, and dropped or repeated query ids make the cell invalid, naming them.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "e2e_util.h"

namespace dlbench::e2e {
namespace {

constexpr char kLoadMatrix[] = R"(name: load
runner: torch
matrix:
  model: resnet50
  scenario: infer
  load: [single_stream, offline]
include:
  - model: resnet50
    scenario: infer
    load: server
    target_qps: 100
    latency_bound_ms: 10
  - model: resnet50
    scenario: infer
    load: multi_stream
    min_queries: 1000
)";

TEST(LoadE2E, PlanPrintsTheMinimumQueriesOfEachLoadCell) {
  TempDir dir("load_plan");
  const std::string matrix = dir / "load.yaml", db = dir / "r.db";
  WriteText(matrix, kLoadMatrix);

  auto json = Dlbench({"plan", matrix, "--json"}, dir, db);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json cells = nlohmann::json::parse(json.out);
  ASSERT_EQ(cells.size(), 4u) << json.out;
  std::map<std::string, std::int64_t> min_queries;
  for (const nlohmann::json& c : cells) {
    const std::string load = c.at("params").at("load");
    if (load == "offline") {
      EXPECT_FALSE(c.contains("min_queries")) << c.dump();  // offline claims no latency percentile
      continue;
    }
    min_queries[load] = c.at("min_queries");
  }
  EXPECT_EQ(min_queries["single_stream"], 64);   // p90 estimate: h(1) + 1
  EXPECT_EQ(min_queries["server"], 459);         // p99 under a bound: h(0)
  EXPECT_EQ(min_queries["multi_stream"], 1000);  // its min_queries is above h(1) + 1 = 662 at p99

  auto table = Dlbench({"plan", matrix}, dir, db);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("min queries"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(" 459 "), std::string::npos) << table.out;
}

TEST(LoadE2E, PlanWithoutLoadCellsHasNoMinimumQueriesColumn) {
  TempDir dir("load_plain");
  const std::string matrix = dir / "plain.yaml", db = dir / "r.db";
  WriteText(matrix, "runner: torch\nmatrix:\n  model: resnet50\n  scenario: infer\n");
  auto table = Dlbench({"plan", matrix}, dir, db);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out.find("min queries"), std::string::npos) << table.out;
}

TEST(LoadE2E, AKeyOfAnotherScenarioIsAConfigErrorAtItsPosition) {
  TempDir dir("load_rules");
  const std::string matrix = dir / "bad.yaml", db = dir / "r.db";
  WriteText(matrix,
            "runner: torch\nmatrix:\n  model: resnet50\n  scenario: infer\n  load: single_stream\n"
            "  target_qps: 100\n");
  auto plan = Dlbench({"plan", matrix}, dir, db);
  EXPECT_NE(plan.exit_code, 0);
  EXPECT_NE(plan.err.find(matrix + ":6:3: error: target_qps: applies only with load: server"),
            std::string::npos)
      << plan.err;
  auto run = Dlbench({"run", matrix}, dir, db);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find(":6:3: error: target_qps"), std::string::npos) << run.err;

  WriteText(matrix,
            "runner: torch\nmatrix:\n  model: resnet50\n  scenario: infer\n  load: server\n"
            "  target_qps: 100\n  latency_bound_ms: 0\n");
  auto zero = Dlbench({"plan", matrix}, dir, db);
  EXPECT_NE(zero.exit_code, 0);
  EXPECT_NE(zero.err.find(matrix + ":7:21: error: latency_bound_ms: expected a number > 0"),
            std::string::npos)
      << zero.err;
}

// Service time 2 ms per batch + 10 us per sample: one sample 2.01 ms, a multi-stream query of 8
// samples 2.08 ms, an offline batch of 100 samples 3 ms. One server stream serves 1 / 2.01 ms =
// 497.5 queries/s: 200/s is under its capacity, 800/s over it.
constexpr char kNullLoadMatrix[] = R"(name: null-load
runner: null
measure:
  min_time_s: 0.5
  max_time_s: 20
matrix:
  scenario: infer
  service_us: 2000
  service_per_sample_us: 10
  load: [single_stream, multi_stream, offline]
include:
  - {load: offline, offline_samples: 1000, batch_size: 100}
  - {scenario: infer, service_us: 2000, service_per_sample_us: 10, load: server, target_qps: 200,
     latency_bound_ms: 10}
  - {scenario: infer, service_us: 2000, service_per_sample_us: 10, load: server, target_qps: 800,
     latency_bound_ms: 10}
)";

// The run's cells from `export latest --format json`, by their load (and target_qps).
std::map<std::string, nlohmann::json> ExportedCells(const TempDir& dir, const std::string& db) {
  auto exported = Dlbench({"export", "latest", "--format", "json"}, dir, db);
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
  std::map<std::string, nlohmann::json> out;
  const nlohmann::json doc = nlohmann::json::parse(exported.out);
  for (const nlohmann::json& c : doc.at("cells")) {
    std::string name = c.at("params").at("load");
    if (c.at("params").contains("target_qps")) name += "@" + c.at("params").at("target_qps").dump();
    out[name] = c;
  }
  return out;
}

double Metric(const nlohmann::json& cell, const std::string& name) {
  if (!cell.at("metrics").contains(name)) {
    ADD_FAILURE() << "no metric " << name << " in " << cell.at("metrics").dump();
    return NAN;
  }
  return cell.at("metrics").at(name).at("value").get<double>();
}

TEST(LoadE2E, EveryScenarioRunsOnTheNullRunnerWithTheFiguresItsServiceTimeImplies) {
  TempDir dir("load_null_run");
  const std::string matrix = dir / "load.yaml", db = dir / "r.db";
  WriteText(matrix, kNullLoadMatrix);
  // Every cell ends ok; one is not valid, which --fail-on-invalid makes exit 1.
  auto run = Dlbench({"run", matrix, "--fail-on-invalid"}, dir, db);
  ASSERT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_NE(run.err.find("1 ok cell is not valid"), std::string::npos) << run.err;
  auto cells = ExportedCells(dir, db);
  ASSERT_EQ(cells.size(), 5u);
  for (const auto& [name, c] : cells) {
    ASSERT_EQ(c.at("outcome"), "ok") << name << ": " << c.at("message");
    EXPECT_EQ(c.at("effective").at("virtual_time"), true) << name;
  }

  // Single stream: every query takes exactly 2.01 ms; it stops at h(1) + 1 = 64 queries or 0.5 s,
  // whichever is later: 249 queries of 2.01 ms first span 0.5 s.
  const nlohmann::json& single = cells.at("single_stream");
  EXPECT_EQ(single.at("verdict"), "valid") << single.at("verdict_reasons");
  EXPECT_EQ(single.at("stop_reason"), "min_queries");
  EXPECT_EQ(Metric(single, "load_queries"), 249);
  EXPECT_EQ(Metric(single, "query_latency_p50_ns"), 2.01e6);
  EXPECT_EQ(Metric(single, "query_latency_p99_ns"), 2.01e6);
  EXPECT_EQ(Metric(single, "query_latency_early_stopping_ns"), 2.01e6);  // the headline
  EXPECT_NEAR(Metric(single, "load_qps_without_overhead"), 1 / 2.01e-3, 1e-6);
  EXPECT_EQ(single.at("extras").at("load").at("headline").at("metric"), "query_latency_early_stopping_ns");

  // Multi stream: 8 samples per query, 2.08 ms; p99 claims need h(1) + 1 = 662 queries.
  const nlohmann::json& multi = cells.at("multi_stream");
  EXPECT_EQ(multi.at("verdict"), "valid") << multi.at("verdict_reasons");
  EXPECT_EQ(Metric(multi, "load_queries"), 662);
  EXPECT_EQ(Metric(multi, "query_latency_p99_ns"), 2.08e6);

  // Offline: 1000 samples in 10 batches of 3 ms: 30 ms a query, 33,333 samples/s.
  const nlohmann::json& offline = cells.at("offline");
  EXPECT_EQ(offline.at("verdict"), "valid") << offline.at("verdict_reasons");
  EXPECT_EQ(Metric(offline, "query_latency_mean_ns"), 30e6);
  EXPECT_NEAR(Metric(offline, "load_samples_per_s"), 1000 / 0.030, 1e-6);

  // Server at 200/s, 40% of capacity: a query that finds the server idle takes 2.01 ms; queueing
  // adds to some; p99 within the 10 ms bound with every query within it: h(0) = 459 queries, and
  // 0.5 s (about 100 queries at 200/s) is reached before.
  const nlohmann::json& under = cells.at("server@200.0");
  EXPECT_EQ(under.at("verdict"), "valid") << under.at("verdict_reasons");
  EXPECT_EQ(under.at("stop_reason"), "early_stopping");
  EXPECT_EQ(Metric(under, "query_latency_min_ns"), 2.01e6);
  EXPECT_GT(Metric(under, "query_latency_p99_ns"), 2.01e6);
  EXPECT_LE(Metric(under, "query_latency_p99_ns"), 10e6);
  EXPECT_EQ(Metric(under, "load_latency_bound_met"), 1);
  EXPECT_EQ(Metric(under, "load_early_stopping_met"), 1);
  EXPECT_EQ(Metric(under, "load_issue_kept_up"), 1);
  EXPECT_GE(Metric(under, "load_queries"), 459);

  // Server at 800/s, 161% of capacity: the queue grows without bound; over_bound names the p99.
  const nlohmann::json& over = cells.at("server@800.0");
  EXPECT_EQ(over.at("verdict"), "over_bound") << over.at("verdict_reasons");
  const std::string reason = over.at("verdict_reasons").at(0);
  EXPECT_EQ(reason.rfind("over_bound: p99 ", 0), 0u) << reason;
  EXPECT_NE(reason.find(" s > latency_bound_ms 10 ("), std::string::npos) << reason;  // seconds of queueing
  EXPECT_GT(Metric(over, "query_latency_p99_ns"), 10e6);
  EXPECT_EQ(Metric(over, "load_latency_bound_met"), 0);
  // It completes no faster than its capacity.
  EXPECT_LE(Metric(over, "load_completed_samples_per_s"), 1 / 2.01e-3 + 1e-6);

  // The latency decomposition: the null runner times a compute part (the service time); the queue
  // part is the rest of each latency. Closed-loop queries never wait: all compute.
  EXPECT_EQ(Metric(single, "query_compute_mean_ns"), 2.01e6);
  EXPECT_EQ(Metric(single, "query_compute_p99_ns"), 2.01e6);
  EXPECT_EQ(Metric(single, "query_compute_share_pct"), 100);
  EXPECT_EQ(Metric(single, "query_queue_mean_ns"), 0);
  EXPECT_EQ(Metric(offline, "query_compute_mean_ns"), 30e6);  // the sum over its 10 batches
  EXPECT_EQ(Metric(offline, "query_queue_share_pct"), 0);
  // The server at 200/s serves one query a batch in 2.01 ms; whatever else a latency holds is queueing.
  EXPECT_EQ(Metric(under, "query_compute_mean_ns"), 2.01e6);
  EXPECT_NEAR(Metric(under, "query_queue_mean_ns"), Metric(under, "query_latency_mean_ns") - 2.01e6, 1e-3);
  EXPECT_GT(Metric(under, "query_queue_mean_ns"), 0);
  EXPECT_NEAR(Metric(under, "query_queue_share_pct") + Metric(under, "query_compute_share_pct"), 100, 1e-9);
  EXPECT_NEAR(Metric(under, "query_compute_share_pct"), 2.01e6 / Metric(under, "query_latency_mean_ns") * 100,
              1e-9);

  // show prints the load figures of load cells.
  auto show = Dlbench({"show", "latest"}, dir, db);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("p99"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("over_bound: p99 "), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("Latency decomposition"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("compute"), std::string::npos) << show.out;

  // The query records are stored: every received query's latency as the series load.latency_ns.
  auto series = Dlbench({"export", "latest", "--series"}, dir, db);
  ASSERT_EQ(series.exit_code, 0) << series.err;
  EXPECT_NE(series.out.find("load.latency_ns"), std::string::npos);
}

TEST(LoadE2E, DroppedOrRepeatedQueryIdsMakeTheCellInvalidNamingThem) {
  TempDir dir("load_null_ids");
  const std::string matrix = dir / "ids.yaml", db = dir / "r.db";
  WriteText(matrix,
            "runner: null\nmeasure:\n  min_time_s: 0.1\nmatrix:\n  scenario: infer\n  load: single_stream\n"
            "  inject: [drop_query, duplicate_query]\n  inject_at_step: 30\n");
  auto run = Dlbench({"run", matrix}, dir, db);
  EXPECT_NE(run.exit_code, 0) << run.out << run.err;
  auto exported = Dlbench({"export", "latest", "--format", "json"}, dir, db);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  std::map<std::string, nlohmann::json> cells;
  const nlohmann::json doc = nlohmann::json::parse(exported.out);
  for (const nlohmann::json& c : doc.at("cells")) cells[c["params"]["inject"]] = c;
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells["drop_query"].at("outcome"), "invalid");
  EXPECT_NE(
      cells["drop_query"].at("message").get<std::string>().find("1 issued query never arrived (query id 30)"),
      std::string::npos)
      << cells["drop_query"].at("message");
  EXPECT_EQ(cells["duplicate_query"].at("outcome"), "invalid");
  EXPECT_NE(cells["duplicate_query"].at("message").get<std::string>().find(
                "1 record repeated a query id already received (query id 30)"),
            std::string::npos)
      << cells["duplicate_query"].at("message");
}

TEST(LoadE2E, LoadKeysNeedALoadAndTheServiceTimeIsTheNullRunners) {
  TempDir dir("load_null_keys");
  const std::string matrix = dir / "k.yaml", db = dir / "r.db";
  WriteText(matrix, "runner: null\nmatrix:\n  scenario: infer\n  service_us: 500\n");
  auto plan = Dlbench({"plan", matrix}, dir, db);
  EXPECT_NE(plan.exit_code, 0);
  EXPECT_NE(plan.err.find("service_us: applies only with load"), std::string::npos) << plan.err;
  WriteText(matrix,
            "runner: torch\nmatrix:\n  model: resnet50\n  scenario: infer\n  load: offline\n"
            "  service_us: 500\n");
  auto torch = Dlbench({"plan", matrix}, dir, db);
  EXPECT_NE(torch.exit_code, 0);
  EXPECT_NE(torch.err.find("service_us: valid only with runner null"), std::string::npos) << torch.err;
}

// The M/D/1 queue's peak (runners/null/virtual_load_test.cc derives it the same way): Poisson
// arrivals at lambda to one server of 1 ms; Erlang's P(wait <= t) =
// (1 - rho) sum_{k <= t/s} (lambda (k s - t))^k / k! e^{-lambda (k s - t)}; the peak is the rate
// at which the wait's 99th percentile is the bound minus the service time.
double MD1Peak(double bound_s, double service_s) {
  auto cdf = [&](double lambda, double t) {
    double sum = 0;
    for (int k = 0; k <= static_cast<int>(std::floor(t / service_s)); ++k) {
      const double x = lambda * (k * service_s - t);
      sum += std::pow(x, k) / std::tgamma(k + 1.0) * std::exp(-x);
    }
    return (1 - lambda * service_s) * sum;
  };
  double lo = 1, hi = 1 / service_s;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (cdf(mid, bound_s - service_s) >= 0.99 ? lo : hi) = mid;
  }
  return lo;
}

// target_qps: max through dlbench run: the null runner searches on its virtual clock, a server of
// 1 ms per query under a 10 ms p99 bound (the M/D/1 peak is 773.5 queries/s; 20,000 queries a probe
// keep the seeded schedule's p99 within a few percent of the stationary one). One stored cell:
// valid, its headline the peak within the search's 5% resolution of the queue's, every probe
// judged again from its own stored queries, the measured window the peak probe's; show prints the
// probes. A bound below the service time has no passing rate: over_bound, saying so.
constexpr char kPeakMatrix[] = R"(name: peak
runner: null
measure:
  max_time_s: 1000
  max_steps: 2000000
matrix:
  scenario: infer
  load: server
  target_qps: max
  service_us: 1000
  max_batch: 1
  latency_bound_ms: [10, 0.5]
include:
  - {latency_bound_ms: 10, min_queries: 20000}
  - {latency_bound_ms: 0.5, peak_max_probes: 3}
)";

TEST(LoadE2E, APeakSearchThroughRunStoresOneValidCellWithThePeakAndEveryProbe) {
  TempDir dir("load_peak");
  const std::string matrix = dir / "peak.yaml", db = dir / "r.db";
  WriteText(matrix, kPeakMatrix);
  auto run = Dlbench({"run", matrix}, dir, db);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto exported = Dlbench({"export", "latest", "--format", "json"}, dir, db);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  std::map<double, nlohmann::json> cells;  // by latency_bound_ms
  const nlohmann::json doc = nlohmann::json::parse(exported.out);
  for (const nlohmann::json& c : doc.at("cells")) {
    cells[c.at("params").at("latency_bound_ms").get<double>()] = c;
  }
  ASSERT_EQ(cells.size(), 2u);

  const nlohmann::json& cell = cells.at(10.0);
  ASSERT_EQ(cell.at("outcome"), "ok") << cell.at("message");
  EXPECT_EQ(cell.at("verdict"), "valid") << cell.at("verdict_reasons");
  const double expected = MD1Peak(10e-3, 1e-3);
  const double peak = Metric(cell, "load_peak_qps");
  const double failing = Metric(cell, "load_peak_lowest_failing_qps");
  EXPECT_EQ(Metric(cell, "load_peak_resolution"), 0.05);
  EXPECT_LE(failing / peak - 1, 0.05);
  EXPECT_LE(std::abs(peak / expected - 1), 0.05)
      << peak << " .. " << failing << " (M/D/1: " << expected << ")";
  EXPECT_LE(std::abs(failing / expected - 1), 0.05) << peak << " .. " << failing;
  const nlohmann::json& load = cell.at("extras").at("load");
  EXPECT_EQ(load.at("headline").at("metric"), "load_peak_qps");
  const nlohmann::json& search = load.at("peak_search");
  EXPECT_EQ(search.at("converged"), true);
  EXPECT_EQ(search.at("peak_qps"), peak);
  const nlohmann::json& probes = search.at("probes");
  ASSERT_GE(probes.size(), 5u);
  // The peak's confirmation (peak_confirm_s' default 15 s; 20,000 queries here) holds it: the last
  // probe, at the peak, and the cell's window.
  EXPECT_EQ(search.at("confirmation"), "confirmed") << search.at("confirmation_note");
  EXPECT_EQ(probes.back().at("confirmation"), true);
  EXPECT_EQ(probes.back().at("target_qps"), peak);
  EXPECT_EQ(search.at("window_probe"), probes.size());
  EXPECT_EQ(Metric(cell, "load_peak_probes"), static_cast<double>(probes.size()));
  EXPECT_EQ(probes[0].at("target_qps"), 100.0);
  std::uint64_t window_queries = 0;
  for (const nlohmann::json& p : probes) {
    const double target = p.at("target_qps");
    if (p.at("valid").get<bool>()) {
      EXPECT_LE(p.at("latency_at_percentile_ms").get<double>(), 10.0) << p.dump();
      EXPECT_GE(p.at("queries").get<std::uint64_t>(), 20000u);
      EXPECT_TRUE(p.at("reasons").empty());
      // Below the peak the queue keeps up: it completes what arrives.
      EXPECT_NEAR(p.at("achieved_qps").get<double>() / target, 1, 0.05) << p.dump();
      EXPECT_LE(target, peak);
    } else {
      EXPECT_FALSE(p.at("reasons").empty()) << p.dump();
      EXPECT_GE(target, failing);
    }
    if (target == peak) window_queries = p.at("queries");
  }
  // The cell's load figures are the peak probe's measured queries.
  EXPECT_EQ(Metric(cell, "load_queries"), static_cast<double>(window_queries));
  EXPECT_LE(Metric(cell, "query_latency_at_percentile_ns"), 10e6);
  EXPECT_EQ(cell.at("measured_steps").get<std::uint64_t>(), window_queries);
  EXPECT_GT(cell.at("warmup_steps").get<std::int64_t>(), 0);  // the queries of the probes before it
  // The runner's own report stays in extras.info.
  EXPECT_EQ(cell.at("extras").at("info").at("load").at("peak_search").at("probes").size(), probes.size());
  // The report draws the search: latency against probe rate, with the peak.
  auto report = Dlbench({"report", "latest", "-o", dir / "r.html"}, dir, db);
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const auto html = ReadFile(dir / "r.html");
  ASSERT_TRUE(html.ok());
  EXPECT_NE(html->find("(peak search)"), std::string::npos);
  EXPECT_NE(html->find("probe rate (queries/s)"), std::string::npos);

  const nlohmann::json& none = cells.at(0.5);
  ASSERT_EQ(none.at("outcome"), "ok") << none.at("message");
  EXPECT_EQ(none.at("verdict"), "over_bound") << none.at("verdict_reasons");
  const std::string reason = none.at("verdict_reasons").at(0);
  EXPECT_NE(reason.find("no probed rate passed; the lowest was 25 queries/s"), std::string::npos) << reason;
  EXPECT_FALSE(none.at("metrics").contains("load_peak_qps"));
  EXPECT_EQ(Metric(none, "load_peak_probes"), 3);

  auto show = Dlbench({"show", "latest"}, dir, db);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("Peak search (target_qps: max"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("peak " + std::to_string(static_cast<long long>(std::lround(peak))) +
                          "/s, lowest failing"),
            std::string::npos)
      << show.out;
  EXPECT_NE(show.out.find("achieved qps"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("passed its confirmation"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find(" (confirm)"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("over_bound: p99 "), std::string::npos) << show.out;
}

// STOP in an overloaded probe: the orchestrator's max_steps (9,250 records) falls in the fifth
// probe, at 1,600/s against a server of 1,000/s (1 ms a query; 100 ms p99 bound, so 800/s passes):
// probes 1-4 (100 to 800/s) hold 8,250 records, and probe 5's queue grows by 600 a second.
// serve_after_stop_us: 0 makes the simulated server keep its queue after STOP, so the load
// generator's STOP drain ends (2 s) and the queue is dropped, as dlbench-torch's batcher drops a
// queue longer than the drain. virtual_speedup 10 keeps STOP (records flush and STOP is polled
// every 50 ms of real time, 0.5 s of virtual) well inside the probe's 5.5 virtual seconds.
constexpr char kPeakStopMatrix[] = R"(name: peak-stop
runner: null
measure:
  max_time_s: 1000
  max_steps: 9250
matrix:
  scenario: infer
  load: server
  target_qps: max
  service_us: 1000
  max_batch: 1
  latency_bound_ms: 100
  serve_after_stop_us: 0
  virtual_speedup: 10
)";

TEST(LoadE2E, APeakSearchStoppedInAnOverloadedProbeKeepsItsFinishedProbesAndCountsTheDroppedQueries) {
  TempDir dir("load_peak_stop");
  const std::string matrix = dir / "peak_stop.yaml", db = dir / "r.db";
  WriteText(matrix, kPeakStopMatrix);
  auto run = Dlbench({"run", matrix}, dir, db);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto exported = Dlbench({"export", "latest", "--format", "json"}, dir, db);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const nlohmann::json cell = nlohmann::json::parse(exported.out).at("cells").at(0);
  // Before the probes' `dropped`, this cell was `invalid`: "N issued queries never arrived".
  ASSERT_EQ(cell.at("outcome"), "ok") << cell.at("message");
  EXPECT_EQ(cell.at("stop_reason"), "max_steps");
  EXPECT_EQ(cell.at("verdict"), "too_short") << cell.at("verdict_reasons");
  const nlohmann::json& load = cell.at("extras").at("load");
  const nlohmann::json& search = load.at("peak_search");
  const nlohmann::json& probes = search.at("probes");
  ASSERT_GE(probes.size(), 5u) << search.dump();
  // The probes that finished are judged as before: 100, 200, 400 and 800/s pass.
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(probes[i].at("target_qps"), 100.0 * (1 << i)) << probes[i].dump();
    EXPECT_EQ(probes[i].at("valid"), true) << probes[i].dump();
    EXPECT_EQ(probes[i].at("dropped"), 0) << probes[i].dump();
  }
  EXPECT_EQ(Metric(cell, "load_peak_qps"), 800.0);
  // The last probe was cut: its queue dropped after STOP, judged fell_behind.
  const nlohmann::json& last = probes.back();
  const auto dropped = last.at("dropped").get<std::int64_t>();
  EXPECT_GT(dropped, 0) << last.dump();
  EXPECT_EQ(last.at("valid"), false);
  EXPECT_EQ(last.at("reasons").at(0).get<std::string>().rfind("fell_behind:", 0), 0u) << last.dump();
  for (std::size_t i = 0; i + 1 < probes.size(); ++i) EXPECT_EQ(probes[i].at("dropped"), 0) << i;
  EXPECT_EQ(search.at("queries_dropped_after_stop"), dropped);
  // Every issued query is a record or one of the dropped.
  EXPECT_EQ(load.at("queries_issued").get<std::int64_t>(),
            load.at("queries_received").get<std::int64_t>() + dropped)
      << load.dump();
  EXPECT_EQ(cell.at("extras").at("info").at("load").at("peak_search").at("probes").back().at("dropped"),
            dropped);
  // The verdict says the search was stopped, and how many queries were dropped.
  const std::string reason = cell.at("verdict_reasons").at(0);
  EXPECT_EQ(reason.rfind("too_short: the search ended (stopped by STOP at max_steps, in probe ", 0), 0u)
      << reason;
  EXPECT_NE(reason.find(", which fell behind: " + std::to_string(dropped) + " of its queries were dropped)"),
            std::string::npos)
      << reason;
}

}  // namespace
}  // namespace dlbench::e2e
