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

// A peak search's budget against its probes and its peak's confirmation: 60 s (the default
// max_time_s) holds 8 probes of the default 5 s plus warm-up besides the 15.5 s confirmation, fewer
// than the 13 a search to ~10,000/s at resolution 0.05 takes: a warning at target_qps. 120 s holds
// 19; 1 s probes fit 29 in 60 s; without the confirmation 60 s holds 10, and a 60 s confirmation
// leaves 120 s room for 10.
TEST(PlanLoadTest, APeakSearchWhoseBudgetHoldsTooFewProbesIsWarnedOf) {
  const std::string head =
      "runner: torch\nmatrix:\n  model: resnet50\n  scenario: infer\n  load: server\n"
      "  target_qps: max\n  latency_bound_ms: 10\n";
  auto short_budget = ExpandText(head);
  ASSERT_TRUE(short_budget.ok()) << short_budget.error().message;
  ASSERT_EQ(short_budget->warnings.size(), 1u);
  EXPECT_EQ(short_budget->warnings[0],
            "m.yaml:6:3: warning: target_qps: max: its 60 s budget holds about 8 probes of 5.5 s "
            "(peak_min_probe_s and a 0.5 s warm-up each) besides the peak's confirmation of 15.5 s "
            "(peak_confirm_s); a search from 100/s to a peak near 10,000/s at peak_resolution 0.05 takes "
            "about 13: raise max_time_s (and peak_max_time_s) or lower peak_min_probe_s or peak_confirm_s, "
            "else the search may end max_time, unconverged or unconfirmed");
  auto longer = ExpandText("measure:\n  max_time_s: 120\n" + head);
  ASSERT_TRUE(longer.ok());
  EXPECT_TRUE(longer->warnings.empty()) << longer->warnings[0];
  auto capped = ExpandText("measure:\n  max_time_s: 120\n" + head + "  peak_max_time_s: 30\n");
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(capped->warnings.size(), 1u);
  auto short_probes = ExpandText(head + "  peak_min_probe_s: 1\n");
  ASSERT_TRUE(short_probes.ok());
  EXPECT_TRUE(short_probes->warnings.empty()) << short_probes->warnings[0];
  auto unconfirmed = ExpandText(head + "  peak_confirm_s: 0\n");
  ASSERT_TRUE(unconfirmed.ok());
  ASSERT_EQ(unconfirmed->warnings.size(), 1u);
  EXPECT_EQ(unconfirmed->warnings[0],
            "m.yaml:6:3: warning: target_qps: max: its 60 s budget holds about 10 probes of 5.5 s "
            "(peak_min_probe_s and a 0.5 s warm-up each); a search from 100/s to a peak near 10,000/s at "
            "peak_resolution 0.05 takes about 13: raise max_time_s (and peak_max_time_s) or lower "
            "peak_min_probe_s, else the search may end max_time, unconverged");
  auto long_confirmation = ExpandText("measure:\n  max_time_s: 120\n" + head + "  peak_confirm_s: 60\n");
  ASSERT_TRUE(long_confirmation.ok());
  ASSERT_EQ(long_confirmation->warnings.size(), 1u);
  EXPECT_NE(
      long_confirmation->warnings[0].find("holds about 10 probes of 5.5 s (peak_min_probe_s and a 0.5 s "
                                          "warm-up each) besides the peak's confirmation of 60.5 s"),
      std::string::npos)
      << long_confirmation->warnings[0];
}

}  // namespace
}  // namespace dlbench::plan
