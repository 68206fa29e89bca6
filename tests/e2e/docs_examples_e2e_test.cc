// Text dlbench writes for people, from the real binary: what the docs quote from its output is what
// it writes (each example produced here, deterministically: the null runner on its virtual clock,
// and looked up in the doc that quotes it), and counts agree with their nouns ("1 cell").
#include <gtest/gtest.h>

#include <string>

#include "e2e_util.h"
#include "store/result_store.h"

namespace dlbench::e2e {
namespace {

// Two null cells on the virtual clock: 20 ms steps in a 0.3 s window (too short for an interval)
// and 5 ms steps with 60% lognormal jitter against a 1% target (noisy).
constexpr char kVerdictMatrix[] = R"(name: verdict-reasons
runner: null
matrix:
  step_ms: [20, 5]
  batch_size: [1]
  virtual_time: [true]
include:
  - {step_ms: 5, jitter_pct: 60, jitter_dist: lognormal}
seed: 1
timeout_s: 30
measure:
  min_steps: 5
  min_time_s: 0.1
  max_time_s: 0.3
  target_rel_ci: 0.01
)";

TEST(DocsExamples, StorageQuotesVerdictReasonsAsStored) {
  TempDir dir("docs_examples");
  const std::string db = dir / "v.db";
  WriteText(dir / "m.yaml", kVerdictMatrix);
  auto run = Dlbench({"run", dir / "m.yaml", "--out", dir / "out"}, dir, db);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto doc = ReadFile(std::string(DLBENCH_SOURCE_DIR) + "/docs/storage.md");
  ASSERT_TRUE(doc.ok());
  auto opened = store::OpenSqliteStore(db);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  auto cells = (*opened)->GetCells(1, store::CellQuery{});
  ASSERT_TRUE(cells.ok()) << cells.error().message;
  ASSERT_EQ(cells->size(), 2u);
  for (const auto& c : *cells) {
    // The column's text as the store writes it: a JSON array of strings.
    const std::string stored = c.verdict_reasons.dump();
    EXPECT_NE(doc->find("`" + stored + "`"), std::string::npos)
        << "docs/storage.md should quote the stored verdict_reasons of the " << record::Name(c.verdict)
        << " cell: `" << stored << "`";
  }
}

// One cell is "1 cell" in run's start line, report's summary and the report's header.
TEST(DocsExamples, OneCellIsOneCellInRunAndReport) {
  TempDir dir("one_cell");
  const std::string db = dir / "one.db";
  WriteText(dir / "m.yaml",
            "name: one\nrunner: null\nmatrix:\n  step_ms: [1]\n  virtual_time: [true]\nmeasure:\n  "
            "min_time_s: 0.1\n  max_time_s: 0.5\n");
  auto run = Dlbench({"run", dir / "m.yaml", "--out", dir / "out"}, dir, db);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("dlbench: run 1 (one): 1 cell, runner null"), std::string::npos) << run.err;
  auto plan = Dlbench({"plan", dir / "m.yaml"}, dir, db);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("\n1 cell (runner null"), std::string::npos) << plan.out;
  auto show = Dlbench({"show", "1", "--verbose"}, dir, db);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find(", 1 of 1 cell stored"), std::string::npos) << show.out;
  EXPECT_EQ(show.out.find("1 steps"), std::string::npos) << show.out;
  EXPECT_EQ(show.out.find("1 cells"), std::string::npos) << show.out;
  auto report = Dlbench({"report", "1", "-o", dir / "r.html"}, dir, db);
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("(run 1, 1 cell)"), std::string::npos) << report.out;
  auto html = ReadFile(dir / "r.html");
  ASSERT_TRUE(html.ok());
  EXPECT_NE(html->find(" &middot; 1 cell &middot; "), std::string::npos);
  EXPECT_EQ(html->find("1 cells"), std::string::npos);
  EXPECT_EQ(html->find("1 steps"), std::string::npos);
  auto deleted = Dlbench({"runs", "--delete", "1"}, dir, db);
  ASSERT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_NE((deleted.out + deleted.err).find(", 1 cell)"), std::string::npos) << deleted.out << deleted.err;
}

}  // namespace
}  // namespace dlbench::e2e
