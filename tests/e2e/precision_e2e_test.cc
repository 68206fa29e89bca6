// Precisions through the real `dlbench run` and dlbench-torch: a tiny BERT at fp32, int8 and bf16
// on the CPU, each int8/bf16 cell compared with the fp32 cell of the same model on the fixed
// evaluation set (report/precision_view.h), and `dlbench show`'s trade-off table. A model with
// no fp32 cell in the run says so instead of being compared with anything.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "record/metrics.h"
#include "report/precision_view.h"
#include "store/result_store.h"

namespace dlbench::e2e {
namespace {

// Bounded by steps (docs: torch_e2e_test.cc says why), one intra-op thread.
constexpr char kMeasure[] = R"(timeout_s: 120
measure:
  min_steps: 5
  max_steps: 12
  min_warmup_steps: 2
  min_time_s: 0
  max_time_s: 60
  target_rel_ci: 0.0001
)";

std::vector<record::CellRecord> StoredCells(const std::string& db) {
  auto store = store::OpenSqliteStore(db);
  EXPECT_TRUE(store.ok());
  if (!store.ok()) return {};
  auto cells = (*store)->GetCells(1, store::CellQuery{});
  EXPECT_TRUE(cells.ok()) << cells.error().message;
  return cells.ok() ? *cells : std::vector<record::CellRecord>{};
}

TEST(PrecisionE2E, Int8AndBf16AreComparedWithTheFp32CellAndShown) {
  TempDir dir("precision");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, std::string(R"(runner: torch
matrix:
  model: bert_base
  layers: 1
  hidden_size: 32
  heads: 2
  seq_len: 16
  vocab_size: 100
  scenario: infer
  batch_size: 2
  device: cpu
  threads: 1
  precision: [int8, fp32, bf16]
)") + kMeasure);
  auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
  const auto cells = StoredCells(db);
  ASSERT_EQ(cells.size(), 3u) << run.out << run.err;
  std::map<std::string, const record::CellRecord*> by_precision;
  for (const auto& c : cells) {
    EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
    EXPECT_FALSE(c.extras.contains("undeclared_metrics")) << c.extras.dump();
    by_precision[report::PrecisionOf(c)] = &c;
  }
  ASSERT_EQ(by_precision.size(), 3u);
  const record::CellRecord& int8 = *by_precision["int8"];
  const record::CellRecord& fp32 = *by_precision["fp32"];
  EXPECT_NE(int8.seed, fp32.seed) << "each cell has its own seed; the evaluation's weights do not";

  // Linear weights: 13376 elements in 8 layers (int8_runner_test.cc counts them).
  EXPECT_EQ(record::MetricValue(fp32, record::metric::kLinearWeightBytes), 4 * 13376.0);
  EXPECT_EQ(record::MetricValue(int8, record::metric::kLinearWeightBytes), 13376.0 + 8 * 16);

  // int8 ran first: its reference is found among the cells that ran after it.
  const report::OutputAgreement a = report::CompareWithFp32(int8, cells);
  ASSERT_TRUE(a.has_figures()) << a.why_none;
  EXPECT_EQ(a.reference, &fp32);
  EXPECT_EQ(a.rows, 4) << "reference_samples' default";
  EXPECT_GT(a.max_abs_diff, 0.0);
  const report::OutputAgreement b = report::CompareWithFp32(*by_precision["bf16"], cells);
  ASSERT_TRUE(b.has_figures()) << b.why_none;

  auto show = Dlbench({"show", "1"}, dir, db);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("Precisions of "), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("top-1 agree"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("fastest"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("most accurate"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("of 4"), std::string::npos) << "top-1 agreement over the 4 evaluation rows\n"
                                                      << show.out;
}

TEST(PrecisionE2E, WithoutAnFp32CellTheRunSaysSo) {
  TempDir dir("precision_noref");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, std::string(R"(runner: torch
matrix:
  model: bert_base
  layers: 1
  hidden_size: 32
  heads: 2
  seq_len: 16
  vocab_size: 100
  scenario: infer
  batch_size: 2
  device: cpu
  threads: 1
  precision: [int8, bf16]
)") + kMeasure);
  auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
  const auto cells = StoredCells(db);
  ASSERT_EQ(cells.size(), 2u) << run.out << run.err;
  for (const auto& c : cells) {
    const report::OutputAgreement a = report::CompareWithFp32(c, cells);
    EXPECT_FALSE(a.has_figures());
    EXPECT_EQ(a.why_none, report::kNoFp32Reference);
  }
  auto show = Dlbench({"show", "1"}, dir, db);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find(std::string("int8: ") + report::kNoFp32Reference), std::string::npos) << show.out;
}

// int8 where the runner has no int8 form ends unsupported, naming what works, and show says so
// once ("unsupported: precision int8 of ..."), not "unsupported: unsupported: ...".
TEST(PrecisionE2E, Int8OfACnnIsUnsupportedAndShowSaysItOnce) {
  TempDir dir("precision_cnn_int8");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, std::string(R"(runner: torch
matrix:
  model: resnet50
  image_size: 32
  base_width: 4
  num_classes: 4
  scenario: infer
  batch_size: 2
  device: cpu
  threads: 1
  precision: int8
)") + kMeasure);
  auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
  const auto cells = StoredCells(db);
  ASSERT_EQ(cells.size(), 1u) << run.out << run.err;
  EXPECT_EQ(cells[0].outcome, record::Outcome::kUnsupported) << cells[0].message;
  EXPECT_NE(cells[0].message.find("bert_base"), std::string::npos)
      << "names what works: " << cells[0].message;
  auto show = Dlbench({"show", "1"}, dir, db);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find(": unsupported: precision int8 of resnet50"), std::string::npos) << show.out;
  EXPECT_EQ(show.out.find("unsupported: unsupported:"), std::string::npos) << show.out;
}

}  // namespace
}  // namespace dlbench::e2e
