// scenario: converge in dlbench-torch: its option parsing and curve thinning on hand-computed
// values, and the real binary trained on a small Fashion-MNIST subset through its protocol pipes.
#include "converge.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "record/metrics.h"
#include "record/series.h"
#include "runner_harness.h"

namespace dlbench::torchrunner {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kRunner = std::string(DLBENCH_BIN_DIR) + "/dlbench-torch";
const std::string kDataset = kDefaultDatasetDir;

bool DatasetInstalled() { return fs::exists(kDataset + "/t10k-labels-idx1-ubyte.gz"); }

TEST(ConvergeOptionsTest, ReadsTheKeysWithTheirDocumentedDefaults) {
  auto o =
      ParseConvergeOptions({{"model", "fashion_cnn"}, {"scenario", "converge"}, {"target_accuracy", 0.9}});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->target_accuracy, 0.9);
  EXPECT_FALSE(o->target_loss);
  EXPECT_FALSE(o->eval_every);
  EXPECT_EQ(o->max_epochs, 100);
  EXPECT_EQ(o->max_train_time_s, 3600);
  EXPECT_EQ(o->dataset_dir, kDataset);
  EXPECT_EQ(o->TargetText(), "accuracy >= 0.9");

  auto loss = ParseConvergeOptions({{"model", "fashion_cnn"},
                                    {"scenario", "converge"},
                                    {"target_loss", 0.35},
                                    {"eval_every", 50},
                                    {"train_samples", 1000}});
  ASSERT_TRUE(loss.ok()) << loss.error().message;
  EXPECT_EQ(loss->TargetText(), "loss <= 0.35");
  EXPECT_EQ(loss->eval_every, 50);
  EXPECT_EQ(loss->train_samples, 1000);
}

TEST(ConvergeOptionsTest, NeedsExactlyOneTarget) {
  for (const json& params :
       {json{{"model", "fashion_cnn"}, {"scenario", "converge"}}, json{{"model", "fashion_cnn"},
                                                                       {"scenario", "converge"},
                                                                       {"target_accuracy", 0.9},
                                                                       {"target_loss", 0.3}}}) {
    auto o = ParseConvergeOptions(params);
    ASSERT_FALSE(o.ok()) << params.dump();
    EXPECT_NE(o.error().message.find("exactly one of target_accuracy and target_loss"), std::string::npos);
  }
  auto range =
      ParseConvergeOptions({{"model", "fashion_cnn"}, {"scenario", "converge"}, {"target_accuracy", 1.5}});
  ASSERT_FALSE(range.ok());
  EXPECT_NE(range.error().message.find("target_accuracy"), std::string::npos) << range.error().message;
}

TEST(ThinnedCurveTest, KeepsEveryPointUntilFullThenMergesPairs) {
  ThinnedCurve curve;
  for (std::size_t i = 0; i < ThinnedCurve::kMaxPoints; ++i) curve.Add(static_cast<std::int64_t>(i), 2.0 * i);
  EXPECT_EQ(curve.size(), ThinnedCurve::kMaxPoints);
  json j = curve.ToJson();
  EXPECT_EQ(j["per_point"], 1);
  EXPECT_EQ(j["value"][5], 10.0);

  // The next point halves the curve: point k is the mean of raw points 2k and 2k+1, stamped at
  // 2k+1; the new point starts a pair of its own.
  curve.Add(100000, 7.0);
  j = curve.ToJson();
  EXPECT_EQ(curve.size(), ThinnedCurve::kMaxPoints / 2 + 1);
  EXPECT_EQ(j["per_point"], 2);
  EXPECT_EQ(j["t_ns"][0], 1);
  EXPECT_EQ(j["value"][0], 1.0);   // (0 + 2) / 2
  EXPECT_EQ(j["value"][3], 13.0);  // (12 + 14) / 2
  EXPECT_EQ(j["t_ns"].back(), 100000);
  EXPECT_EQ(j["value"].back(), 7.0);
  curve.Add(100001, 9.0);  // completes the last pair
  j = curve.ToJson();
  EXPECT_EQ(curve.size(), ThinnedCurve::kMaxPoints / 2 + 1);
  EXPECT_EQ(j["t_ns"].back(), 100001);
  EXPECT_EQ(j["value"].back(), 8.0);
}

protocol::CellConfig ConvergeConfig(json extra) {
  protocol::CellConfig c;
  c.params = {{"model", "fashion_cnn"}, {"base_width", 4},     {"hidden_size", 32},
              {"scenario", "converge"}, {"batch_size", 32},    {"lr", 0.05},
              {"device", "cpu"},        {"threads", 1},        {"deterministic", true},
              {"train_samples", 256},   {"eval_samples", 128}, {"max_epochs", 2},
              {"target_accuracy", 0.99}};
  if (extra.is_object()) c.params.update(extra);
  c.seed = 11;
  c.limits.max_steps = 100000;
  c.limits.max_time_s = 120;
  c.cell_key = "converge";
  return c;
}

testing::HarnessOptions NoStop() {
  testing::HarnessOptions o;
  o.stop_after_steps = 1'000'000'000;
  return o;
}

const json* FindMetricIn(const json& extras, std::string_view name) {
  for (const auto& m : extras["metrics"])
    if (m.value("name", "") == name) return &m;
  return nullptr;
}

// eval_precisions through the real runner on a tiny variant (width 4, dense 32, 256 training
// images, calibration on all 256): after training, the trained model's accuracy at fp32, bf16 and
// int8, each delta its accuracy minus fp32's, fp32's equal to the last training evaluation's (the
// same model, set and precision), and the int8 form's weight bytes as hand-computed. None of it is
// in a step: the cell has its 16 steps.
TEST(ConvergeRunnerTest, EvaluatesTheTrainedModelAtEachPrecision) {
  if (!DatasetInstalled()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  auto t = testing::RunCell(kRunner, ConvergeConfig({{"eval_precisions", "int8;bf16"}}), NoStop());
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_FALSE(t->error) << t->error->dump();
  EXPECT_EQ(t->steps.size(), 16u);
  ASSERT_EQ(t->extras.size(), 1u);
  const json& extras = t->extras[0];
  ASSERT_TRUE(extras["info"].contains("precision_eval")) << extras["info"].dump();
  auto value = [&](std::string_view name) {
    const json* m = FindMetricIn(extras, name);
    EXPECT_NE(m, nullptr) << name;
    return m == nullptr ? -1.0 : (*m)["value"].get<double>();
  };
  const double fp32 = value(record::metric::kEvalAccuracyFp32);
  EXPECT_EQ(fp32, value(record::metric::kFinalEvalAccuracy));
  EXPECT_DOUBLE_EQ(value(record::metric::kEvalAccuracyDeltaInt8),
                   value(record::metric::kEvalAccuracyInt8) - fp32);
  EXPECT_DOUBLE_EQ(value(record::metric::kEvalAccuracyDeltaBf16),
                   value(record::metric::kEvalAccuracyBf16) - fp32);
  EXPECT_EQ(FindMetricIn(extras, record::metric::kEvalAccuracyFp16), nullptr);
  const json& info = extras["info"]["precision_eval"];
  EXPECT_EQ(info["eval_samples"], 128);
  // fp32 always, and the two asked.
  EXPECT_EQ(info["precisions"].size(), 3u);
  EXPECT_TRUE(info["precisions"].contains("fp32"));
  const json& int8 = info["precisions"]["int8"];
  EXPECT_EQ(int8["device"], "cpu");
  EXPECT_EQ(int8["calibration_samples"], 256) << "all of a training set smaller than 1,000";
  // fp32: conv1 1x4x25 + 4, conv2 4x8x25 + 8, dense 392x32 + 32, logits 32x10 + 10 = 104 + 808 +
  // 12576 + 330 = 13818 floats;
  // int8 (models/static_int8_test.cc): 180 + 960 + 12688 + 376 = 14204 bytes.
  EXPECT_EQ(int8["fp32_weight_bytes"], 4 * 13818);
  EXPECT_EQ(int8["int8_weight_bytes"], 14204);
}

TEST(ConvergeRunnerTest, TrainsEpochsOfWholeBatchesAndReportsItsCurves) {
  if (!DatasetInstalled()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  auto t = testing::RunCell(kRunner, ConvergeConfig({}), NoStop());
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_FALSE(t->error) << t->error->dump();
  ASSERT_TRUE(t->done);
  // 256 samples in batches of 32: 8 steps an epoch, 2 epochs, an evaluation after each.
  EXPECT_EQ(t->steps.size(), 16u);
  EXPECT_EQ((*t->done)["reason"], "max_epochs");
  EXPECT_EQ((*t->ready)["converge"]["steps_per_epoch"], 8);
  EXPECT_EQ((*t->ready)["converge"]["target"], "accuracy >= 0.99");
  ASSERT_EQ(t->extras.size(), 1u);
  const json& extras = t->extras[0];
  ASSERT_NE(FindMetricIn(extras, record::metric::kTargetReached), nullptr);
  EXPECT_EQ((*FindMetricIn(extras, record::metric::kTargetReached))["value"], 0);
  EXPECT_EQ((*FindMetricIn(extras, record::metric::kEvaluations))["value"], 2);
  EXPECT_EQ((*FindMetricIn(extras, record::metric::kTrainEpochs))["value"], 2.0);
  EXPECT_EQ(FindMetricIn(extras, record::metric::kTimeToTargetS), nullptr)
      << "no time to a target not reached";
  const json& curves = extras["info"]["converge"]["curves"];
  const json& loss = curves[std::string(record::series::kTrainLoss)];
  ASSERT_EQ(loss["value"].size(), 16u);
  for (std::size_t i = 0; i < 16; ++i)
    EXPECT_EQ(loss["t_ns"][i], t->steps[i].end_ns) << "stamped at its step's end";
  const json& accuracy = curves[std::string(record::series::kEvalAccuracy)];
  ASSERT_EQ(accuracy["value"].size(), 2u);
  EXPECT_GT(accuracy["t_ns"][0].get<std::int64_t>(), t->steps[7].end_ns);
  EXPECT_LT(accuracy["t_ns"][0].get<std::int64_t>(), t->steps[8].start_ns) << "evaluated between steps";
  EXPECT_EQ(curves[std::string(record::series::kTrainLr)]["value"][1], 0.05);
  const double best = (*FindMetricIn(extras, record::metric::kBestEvalAccuracy))["value"];
  EXPECT_EQ(best, std::max(accuracy["value"][0].get<double>(), accuracy["value"][1].get<double>()));
}

// Where a converge cell's memory goes, as a train cell's (memory_accounting.h), with the sets it
// keeps on the device counted by hand: 256 training images of 1 x 28 x 28 float32 (802,816 bytes)
// and their int64 labels (2,048), 128 held-out images (401,408) and labels (1,024): 1,207,296.
TEST(ConvergeRunnerTest, SendsWhereTheMemoryGoesWithItsDataset) {
  if (!DatasetInstalled()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  auto t = testing::RunCell(kRunner, ConvergeConfig({{"max_epochs", 1}}), NoStop());
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_FALSE(t->error) << t->error->dump();
  ASSERT_EQ(t->extras.size(), 1u);
  const json& extras = t->extras[0];
  auto value = [&](std::string_view name) {
    const json* m = FindMetricIn(extras, name);
    EXPECT_NE(m, nullptr) << name << " in " << extras["metrics"].dump();
    return m == nullptr ? -1.0 : (*m)["value"].get<double>();
  };
  namespace metric = record::metric;
  constexpr double kWeights = 4 * 13818;  // the tiny fashion_cnn's floats (EvaluatesTheTrainedModel...)
  constexpr double kBatch = 32 * 784 * 4 + 32 * 8;
  constexpr double kDataset = 256 * 784 * 4 + 256 * 8 + 128 * 784 * 4 + 128 * 8;
  EXPECT_EQ(value(metric::kWeightBytes), kWeights);
  EXPECT_EQ(value(metric::kGradBytes), kWeights);
  EXPECT_EQ(value(metric::kInputBatchBytes), kBatch);
  EXPECT_EQ(value(metric::kDatasetBytes), kDataset);
  const double optimizer = value(metric::kOptimizerStateBytes);
  EXPECT_EQ(value(metric::kExpectedResidentBytes), 2 * kWeights + optimizer + kBatch + kDataset);
  // On the CPU the peak is the RSS above the pre-build reading, which holds the loaded sets.
  EXPECT_GE(value(metric::kMemoryPeakBytes), kDataset);
  EXPECT_TRUE(extras["info"].contains("memory")) << extras["info"].dump();
  EXPECT_EQ(extras["info"]["converge"].is_object(), true) << "the converge info stays";
}

TEST(ConvergeRunnerTest, ACorruptDatasetFileIsAnInvalidCellNamingIt) {
  if (!DatasetInstalled()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const fs::path dir = fs::temp_directory_path() / ("converge_corrupt_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                           "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
    fs::copy_file(kDataset + "/" + name, dir / name);
  }
  // The training labels cut to half their bytes: a gzip stream that ends early.
  const fs::path labels = dir / "train-labels-idx1-ubyte.gz";
  std::ifstream in(labels, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  in.close();
  std::ofstream(labels, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
  auto t = testing::RunCell(kRunner, ConvergeConfig({{"dataset_dir", dir.string()}}), NoStop());
  fs::remove_all(dir);
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_TRUE(t->error);
  EXPECT_EQ((*t->error)["kind"], "invalid");
  EXPECT_NE((*t->error)["message"].get<std::string>().find(labels.string()), std::string::npos)
      << t->error->dump();
}

TEST(ConvergeRunnerTest, AModelThatIsNotFashionMnistsIsRefused) {
  auto t = testing::RunCell(
      kRunner,
      ConvergeConfig({{"model", "resnet50"}, {"image_size", 32}, {"base_width", 8}, {"num_classes", 10}}),
      NoStop());
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_TRUE(t->error);
  EXPECT_NE((*t->error)["message"].get<std::string>().find("use fashion_cnn or fashion_cnn_bn"),
            std::string::npos)
      << t->error->dump();
}

}  // namespace
}  // namespace dlbench::torchrunner
