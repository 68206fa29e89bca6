// Which cells `run` and `plan` keep: --shard parsing (every malformed form is refused with the
// text and what was expected), the round-robin split (disjoint, complete, order kept, for any
// number of cells and shards), --only then --shard on a real matrix file, and which selection a
// resumed run applies.
#include "plan/selection.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/files.h"

namespace dlbench::plan {
namespace {

std::vector<Cell> MakeCells(int n) {
  std::vector<Cell> cells(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    cells[i].index = i;
    cells[i].id = "c" + std::to_string(i) + "#r0";
    cells[i].label = "cell " + std::to_string(i);
  }
  return cells;
}

std::vector<int> Indices(const std::vector<Cell>& cells) {
  std::vector<int> out;
  for (const auto& c : cells) out.push_back(c.index);
  return out;
}

// Issue 18: `--only step_ms=3` matched no cell of `step_ms: 3.0`; `bs=8` (as labels write it)
// matched nothing; a misspelt name matched nothing without saying why.
TEST(OnlyTest, MatchesValuesByTypeAndLabelAbbreviationsAndRefusesUnknownNames) {
  std::vector<Cell> cells = MakeCells(2);
  cells[0].params = {{"step_ms", 3.0}, {"batch_size", 8}, {"virtual_time", true}, {"model", "tiny"}};
  cells[1].params = {{"step_ms", 1.5}, {"batch_size", 16}, {"virtual_time", false}, {"model", "small"}};
  auto kept = [&](const std::string& filter) -> std::vector<int> {
    auto r = FilterCells(cells, {filter});
    EXPECT_TRUE(r.ok()) << filter << ": " << r.error().message;
    return r.ok() ? Indices(*r) : std::vector<int>{-1};
  };
  EXPECT_EQ(kept("step_ms=3"), std::vector<int>{0});
  EXPECT_EQ(kept("step_ms=3.0"), std::vector<int>{0});
  EXPECT_EQ(kept("step_ms=1.50"), std::vector<int>{1});
  EXPECT_EQ(kept("bs=16"), std::vector<int>{1});
  EXPECT_EQ(kept("batch_size!=8"), std::vector<int>{1});
  EXPECT_EQ(kept("virtual_time=true"), std::vector<int>{0});
  EXPECT_EQ(kept("model=tiny"), std::vector<int>{0});
  EXPECT_EQ(kept("step_ms=3x"), std::vector<int>{}) << "not a number: compared as text";
  auto typo = FilterCells(cells, {"bsz=8"});
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.error().kind, ErrorKind::kInvalidInput);
  EXPECT_EQ(typo.error().message,
            "--only 'bsz=8': no cell has a parameter 'bsz' (the cells have: batch_size, model, step_ms, "
            "virtual_time)");
}

// The same syntax over stored cells (trend --only): JSON parameters, the label, OR over filters.
TEST(OnlyTest, CellFiltersMatchStoredParametersAsRunDoes) {
  const nlohmann::json a = {{"step_ms", 3.0}, {"batch_size", 8}, {"model", "tiny"}};
  const nlohmann::json b = {{"step_ms", 1.5}, {"batch_size", 16}, {"model", "small"}};
  auto matches = [&](const std::vector<std::string>& filters, const nlohmann::json& params,
                     const std::string& label) {
    auto f = ParseCellFilter(filters);
    EXPECT_TRUE(f.ok()) << f.error().message;
    return f.ok() && MatchesCellFilter(*f, params, label, "");
  };
  EXPECT_TRUE(matches({}, a, "tiny bs=8"));
  EXPECT_TRUE(matches({"step_ms=3"}, a, "tiny bs=8"));
  EXPECT_FALSE(matches({"step_ms=3"}, b, "small bs=16"));
  EXPECT_TRUE(matches({"bs=16,model=small"}, b, "small bs=16"));
  EXPECT_FALSE(matches({"bs=16,model=tiny"}, b, "small bs=16"));
  EXPECT_TRUE(matches({"model!=tiny"}, b, "small bs=16"));
  EXPECT_TRUE(matches({"model=tiny", "model=small"}, b, "small bs=16")) << "either filter";
  EXPECT_TRUE(matches({"small"}, b, "small bs=16")) << "a label word";
  EXPECT_FALSE(matches({"model=tiny"}, nlohmann::json::array(), "")) << "no parameters";
  auto f = ParseCellFilter({"bsz=8"});
  ASSERT_TRUE(f.ok());
  const Status named = CheckCellFilterNames(*f, {"batch_size", "model", "step_ms"});
  ASSERT_FALSE(named.ok());
  EXPECT_EQ(named.error().message,
            "--only 'bsz=8': no cell has a parameter 'bsz' (the cells have: batch_size, model, step_ms)");
  EXPECT_TRUE(CheckCellFilterNames(*f, {}).ok()) << "no cells: nothing to judge by";
  EXPECT_FALSE(ParseCellFilter({"=x"}).ok());
}

TEST(ShardTest, ParsesKOverN) {
  const struct {
    const char* text;
    int k, n;
  } cases[] = {{"1/1", 1, 1}, {"1/2", 1, 2},     {"2/2", 2, 2},
               {"3/8", 3, 8}, {"12/12", 12, 12}, {"01/02", 1, 2}};
  for (const auto& c : cases) {
    auto shard = ParseShard(c.text);
    ASSERT_TRUE(shard.ok()) << c.text << ": " << shard.error().message;
    EXPECT_EQ(shard->index, c.k) << c.text;
    EXPECT_EQ(shard->count, c.n) << c.text;
  }
  EXPECT_EQ(ShardText(Shard{3, 8}), "3/8");
}

TEST(ShardTest, RefusesMalformedShardsNamingTheTextAndWhatWasExpected) {
  const struct {
    const char* text;
    const char* why;
  } cases[] = {
      {"0/2", "K counts from 1"},
      {"3/2", "K is larger than N"},
      {"1/0", "N must be at least 1"},
      {"0/0", "N must be at least 1"},
      {"a/b", "whole numbers"},
      {"2", "no '/'"},
      {"", "no '/'"},
      {"/", "whole numbers"},
      {"1/", "whole numbers"},
      {"/2", "whole numbers"},
      {"-1/2", "whole numbers"},
      {"+1/2", "whole numbers"},
      {" 1/2", "whole numbers"},
      {"1/2 ", "whole numbers"},
      {"1/2/3", "whole numbers"},
      {"1.0/2", "whole numbers"},
      {"1/99999999999", "whole numbers"},
  };
  for (const auto& c : cases) {
    auto shard = ParseShard(c.text);
    ASSERT_FALSE(shard.ok()) << "'" << c.text << "' was accepted";
    EXPECT_EQ(shard.error().kind, ErrorKind::kInvalidInput) << c.text;
    const std::string& message = shard.error().message;
    EXPECT_NE(message.find(std::string("--shard '") + c.text + "'"), std::string::npos) << message;
    EXPECT_NE(message.find(c.why), std::string::npos) << c.text << ": " << message;
    EXPECT_NE(message.find("expected K/N"), std::string::npos) << message;
  }
}

TEST(ShardTest, RoundRobinOverPositions) {
  const auto cells = MakeCells(8);
  EXPECT_EQ(Indices(ShardCells(cells, {1, 3})), (std::vector<int>{0, 3, 6}));
  EXPECT_EQ(Indices(ShardCells(cells, {2, 3})), (std::vector<int>{1, 4, 7}));
  EXPECT_EQ(Indices(ShardCells(cells, {3, 3})), (std::vector<int>{2, 5}));
  EXPECT_EQ(Indices(ShardCells(cells, {1, 1})), Indices(cells));
  // Positions, not plan indices: after --only the kept cells' indices have gaps.
  std::vector<Cell> filtered = {cells[1], cells[2], cells[5], cells[7]};
  EXPECT_EQ(Indices(ShardCells(filtered, {1, 2})), (std::vector<int>{1, 5}));
  EXPECT_EQ(Indices(ShardCells(filtered, {2, 2})), (std::vector<int>{2, 7}));
}

TEST(ShardTest, ShardsAreDisjointAndCompleteForAnySizes) {
  for (int n_cells = 0; n_cells <= 9; ++n_cells) {
    const auto cells = MakeCells(n_cells);
    for (int n = 1; n <= 11; ++n) {
      std::multiset<int> seen;
      for (int k = 1; k <= n; ++k) {
        const auto part = ShardCells(cells, {k, n});
        const auto indices = Indices(part);
        EXPECT_TRUE(std::is_sorted(indices.begin(), indices.end())) << k << "/" << n;
        // Balanced: shard sizes differ by at most one; shards beyond the cell count are empty.
        const int expected = n_cells / n + (k <= n_cells % n ? 1 : 0);
        EXPECT_EQ(static_cast<int>(part.size()), expected) << k << "/" << n << " of " << n_cells;
        seen.insert(indices.begin(), indices.end());
      }
      std::multiset<int> all;
      for (int i = 0; i < n_cells; ++i) all.insert(i);
      EXPECT_EQ(seen, all) << n_cells << " cells in " << n << " shards";
    }
  }
}

TEST(SelectionTest, NormalizesTheShardAndWritesShellWords) {
  auto normalized = NormalizeSelection({{"model=a"}, "01/02"});
  ASSERT_TRUE(normalized.ok()) << normalized.error().message;
  EXPECT_EQ(normalized->shard, "1/2");
  EXPECT_EQ(normalized->only, std::vector<std::string>{"model=a"});
  EXPECT_TRUE(NormalizeSelection({}).ok());
  auto bad = NormalizeSelection({{}, "3/2"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--shard '3/2'"), std::string::npos) << bad.error().message;

  EXPECT_EQ(SelectionArgs({}), "");
  EXPECT_EQ(SelectionArgs({{}, "2/2"}), "--shard 2/2");
  EXPECT_EQ(SelectionArgs({{"model=resnet50", "bert base", "it's"}, "1/2"}),
            "--only model=resnet50 --only 'bert base' --only 'it'\\''s' --shard 1/2");
  EXPECT_EQ(ShellWord(""), "''");
}

TEST(SelectionTest, ResumeReusesTheStoredSelectionAndRefusesAnother) {
  const Selection none;
  const Selection shard{{}, "2/2"};
  const Selection both{{"model=a", "model=b"}, "1/2"};
  const Selection both_reordered{{"model=b", "model=a"}, "1/2"};
  const struct {
    Selection stored, given;
    std::optional<Selection> applied;  // nullopt: refused
  } cases[] = {
      {none, none, none},     // a whole-matrix run, as before
      {none, shard, shard},   // an older run: the caller's count check decides
      {shard, none, shard},   // nothing given: the stored one
      {shard, shard, shard},  // the same again
      {both, none, both},
      {both, both_reordered, both_reordered},  // --only is an OR: any order
      {shard, Selection{{}, "1/2"}, std::nullopt},
      {shard, Selection{{"model=a"}, "2/2"}, std::nullopt},
      {both, Selection{{"model=a"}, "1/2"}, std::nullopt},
      {both, Selection{{"model=a", "model=b"}, ""}, std::nullopt},
  };
  for (const auto& c : cases) {
    const std::string what =
        "stored '" + SelectionArgs(c.stored) + "', given '" + SelectionArgs(c.given) + "'";
    auto applied = ResumeSelection(7, c.stored, c.given);
    if (c.applied) {
      ASSERT_TRUE(applied.ok()) << what << ": " << applied.error().message;
      EXPECT_EQ(*applied, *c.applied) << what;
    } else {
      ASSERT_FALSE(applied.ok()) << what << " was accepted";
      EXPECT_EQ(applied.error().kind, ErrorKind::kInvalidInput) << what;
      EXPECT_NE(applied.error().message.find("run 7 was started with " + SelectionArgs(c.stored) +
                                             ", but this resume asks for " + SelectionArgs(c.given) + ";"),
                std::string::npos)
          << applied.error().message;
    }
  }
}

class SelectPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("dlbench_plan_selection_test_" + std::to_string(::getpid())))
               .string();
    std::filesystem::create_directories(dir_);
    matrix_ = dir_ + "/m.yaml";
    // 2 models x 4 batch sizes = 8 cells, grouped by model.
    ASSERT_TRUE(
        WriteFileAtomic(matrix_, "runner: null\nmatrix:\n  model: [a, b]\n  batch_size: [1, 2, 4, 8]\n")
            .ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  SelectedPlan Select(const Selection& selection) {
    auto selected = SelectPlan(matrix_, selection);
    EXPECT_TRUE(selected.ok()) << selected.error().message;
    return selected.ok() ? std::move(selected).value() : SelectedPlan{};
  }

  std::string dir_, matrix_;
};

TEST_F(SelectPlanTest, ShardAppliesToTheCellsOnlyKeeps) {
  const SelectedPlan all = Select({});
  ASSERT_EQ(all.cells.size(), 8u);
  EXPECT_FALSE(all.shard);
  EXPECT_EQ(ShardSummary(all), "");

  const SelectedPlan first = Select({{}, "1/2"});
  EXPECT_EQ(first.planned, 8u);
  EXPECT_EQ(first.matched, 8u);
  EXPECT_EQ(Indices(first.cells), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(ShardSummary(first), ", shard 1/2 of 8");

  // model=b keeps plan indices 4..7; shard 2/3 takes the second of each three of those.
  const SelectedPlan b = Select({{"model=b"}, "2/3"});
  EXPECT_EQ(b.matched, 4u);
  EXPECT_EQ(Indices(b.cells), (std::vector<int>{5}));
  EXPECT_EQ(EmptySelectionMessage(b, matrix_), "");
}

TEST_F(SelectPlanTest, EmptySelectionsSayWhy) {
  const SelectedPlan nothing = Select({{"model=nosuch"}, "1/2"});
  EXPECT_TRUE(nothing.cells.empty());
  EXPECT_EQ(EmptySelectionMessage(nothing, matrix_),
            "--only matched none of the 8 cells (see: dlbench plan " + matrix_ + ")");

  const SelectedPlan beyond = Select({{"model=a,batch_size=1", "model=b,batch_size=8"}, "3/4"});
  EXPECT_EQ(beyond.matched, 2u);
  EXPECT_TRUE(beyond.cells.empty());
  const std::string message = EmptySelectionMessage(beyond, matrix_);
  EXPECT_NE(message.find("--shard 3/4 has no cells: the plan has 2 cells after --only, fewer than 3"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("at most 2 shards"), std::string::npos) << message;
}

TEST_F(SelectPlanTest, BadShardFailsBeforeTheMatrixIsRead) {
  auto selected = SelectPlan(dir_ + "/missing.yaml", {{}, "3/2"});
  ASSERT_FALSE(selected.ok());
  EXPECT_EQ(selected.error().kind, ErrorKind::kInvalidInput);  // `run` and `plan` exit 2
  EXPECT_NE(selected.error().message.find("--shard '3/2'"), std::string::npos) << selected.error().message;
}

TEST_F(SelectPlanTest, MatrixProblemsAreTheFilesDiagnostics) {
  const std::string bad = dir_ + "/bad.yaml";
  ASSERT_TRUE(WriteFileAtomic(bad, "runner: null\nmatrix:\n  batch_size: [1, -4]\n").ok());
  auto invalid = SelectPlan(bad, {});
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.error().kind, ErrorKind::kInvalidInput);
  EXPECT_EQ(invalid.error().message.rfind(bad + ":3:", 0), 0u) << invalid.error().message;
  EXPECT_TRUE(IsMatrixDiagnostic(invalid.error(), bad));

  const std::string missing = dir_ + "/missing.yaml";
  auto absent = SelectPlan(missing, {});
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.error().kind, ErrorKind::kInvalidInput);
  EXPECT_TRUE(IsMatrixDiagnostic(absent.error(), missing)) << absent.error().message;

  // Not the file's: a bad --only term, or a bad shard (refused before the file is read).
  auto filter = SelectPlan(matrix_, {{"=a"}, ""});
  ASSERT_FALSE(filter.ok());
  EXPECT_FALSE(IsMatrixDiagnostic(filter.error(), matrix_)) << filter.error().message;
  auto shard = SelectPlan(missing, {{}, "0/1"});
  ASSERT_FALSE(shard.ok());
  EXPECT_FALSE(IsMatrixDiagnostic(shard.error(), missing)) << shard.error().message;
}

TEST_F(SelectPlanTest, AResumeMustKeepTheRunsCellsAndEveryFinishedOne) {
  const SelectedPlan first = Select({{}, "1/2"});
  ASSERT_EQ(first.cells.size(), 4u);
  record::RunRecord run;
  run.id = 7;
  run.total_cells = 4;
  std::set<std::string> finished = {first.cells[0].id, first.cells[2].id};
  EXPECT_TRUE(CheckResumedCells(run, finished, first).ok());
  EXPECT_TRUE(CheckResumedCells(run, {}, first).ok());

  const SelectedPlan second = Select({{}, "2/2"});  // as many cells, not the finished ones
  auto stray = CheckResumedCells(run, finished, second);
  ASSERT_FALSE(stray.ok());
  EXPECT_EQ(stray.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(stray.error().message.find("run 7 has 4 cells, but this selection keeps 4 cells, shard 2/2 of 8, "
                                       "not including its finished cell '" +
                                       *finished.begin() + "'"),
            std::string::npos)
      << stray.error().message;

  const SelectedPlan all = Select({});  // the whole matrix: a different count
  auto count = CheckResumedCells(run, {}, all);
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.error().message.find("run 7 has 4 cells, but this selection keeps 8 cells;"),
            std::string::npos)
      << count.error().message;
}

}  // namespace
}  // namespace dlbench::plan
