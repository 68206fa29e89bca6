// Precisions through the real `dlbench run` and dlbench-torch: a tiny BERT at fp32, int8 and bf16
// on the CPU, each int8/bf16 cell compared with the fp32 cell of the same model on the fixed
// evaluation set (report/precision_view.h), and `dlbench show`'s trade-off table. A model with
// no fp32 cell in the run says so instead of being compared with anything. A CNN quantized offline
// by scripts/quantize_cnn.py (Debian's python3-torch) runs as a TorchScript model at int8.
#include <gtest/gtest.h>

#include <filesystem>
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

// A small ResNet-50 infer matrix on one CPU thread, batch 2, with `keys` (YAML lines indented
// under `matrix:`) added; bounded by kMeasure.
std::string SmallResnetCpuMatrix(const std::string& keys) {
  return std::string(R"(runner: torch
matrix:
  model: resnet50
  image_size: 32
  base_width: 4
  num_classes: 4
  scenario: infer
  batch_size: 2
  device: cpu
  threads: 1
)") + keys +
         kMeasure;
}

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

// The small SSD at fp32 and bf16: both record their detections, the bf16 cell's boxes are matched
// with the fp32 cell's by IoU, and show prints the share and the mean IoU. min_agreement for bf16
// travels to the runner, which records it and its own check against fp32.
TEST(PrecisionE2E, SsdBoxesAreMatchedByIouInShow) {
  TempDir dir("precision-ssd");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, std::string(R"(runner: torch
matrix:
  model: ssd_mobilenet
  image_size: 64
  width_mult: 0.25
  num_classes: 3
  scenario: infer
  batch_size: 1
  device: cpu
  threads: 1
  reference_samples: 2
  min_agreement: "bf16=0.5"
  precision: [fp32, bf16]
)") + kMeasure);
  auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
  const auto cells = StoredCells(db);
  ASSERT_EQ(cells.size(), 2u) << run.out << run.err;
  const record::CellRecord* bf16 = nullptr;
  for (const auto& c : cells) {
    ASSERT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
    const auto& eval = c.extras["info"]["eval"];
    ASSERT_TRUE(eval.contains("detections")) << eval.dump();
    EXPECT_GT(eval["detections"].size(), 0u);
    // At most 2048 / 2 per image; the SSD keeps at most 300 per image.
    EXPECT_LE(eval["detections"].size(), 600u);
    if (report::PrecisionOf(c) == "bf16") bf16 = &c;
  }
  ASSERT_NE(bf16, nullptr);
  const auto& eval = bf16->extras["info"]["eval"];
  EXPECT_EQ(eval["min_agreement"], 0.5);
  ASSERT_TRUE(eval.contains("self_check")) << eval.dump();
  const report::OutputAgreement a = report::CompareWithFp32(*bf16, cells);
  ASSERT_TRUE(a.has_figures()) << a.why_none;
  ASSERT_TRUE(a.boxes.has_value()) << a.boxes_why_none;
  EXPECT_GT(a.boxes->reference_boxes, 0);
  ASSERT_TRUE(a.boxes->match_share.has_value());
  EXPECT_GT(*a.boxes->match_share, 0.0) << "bf16 moves SSD's boxes little: some must match";
  ASSERT_TRUE(a.boxes->mean_iou.has_value());
  EXPECT_GE(*a.boxes->mean_iou, 0.5);
  EXPECT_LE(*a.boxes->mean_iou, 1.0);

  auto show = Dlbench({"show", "1"}, dir, db);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("bf16: boxes matched (same class, IoU >= 0.5): "), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("mean IoU "), std::string::npos) << show.out;
}

// A bound on |diff| that bf16 breaks (max_abs_diff 0: any rounding is beyond it) on the small
// ResNet: the runner records the bound and its own figures, searches its stages for the layer at
// fault, and show warns, naming the figure, the bound and that layer. max_mean_abs_diff at the
// registry's maximum is not breached.
TEST(PrecisionE2E, ADiffToleranceBreachIsAWarningNamingTheLayerInShow) {
  TempDir dir("precision-diff-tolerance");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, SmallResnetCpuMatrix(R"(  reference_samples: 2
  max_abs_diff: "bf16=0"
  max_mean_abs_diff: "bf16=1000000"
  precision: [fp32, bf16]
)"));
  auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
  const auto cells = StoredCells(db);
  ASSERT_EQ(cells.size(), 2u) << run.out << run.err;
  const record::CellRecord* bf16 = nullptr;
  for (const auto& c : cells) {
    ASSERT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
    if (report::PrecisionOf(c) == "bf16") bf16 = &c;
  }
  ASSERT_NE(bf16, nullptr);
  const auto& eval = bf16->extras["info"]["eval"];
  EXPECT_EQ(eval["max_abs_diff"], 0.0);
  EXPECT_EQ(eval["max_mean_abs_diff"], 1e6);
  ASSERT_TRUE(eval.contains("self_check")) << eval.dump();
  EXPECT_GT(eval["self_check"]["max_abs_diff"].get<double>(), 0.0);
  ASSERT_TRUE(eval.contains("fault")) << eval.dump();
  const std::string layer = eval["fault"].value("layer", "");
  ASSERT_FALSE(layer.empty()) << eval.dump();
  EXPECT_EQ(eval["fault"]["stages_total"], 18) << "stem, 16 bottlenecks, fc";

  auto show = Dlbench({"show", "1"}, dir, db);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("bf16: warning: max |diff| "), std::string::npos) << show.out;
  EXPECT_NE(
      show.out.find(" against fp32 above the tolerance max_abs_diff 0; layer most likely at fault: " + layer),
      std::string::npos)
      << show.out;
  EXPECT_EQ(show.out.find("max_mean_abs_diff"), std::string::npos) << show.out;
}

// int8 where the runner has no int8 form ends unsupported, naming what works, and show says so
// once ("unsupported: precision int8 of ..."), not "unsupported: unsupported: ...", and so does run.
TEST(PrecisionE2E, Int8OfACnnIsUnsupportedAndShowSaysItOnce) {
  TempDir dir("precision_cnn_int8");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, SmallResnetCpuMatrix("  precision: int8\n"));
  auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
  const auto cells = StoredCells(db);
  ASSERT_EQ(cells.size(), 1u) << run.out << run.err;
  EXPECT_EQ(cells[0].outcome, record::Outcome::kUnsupported) << cells[0].message;
  EXPECT_NE(cells[0].message.find("bert_base"), std::string::npos)
      << "names what works: " << cells[0].message;
  // run's line under the cell says it once too.
  EXPECT_NE(run.out.find("\n    unsupported: precision int8 of resnet50"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("unsupported: unsupported:"), std::string::npos) << run.out;
  auto show = Dlbench({"show", "1"}, dir, db);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find(": unsupported: precision int8 of resnet50"), std::string::npos) << show.out;
  EXPECT_EQ(show.out.find("unsupported: unsupported:"), std::string::npos) << show.out;
}

// The interpreter with Debian's python3-torch: /usr/bin/python3 where present (a pyenv or venv
// python3 on PATH may lack the Debian packages), else python3 on PATH.
std::string Python() { return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

// scripts/quantize_cnn.py makes a tiny Fashion-MNIST CNN (width 4, dense 32) quantized statically
// and its fp32 twin; `dlbench run` runs the int8 file at precision int8 (its layers as saved, the
// file's size reported) and refuses the fp32 file at int8, since it holds nothing quantized.
TEST(PrecisionE2E, AnOfflineQuantizedTorchScriptCnnRunsAtInt8) {
  TempDir dir("precision_ts_int8");
  if (RunCommand({Python(), "-c", "import torch, torchvision"}, dir).exit_code != 0)
    GTEST_SKIP() << "python3-torch and python3-torchvision are not installed";
  const std::string int8_file = dir / "q.pt", fp32_file = dir / "f.pt";
  auto made = RunCommand(
      {Python(), std::string(DLBENCH_SOURCE_DIR) + "/scripts/quantize_cnn.py", "--out", int8_file,
       "--fp32-out", fp32_file, "--base-width", "4", "--hidden-size", "32", "--calibration-samples", "64"},
      dir);
  ASSERT_EQ(made.exit_code, 0) << made.out << made.err;
  const nlohmann::json made_info = nlohmann::json::parse(made.out);
  EXPECT_EQ(made_info.value("input_shapes", ""), "B,1,28,28");
  const std::int64_t int8_bytes = static_cast<std::int64_t>(std::filesystem::file_size(int8_file));
  EXPECT_EQ(made_info.value("file_bytes", std::int64_t{0}), int8_bytes);

  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, std::string(R"(runner: torch
matrix:
  model: torchscript
  model_path: [)") + int8_file +
                        ", " + fp32_file + R"(]
  input_shapes: B,1,28,28
  scenario: infer
  batch_size: 2
  device: cpu
  threads: 1
  precision: int8
)" + kMeasure);
  auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
  const auto cells = StoredCells(db);
  ASSERT_EQ(cells.size(), 2u) << run.out << run.err;
  std::map<std::string, const record::CellRecord*> by_file;
  for (const auto& c : cells) by_file[c.params.value("model_path", "")] = &c;
  ASSERT_EQ(by_file.size(), 2u);

  const record::CellRecord& int8 = *by_file[int8_file];
  ASSERT_EQ(int8.outcome, record::Outcome::kOk) << int8.message;
  EXPECT_EQ(record::MetricValue(int8, record::metric::kModelFileBytes), static_cast<double>(int8_bytes));
  ASSERT_TRUE(int8.effective.contains("quantization")) << int8.effective.dump();
  const nlohmann::json& q = int8.effective["quantization"];
  EXPECT_EQ(q.value("scheme", "").rfind("offline", 0), 0u) << q.dump();
  // conv1 and conv2 (ConvReLU2d), dense (LinearReLU) and logits (Linear): 4 packed layers.
  EXPECT_EQ(q["in_model"].value("packed_layers_total", 0), 4) << q.dump();
  EXPECT_NE(int8.effective.value("param_dtype", "").find("as saved in the TorchScript file"),
            std::string::npos)
      << int8.effective.dump();
  EXPECT_FALSE(int8.extras.contains("undeclared_metrics")) << int8.extras.dump();

  const record::CellRecord& fp32 = *by_file[fp32_file];
  EXPECT_EQ(fp32.outcome, record::Outcome::kUnsupported);
  EXPECT_NE(fp32.message.find("holds no quantized layers"), std::string::npos) << fp32.message;
  EXPECT_NE(fp32.message.find("scripts/quantize_cnn.py"), std::string::npos) << fp32.message;
  // At these sizes the file's code is a large share: the fp32 twin is larger, not 4 times larger.
  EXPECT_GT(static_cast<std::int64_t>(std::filesystem::file_size(fp32_file)), int8_bytes);
}

}  // namespace
}  // namespace dlbench::e2e
