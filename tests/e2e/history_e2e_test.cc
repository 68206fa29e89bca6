// History end to end: runs made by `dlbench run` with the null runner, then `tag`, `compare`
// (with --fail-on-regression exit codes, as a CI pipeline uses them) and `trend`.
//
// The null runner reports its steps in virtual time (virtual_time: true): their durations are
// drawn from the configured distribution (0.5% normal jitter), not measured on a machine that
// other jobs share, so the numbers are exact: two runs of one matrix are identical, and the slow
// matrix's throughput is 1/5 of the fast one's up to the jitter of a few hundred steps. The
// statistical claims (5% at 1% noise, 3% at 0.5%, no alarms over 20 identical runs) are proven
// in src/history/compare_test.cc; this test proves the wiring.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "e2e_util.h"

namespace dlbench::e2e {
namespace {

std::string Matrix(double step_ms) {
  return "name: history\n"
         "runner: null\n"
         "matrix:\n"
         "  model: [a, b]\n"
         "  step_ms: [" +
         std::to_string(step_ms) +
         "]\n"
         "  jitter_pct: [0.5]\n"
         "  virtual_time: [true]\n"
         "measure:\n"
         "  min_steps: 20\n"
         "  min_time_s: 0.3\n"
         "  max_time_s: 1.0\n"
         "  target_rel_ci: 0.05\n";
}

std::string Context(const CommandResult& r) { return "stdout:\n" + r.out + "\nstderr:\n" + r.err; }

TEST(HistoryE2E, TagCompareFailOnRegressionAndTrend) {
  TempDir dir("history");
  const std::string db = dir / "h.db";
  const std::string fast = dir / "fast.yaml";
  const std::string slow = dir / "slow.yaml";
  WriteText(fast, Matrix(4));
  // Five times the step time.
  WriteText(slow, Matrix(20));

  auto run1 = Dlbench({"run", fast, "--out", dir / "out1"}, dir, db);
  ASSERT_EQ(run1.exit_code, 0) << Context(run1);
  auto tag = Dlbench({"tag", "latest", "baseline"}, dir, db);
  ASSERT_EQ(tag.exit_code, 0) << Context(tag);
  EXPECT_NE(tag.out.find("tagged run 1 as 'baseline'"), std::string::npos) << tag.out;

  // Identical settings: no regression, exit 0 even with --fail-on-regression.
  auto run2 = Dlbench({"run", fast, "--out", dir / "out2"}, dir, db);
  ASSERT_EQ(run2.exit_code, 0) << Context(run2);
  auto same =
      Dlbench({"compare", "baseline", "latest", "--fail-on-regression", "--threshold", "20"}, dir, db);
  EXPECT_EQ(same.exit_code, 0) << Context(same);
  EXPECT_NE(same.out.find("0 slower"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("run 1 (history, baseline) -> run 2 (history)"), std::string::npos) << same.out;

  // Five times the step time: both cells slower; exit 1 only when asked.
  auto run3 = Dlbench({"run", slow, "--out", dir / "out3"}, dir, db);
  ASSERT_EQ(run3.exit_code, 0) << Context(run3);
  auto regressed = Dlbench(
      {"compare", "baseline", "latest", "--ignore-param", "step_ms", "--fail-on-regression"}, dir, db);
  EXPECT_EQ(regressed.exit_code, 1) << Context(regressed);
  EXPECT_NE(regressed.out.find("2 slower"), std::string::npos) << regressed.out;
  EXPECT_NE(regressed.err.find("2 regressions (--fail-on-regression)"), std::string::npos) << regressed.err;
  auto reported = Dlbench({"compare", "baseline", "latest", "--ignore-param", "step_ms"}, dir, db);
  EXPECT_EQ(reported.exit_code, 0) << Context(reported);

  // Without ignoring step_ms the cells do not match: listed on one side only. A gate that
  // compared nothing does not pass (exit 5, issue 17) and names the parameter that differs.
  auto unmatched = Dlbench({"compare", "baseline", "3", "--fail-on-regression"}, dir, db);
  EXPECT_EQ(unmatched.exit_code, 5) << Context(unmatched);
  EXPECT_NE(unmatched.out.find("only in base"), std::string::npos) << unmatched.out;
  EXPECT_NE(unmatched.out.find("only in candidate"), std::string::npos) << unmatched.out;
  EXPECT_NE(unmatched.err.find("only 0 of 2 base cells matched a candidate cell"), std::string::npos)
      << unmatched.err;
  EXPECT_NE(unmatched.err.find("the cells differ in step_ms"), std::string::npos) << unmatched.err;
  // Without the gate, listing the unmatched cells is not a failure.
  auto listed = Dlbench({"compare", "baseline", "3"}, dir, db);
  EXPECT_EQ(listed.exit_code, 0) << Context(listed);

  auto json = Dlbench({"compare", "1", "3", "--ignore-param", "step_ms", "--format", "json"}, dir, db);
  ASSERT_EQ(json.exit_code, 0) << Context(json);
  const auto parsed = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << json.out;
  EXPECT_EQ(parsed["summary"]["regressions"], 2);
  // Throughput at 5x the step time: 0.2 up to the 0.5% jitter's mean over the measured steps.
  EXPECT_NEAR(parsed["cells"][0]["ratio"].get<double>(), 0.2, 0.002);

  auto markdown =
      Dlbench({"compare", "1", "3", "--ignore-param", "step_ms", "--format", "markdown"}, dir, db);
  EXPECT_EQ(markdown.exit_code, 0) << Context(markdown);
  EXPECT_NE(markdown.out.find("**2 regressions**"), std::string::npos) << markdown.out;

  auto unknown = Dlbench({"compare", "nightly", "latest"}, dir, db);
  EXPECT_EQ(unknown.exit_code, 2) << Context(unknown);
  auto bad_tag = Dlbench({"tag", "1", "123"}, dir, db);
  EXPECT_EQ(bad_tag.exit_code, 2) << Context(bad_tag);

  auto trend = Dlbench({"trend", "model=a"}, dir, db);
  ASSERT_EQ(trend.exit_code, 0) << Context(trend);
  EXPECT_NE(trend.out.find("2 runs, 0 change points"), std::string::npos) << trend.out;  // step_ms=4
  EXPECT_NE(trend.out.find("1 run, 0 change points"), std::string::npos) << trend.out;   // step_ms=8
  auto csv = Dlbench({"trend", "model=a", "--format", "csv", "--metric", "step_time"}, dir, db);
  ASSERT_EQ(csv.exit_code, 0) << Context(csv);
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 4) << csv.out;  // header + 3 points
  auto bad_filter = Dlbench({"trend", "model"}, dir, db);
  EXPECT_EQ(bad_filter.exit_code, 2) << Context(bad_filter);
  // run's --only syntax: the same cells as model=a, a label word, and a typo refused.
  auto only = Dlbench({"trend", "--only", "model=a", "--format", "csv", "--metric", "step_time"}, dir, db);
  ASSERT_EQ(only.exit_code, 0) << Context(only);
  EXPECT_EQ(only.out, csv.out);
  auto not_a = Dlbench({"trend", "--only", "model!=a", "--format", "csv"}, dir, db);
  ASSERT_EQ(not_a.exit_code, 0) << Context(not_a);
  auto b = Dlbench({"trend", "model=b", "--format", "csv"}, dir, db);
  ASSERT_EQ(b.exit_code, 0) << Context(b);
  EXPECT_EQ(not_a.out, b.out);
  EXPECT_EQ(std::count(not_a.out.begin(), not_a.out.end(), '\n'), 4) << not_a.out;  // model b: 3 points
  auto typo = Dlbench({"trend", "--only", "modle=a"}, dir, db);
  EXPECT_EQ(typo.exit_code, 2) << Context(typo);
  EXPECT_NE(typo.err.find("no cell has a parameter 'modle'"), std::string::npos) << typo.err;
}

}  // namespace
}  // namespace dlbench::e2e
