// Inference under load through the real dlbench binary: `plan` prints the queries each load
// cell's latency claim needs before anything runs (LoadGen's early stopping at c = 0.99, d = 0:
// h(1) + 1 = 64 for a p90 estimate, h(0) = 459 for a p99 bound; src/stats/early_stopping_test.cc
// checks those against the binomial CDF), and a load key that does not apply is a config error
// at its position in the file.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace dlbench::e2e
