// scenario: converge through the real `dlbench run` and dlbench-torch on Debian's Fashion-MNIST
// (dataset-fashion-mnist): the reference CNN reaches a target on a documented subset, a target it
// cannot reach ends with the verdict not_reached and its best accuracy, and two runs with the
// same seed and deterministic: true store identical curves.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "e2e_util.h"
#include "record/metrics.h"
#include "record/series.h"
#include "store/result_store.h"
#include "tfrecord/events.h"

namespace dlbench::e2e {
namespace {

bool DatasetInstalled() {
  return std::filesystem::exists("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz");
}

std::vector<record::CellRecord> StoredCells(const std::string& db) {
  auto store = store::OpenSqliteStore(db);
  EXPECT_TRUE(store.ok());
  if (!store.ok()) return {};
  store::CellQuery q;
  q.with_steps = true;
  q.with_series = true;
  auto cells = (*store)->GetCells(1, q);
  EXPECT_TRUE(cells.ok()) << cells.error().message;
  return cells.ok() ? *cells : std::vector<record::CellRecord>{};
}

// The converge curves of a cell by series name, values in time order.
std::map<std::string, std::vector<double>> Curves(const record::CellRecord& c) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& p : c.series) {
    for (std::string_view name : record::series::kConvergeCurves)
      if (p.series == name) out[p.series].push_back(p.value);
  }
  return out;
}

// The reference network (convnet.py's sizes) on the first 4,000 training images, evaluated on
// the first 500 test images every 25 steps of 50, at lr 0.1 instead of the reference's 0.001 so
// that it gets there in few steps: 0.7 takes about 75 to 125 steps (4,000 to 6,000 samples; one
// run's evaluations read 0.586, 0.553, 0.694, 0.592, 0.744 at steps 25 to 125); the test took
// 105 s on this project's 2-core machine while other builds held it.
TEST(ConvergeE2E, TheReferenceCnnReachesItsTargetOnASubset) {
  if (!DatasetInstalled()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  TempDir dir("converge_reach");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, R"(runner: torch
matrix:
  model: fashion_cnn
  scenario: converge
  target_accuracy: 0.7
  batch_size: 50
  lr: 0.1
  device: cpu
  threads: 2
  train_samples: 4000
  eval_samples: 500
  eval_every: 25
  max_epochs: 10
  max_train_time_s: 240
timeout_s: 300
)");
  auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
  const auto cells = StoredCells(db);
  ASSERT_EQ(cells.size(), 1u) << run.out << run.err;
  const record::CellRecord& c = cells[0];
  SCOPED_TRACE(c.message + " " + c.verdict_reasons.dump());
  ASSERT_EQ(c.outcome, record::Outcome::kOk);
  // The target was met, so no not_reached reason; the host monitor may still call the cell
  // contended when ctest runs other tests beside it on a 2-core machine (CI did, session 6), and
  // that verdict is about the machine, not about convergence.
  EXPECT_TRUE(c.verdict == record::Verdict::kValid || c.verdict == record::Verdict::kContended);
  for (const auto& r : c.verdict_reasons)
    EXPECT_FALSE(r.is_string() && r.get<std::string>().rfind("not_reached", 0) == 0) << r;
  EXPECT_EQ(record::MetricValue(c, record::metric::kTargetReached), 1.0);
  EXPECT_EQ(c.stop_reason, "converged");
  const double steps = record::MetricValue(c, record::metric::kStepsToTarget).value_or(-1);
  EXPECT_GT(steps, 0);
  EXPECT_EQ(static_cast<std::int64_t>(steps) % 25, 0) << "the target is met at an evaluation";
  EXPECT_EQ(static_cast<std::size_t>(steps), c.steps.size()) << "training ends at the evaluation that met it";
  EXPECT_EQ(record::MetricValue(c, record::metric::kSamplesToTarget), steps * 50);
  EXPECT_DOUBLE_EQ(record::MetricValue(c, record::metric::kEpochsToTarget).value_or(0), steps * 50 / 4000);
  EXPECT_GE(record::MetricValue(c, record::metric::kFinalEvalAccuracy).value_or(0), 0.7);
  const double wall = record::MetricValue(c, record::metric::kTimeToTargetS).value_or(0);
  const double train = record::MetricValue(c, record::metric::kTrainTimeToTargetS).value_or(0);
  const double eval = record::MetricValue(c, record::metric::kEvalTimeS).value_or(0);
  EXPECT_GT(train, 0);
  EXPECT_GT(eval, 0);
  EXPECT_GE(wall, train + eval) << "the wall time holds the training steps and the evaluations";
  // The window is the whole training: every step measured, none warm-up.
  ASSERT_TRUE(c.window.has_value());
  EXPECT_EQ(c.window->first_step, 0);
  EXPECT_EQ(c.window->steps, static_cast<std::int64_t>(c.steps.size()));
  EXPECT_EQ(c.warmup_rule, "whole_run");
  const auto curves = Curves(c);
  ASSERT_EQ(curves.count(std::string(record::series::kTrainLoss)), 1u);
  EXPECT_EQ(curves.at(std::string(record::series::kTrainLoss)).size(), c.steps.size());
  EXPECT_EQ(curves.at(std::string(record::series::kEvalAccuracy)).size(),
            static_cast<std::size_t>(steps) / 25);
  EXPECT_EQ(curves.at(std::string(record::series::kEvalAccuracy)).back(),
            record::MetricValue(c, record::metric::kFinalEvalAccuracy));
  EXPECT_FALSE(c.extras.contains("undeclared_metrics")) << c.extras.dump();
}

// eval_precisions: after training, the trained model's held-out accuracy at fp32, bf16 and int8
// (quantized after training, on the CPU), each stored with its delta from fp32. A narrower network
// than the reference (8 and 16 filters, dense 128) and one intra-op thread (OpenMP's barriers spin
// when other processes hold the cores) keep the test short. The bound on the deltas,
// 0.03 (30 of the 1,000 test images), is this test's statement: measured on this project's machine,
// see docs/precisions.md "Accuracy of a trained model per precision".
TEST(ConvergeE2E, TheTrainedModelsAccuracyIsStoredPerPrecision) {
  if (!DatasetInstalled()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  TempDir dir("converge_precisions");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, R"(runner: torch
matrix:
  model: fashion_cnn
  base_width: 8
  hidden_size: 128
  scenario: converge
  target_accuracy: 0.72
  batch_size: 50
  lr: 0.1
  device: cpu
  threads: 1
  train_samples: 4000
  eval_samples: 1000
  eval_every: 20
  max_epochs: 4
  max_train_time_s: 100
  eval_precisions: bf16;int8
timeout_s: 200
)");
  auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
  const auto cells = StoredCells(db);
  ASSERT_EQ(cells.size(), 1u) << run.out << run.err;
  const record::CellRecord& c = cells[0];
  SCOPED_TRACE(c.message + " " + c.extras.dump().substr(0, 4000));
  ASSERT_EQ(c.outcome, record::Outcome::kOk);
  EXPECT_FALSE(c.extras.contains("undeclared_metrics")) << c.extras.dump();
  const auto fp32 = record::MetricValue(c, record::metric::kEvalAccuracyFp32);
  const auto bf16 = record::MetricValue(c, record::metric::kEvalAccuracyBf16);
  const auto int8 = record::MetricValue(c, record::metric::kEvalAccuracyInt8);
  ASSERT_TRUE(fp32 && bf16 && int8);
  // fp32 is the model the training's last evaluation saw, evaluated the same way.
  EXPECT_EQ(*fp32, record::MetricValue(c, record::metric::kFinalEvalAccuracy));
  EXPECT_GE(*fp32, 0.5) << "the model trained";
  EXPECT_DOUBLE_EQ(record::MetricValue(c, record::metric::kEvalAccuracyDeltaInt8).value_or(-9),
                   *int8 - *fp32);
  EXPECT_DOUBLE_EQ(record::MetricValue(c, record::metric::kEvalAccuracyDeltaBf16).value_or(-9),
                   *bf16 - *fp32);
  EXPECT_LE(std::abs(*int8 - *fp32), 0.03);
  EXPECT_LE(std::abs(*bf16 - *fp32), 0.03);
  EXPECT_FALSE(record::MetricValue(c, record::metric::kEvalAccuracyFp16)) << "not asked for";
  std::printf("trained fashion_cnn (8/16 filters, dense 128): accuracy fp32 %.4f, bf16 %.4f, int8 %.4f\n",
              *fp32, *bf16, *int8);

  // What the int8 evaluation ran: on the CPU, calibrated on the first 1,000 training images, its
  // weights about a quarter of fp32's.
  const nlohmann::json& info = c.extras["info"]["precision_eval"];
  ASSERT_TRUE(info.is_object()) << c.extras["info"].dump();
  EXPECT_EQ(info.value("eval_samples", 0), 1000);
  const nlohmann::json& q = info["precisions"]["int8"];
  EXPECT_EQ(q.value("device", ""), "cpu");
  EXPECT_EQ(q.value("calibration_samples", 0), 1000);
  const double fp32_bytes = q.value("fp32_weight_bytes", 0.0), int8_bytes = q.value("int8_weight_bytes", 1.0);
  EXPECT_GT(fp32_bytes / int8_bytes, 3.9) << q.dump();
  EXPECT_LT(fp32_bytes / int8_bytes, 4.0) << q.dump();
  EXPECT_EQ(info["precisions"]["bf16"].value("autocast_dtype", ""), "BFloat16");
}

// A tiny variant of the network for 2 epochs of 256 samples cannot reach 0.99: the cell is ok
// (it ran as asked) with the verdict not_reached and the best accuracy in its reason. Run twice
// with the same seed, the curves' values are the same.
TEST(ConvergeE2E, AnUnreachableTargetIsNotReachedAndTheSameSeedGivesTheSameCurves) {
  if (!DatasetInstalled()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  TempDir dir("converge_unreached");
  const std::string matrix = dir / "m.yaml";
  WriteText(matrix, R"(runner: torch
matrix:
  model: fashion_cnn_bn
  base_width: 4
  hidden_size: 32
  scenario: converge
  target_accuracy: 0.99
  batch_size: 32
  lr: 0.05
  device: cpu
  threads: 2
  deterministic: true
  train_samples: 256
  eval_samples: 200
  eval_every: 4
  max_epochs: 2
seed: 5
timeout_s: 120
)");
  std::vector<std::map<std::string, std::vector<double>>> curves;
  for (const char* name : {"a.db", "b.db"}) {
    const std::string db = dir / name;
    auto run = Dlbench({"run", matrix, "--out", dir / (std::string(name) + ".out")}, dir, db);
    const auto cells = StoredCells(db);
    ASSERT_EQ(cells.size(), 1u) << run.out << run.err;
    const record::CellRecord& c = cells[0];
    SCOPED_TRACE(c.message + " " + c.verdict_reasons.dump());
    ASSERT_EQ(c.outcome, record::Outcome::kOk);
    EXPECT_EQ(c.verdict, record::Verdict::kNotReached);
    ASSERT_FALSE(c.verdict_reasons.empty());
    const std::string reason = c.verdict_reasons[0].get<std::string>();
    EXPECT_EQ(reason.rfind("not_reached: accuracy >= 0.99 not reached; training ended at max_epochs", 0), 0u)
        << reason;
    const double best = record::MetricValue(c, record::metric::kBestEvalAccuracy).value_or(-1);
    EXPECT_NE(reason.find(fmt::format("best accuracy {:.4f}", best)), std::string::npos) << reason;
    EXPECT_EQ(record::MetricValue(c, record::metric::kTargetReached), 0.0);
    EXPECT_FALSE(record::MetricValue(c, record::metric::kTimeToTargetS)) << "no time to a target not reached";
    EXPECT_EQ(c.steps.size(), 16u);
    curves.push_back(Curves(c));
    if (curves.size() > 1) continue;

    // The TensorBoard export of the run: one folder for the cell, whose scalars are the stored
    // series (as float32, TensorBoard's scalar type) on the step axis.
    const std::string tb = dir / "tb";
    auto exported = Dlbench({"export", "1", "--format", "tensorboard", "-o", tb}, dir, db);
    ASSERT_EQ(exported.exit_code, 0) << exported.out << exported.err;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(tb))
      if (entry.is_regular_file()) files.push_back(entry.path());
    ASSERT_EQ(files.size(), 1u);
    auto events = tfrecord::ReadEventFile(files[0]);
    ASSERT_TRUE(events.ok()) << events.error().message;
    EXPECT_EQ(events->file_version, tfrecord::kEventFileVersion);
    std::map<std::string, std::vector<float>> scalars;
    std::map<std::string, std::vector<std::int64_t>> steps;
    for (const auto& e : events->scalars) {
      scalars[e.tag].push_back(e.value);
      steps[e.tag].push_back(e.step);
    }
    for (const auto& [series, values] : curves.back()) {
      std::string tag = series;
      std::replace(tag.begin(), tag.end(), '.', '/');
      ASSERT_EQ(scalars[tag].size(), values.size()) << tag;
      for (std::size_t i = 0; i < values.size(); ++i)
        EXPECT_EQ(scalars[tag][i], static_cast<float>(values[i])) << tag;
    }
    EXPECT_EQ(steps["eval/accuracy"], (std::vector<std::int64_t>{4, 8, 12, 16})) << "evaluated every 4 steps";
    EXPECT_EQ(scalars["step/time_ms"].size(), 16u);

    // Where the memory goes: the sets kept on the device, 456 images of 28 x 28 float32 and an
    // int64 label each (456 x 3,144 = 1,433,664 bytes = 1.37 MiB), stored and in show's Memory table.
    EXPECT_EQ(record::MetricValue(c, record::metric::kDatasetBytes), 456.0 * (28 * 28 * 4 + 8));
    auto show = Dlbench({"show", "1"}, dir, db);
    ASSERT_EQ(show.exit_code, 0) << show.out << show.err;
    const std::size_t table = show.out.find("\nMemory (");
    ASSERT_NE(table, std::string::npos) << show.out;
    const std::size_t header = show.out.find("dataset", show.out.find('\n', table + 1));
    const std::size_t row = show.out.find("#0 ", table);
    ASSERT_NE(header, std::string::npos) << show.out;
    ASSERT_NE(row, std::string::npos) << show.out;
    EXPECT_LT(header, row) << show.out;
    EXPECT_NE(show.out.substr(row, show.out.find('\n', row) - row).find("1.37 MiB"), std::string::npos)
        << show.out;
  }
  ASSERT_EQ(curves[0].size(), 4u);
  EXPECT_EQ(curves[0].at(std::string(record::series::kTrainLoss)).size(), 16u);
  EXPECT_EQ(curves[0].at(std::string(record::series::kEvalAccuracy)).size(), 4u);
  EXPECT_EQ(curves[0], curves[1]) << "the same seed with deterministic: true gives the same curves";
}

}  // namespace
}  // namespace dlbench::e2e
