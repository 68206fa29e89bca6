// `show`'s Memory table (cli/memory_console.h) on hand-made stored records: a converge cell's
// dataset_bytes has its own column, and a run without converge cells keeps the table's shape.
#include "cli/memory_console.h"

#include <gtest/gtest.h>

#include <string>

#include "record/metrics.h"

namespace dlbench::cli {
namespace {

namespace metric = record::metric;

// A cell with the breakdown as dlbench-torch sends it; figures in bytes, chosen so that each
// prints differently (FormatBytes: 3 significant digits).
record::CellRecord Breakdown(int index, const std::string& label, double weights, double dataset) {
  record::CellRecord c;
  c.index = index;
  c.label = label;
  record::SetMetric(c, metric::kWeightBytes, weights);
  record::SetMetric(c, metric::kGradBytes, weights);
  record::SetMetric(c, metric::kOptimizerStateBytes, 2 * weights);
  record::SetMetric(c, metric::kInputBatchBytes, 528);
  if (dataset > 0) record::SetMetric(c, metric::kDatasetBytes, dataset);
  record::SetMetric(c, metric::kExpectedResidentBytes, 4 * weights + 528 + dataset);
  record::SetMetric(c, metric::kMemoryPeakBytes, 8 * 1024 * 1024);
  return c;
}

// The header line and the row that starts with `cell`'s label, split on runs of spaces.
std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    std::size_t j = i;
    // A value is "1.15 MiB": one space inside, two or more between columns.
    while (j < line.size() && !(line[j] == ' ' && (j + 1 >= line.size() || line[j + 1] == ' '))) ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string LineWith(const std::string& text, const std::string& needle) {
  const std::size_t at = text.find(needle);
  if (at == std::string::npos) return "";
  const std::size_t start = text.rfind('\n', at) + 1;
  return text.substr(start, text.find('\n', at) - start);
}

TEST(MemoryConsoleTest, AConvergeCellsDatasetHasItsOwnColumn) {
  // 13,818 fp32 parameters (55,272 bytes) and the 1,207,296-byte dataset of
  // ConvergeRunnerTest.SendsWhereTheMemoryGoesWithItsDataset; a train cell without a dataset.
  const std::vector<record::CellRecord> cells = {Breakdown(0, "converge", 55272, 1207296),
                                                 Breakdown(1, "train", 134152, 0)};
  const std::string out = RenderMemoryBreakdowns(cells);
  const std::vector<std::string> header = Words(LineWith(out, "weights"));
  ASSERT_EQ(header.size(), 11u) << out;
  EXPECT_EQ(header[4], "batch");
  EXPECT_EQ(header[5], "dataset");
  EXPECT_EQ(header[6], "expected");
  const std::vector<std::string> converge = Words(LineWith(out, "#0 converge"));
  ASSERT_EQ(converge.size(), 11u) << out;
  EXPECT_EQ(converge[1], "54 KiB") << "55,272 bytes = 53.98 KiB";
  EXPECT_EQ(converge[5], "1.15 MiB") << "1,207,296 bytes";
  // 4 x 55,272 + 528 + 1,207,296 = 1,428,912 bytes = 1.36 MiB: the dataset is counted in expected.
  EXPECT_EQ(converge[6], "1.36 MiB");
  const std::vector<std::string> train = Words(LineWith(out, "#1 train"));
  ASSERT_EQ(train.size(), 11u) << out;
  EXPECT_EQ(train[5], "-") << "a cell without a dataset";
  EXPECT_EQ(train[6], "525 KiB") << "4 x 134,152 + 528 = 537,136 bytes = 524.55 KiB";
}

TEST(MemoryConsoleTest, WithoutAConvergeCellTheTableHasNoDatasetColumn) {
  const std::string out = RenderMemoryBreakdowns({Breakdown(0, "train", 134152, 0)});
  const std::vector<std::string> header = Words(LineWith(out, "weights"));
  ASSERT_EQ(header.size(), 10u) << out;
  EXPECT_EQ(header[5], "expected");
  EXPECT_EQ(out.find("dataset "), std::string::npos) << out;
  EXPECT_EQ(RenderMemoryBreakdowns({record::CellRecord{}}), "") << "no cell with a breakdown: no table";
}

}  // namespace
}  // namespace dlbench::cli

namespace dlbench::cli {
namespace {

// A measured run of the value found that ended oom is listed after the search's probes as
// "measured", and the header counts only the search's probes.
TEST(MemoryConsoleTest, AMeasuredRunThatEndedOomIsListedAsMeasured) {
  record::CellRecord c;
  c.index = 1;
  c.label = "resnet50 train";
  c.extras["boundary_search"] = {
      {"key", "batch_size"},
      {"found", 354},
      {"first_failing", 373},
      {"end", "converged"},
      {"max_probes", 14},
      {"probes",
       {{{"batch_size", 8}, {"outcome", "ok"}, {"guided", false}},
        {{"batch_size", 373}, {"outcome", "ok"}, {"guided", true}},
        {{"batch_size", 373}, {"outcome", "oom"}, {"measured", true}, {"message", "CUDA out of memory"}}}}};
  const std::string out = RenderBoundarySearches({c});
  EXPECT_NE(
      out.find(
          "#1 resnet50 train: largest batch_size 354, first failing 373 (converged; 2 of at most 14 probes)"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("measured"), std::string::npos) << out;
  EXPECT_NE(out.find("peaks"), std::string::npos) << out;
  EXPECT_NE(out.find("CUDA out of memory"), std::string::npos) << out;
}

// Probes kept from an interrupted run of the search (orchestrator/probe_journal.h) are counted in
// the header and their process is marked as that run's.
TEST(MemoryConsoleTest, ProbesKeptFromAnInterruptedRunAreMarked) {
  record::CellRecord c;
  c.index = 2;
  c.label = "bert_base train";
  c.extras["boundary_search"] = {{"key", "batch_size"},
                                 {"found", 16},
                                 {"first_failing", 17},
                                 {"end", "converged"},
                                 {"max_probes", 6},
                                 {"resumed_probes", 1},
                                 {"probes",
                                  {{{"batch_size", 16},
                                    {"outcome", "ok"},
                                    {"resumed", true},
                                    {"process", {{"pid", 41}, {"cell_of_process", 1}}}},
                                   {{"batch_size", 17},
                                    {"outcome", "oom"},
                                    {"resumed", false},
                                    {"process", {{"pid", 52}, {"cell_of_process", 1}}}}}}};
  const std::string out = RenderBoundarySearches({c});
  EXPECT_NE(out.find("(converged; 2 of at most 6 probes, 1 kept from an interrupted run)"), std::string::npos)
      << out;
  EXPECT_NE(LineWith(out, "pid 41 cell 1").find("pid 41 cell 1, earlier run"), std::string::npos) << out;
  EXPECT_EQ(LineWith(out, "pid 52 cell 1").find("earlier run"), std::string::npos) << out;
}

// Each probe's wall time (`times.wall_s`) has a column, and the header sums them where every
// probe has one: where a search's time went (issue 13). A record from before probes kept times
// shows "-" and no sum.
TEST(MemoryConsoleTest, EachProbesWallTimeIsShownAndSummed) {
  record::CellRecord c;
  c.index = 0;
  c.label = "bert_base train";
  c.extras["boundary_search"] = {
      {"key", "batch_size"},
      {"found", 16},
      {"first_failing", 17},
      {"end", "converged"},
      {"max_probes", 6},
      {"probes",
       {{{"batch_size", 16}, {"outcome", "ok"}, {"times", {{"wall_s", 1.3}, {"setup_s", 0.9}}}},
        {{"batch_size", 17}, {"outcome", "oom"}, {"times", {{"wall_s", 2.0}}}}}}};
  std::string out = RenderBoundarySearches({c});
  EXPECT_NE(out.find("(converged; 2 of at most 6 probes, 3.3 s of probes)"), std::string::npos) << out;
  const std::vector<std::string> header = Words(LineWith(out, "probe  batch_size"));
  ASSERT_EQ(header.size(), 8u) << out;
  EXPECT_EQ(header[5], "wall");
  const std::vector<std::string> first = Words(LineWith(out, "ok  "));
  ASSERT_GE(first.size(), 6u) << out;
  EXPECT_EQ(first[5], "1.30 s") << out;
  c.extras["boundary_search"]["probes"][1].erase("times");
  out = RenderBoundarySearches({c});
  EXPECT_NE(out.find("(converged; 2 of at most 6 probes)"), std::string::npos) << out;
  const std::vector<std::string> second = Words(LineWith(out, "oom  "));
  ASSERT_GE(second.size(), 6u) << out;
  EXPECT_EQ(second[5], "-") << out;
}

}  // namespace
}  // namespace dlbench::cli
