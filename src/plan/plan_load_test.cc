// Expand checks every cell against the load rules (config/load_rules.h) before anything runs.
#include <gtest/gtest.h>

#include "plan/plan.h"

namespace dlbench::plan {
namespace {

Result<Plan> ExpandText(const std::string& yaml) {
  Result<config::Matrix> m = config::ParseMatrix(yaml, "m.yaml");
  EXPECT_TRUE(m.ok()) << m.error().message;
  if (!m.ok()) return m.error();
  return Expand(*m);
}

TEST(PlanLoadTest, AMixedLoadAxisNeedsServerKeysOnlyOnServerCells) {
  const std::string axes =
      "runner: torch\n"
      "matrix:\n"
      "  model: resnet50\n"
      "  scenario: infer\n"
      "  load: [single_stream, server]\n";
  // target_qps as an axis reaches the single_stream cells too: an error at the key.
  auto wrong = ExpandText(axes + "  target_qps: 100\n");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("m.yaml:6:3: error: target_qps: applies only with load: server"),
            std::string::npos)
      << wrong.error().message;
  // In an include entry for the server cells it is right.
  auto right = ExpandText(axes + "include:\n  - load: server\n    target_qps: 100\n");
  ASSERT_TRUE(right.ok()) << right.error().message;
  ASSERT_EQ(right->cells.size(), 2u);
  for (const Cell& cell : right->cells) {
    const bool server = cell.params.at("load") == "server";
    EXPECT_EQ(cell.params.count("target_qps"), server ? 1u : 0u);
  }
}

TEST(PlanLoadTest, CellsWithoutLoadKeepTheirKeys) {
  auto plan = ExpandText("runner: torch\nmatrix:\n  model: resnet50\n  scenario: infer\n");
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->cells.size(), 1u);
  EXPECT_EQ(plan->cells[0].params.count("load"), 0u);
  EXPECT_EQ(plan->cells[0].params.count("max_batch"), 0u);
  EXPECT_EQ(plan->cells[0].key.find("load"), std::string::npos);
}

TEST(PlanLoadTest, ServerWithoutARateIsAnError) {
  auto plan = ExpandText("runner: torch\nmatrix:\n  model: resnet50\n  scenario: infer\n  load: server\n");
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("m.yaml:5:3: error: load: server needs target_qps"), std::string::npos)
      << plan.error().message;
}

}  // namespace
}  // namespace dlbench::plan
