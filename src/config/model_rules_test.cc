// The torch runner's model rules at plan time: unknown models and TorchScript cells without their
// file are errors at the key's position; size keys a model does not read are dropped.
#include "config/model_rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "config/registry.h"

namespace dlbench::config {
namespace {

Matrix Parse(const std::string& yaml) {
  Result<Matrix> m = ParseMatrix(yaml, "m.yaml");
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? *m : Matrix{};
}

TEST(ModelRulesTest, AnUnknownModelIsAnErrorAtItsAxisNamingTheKnownOnes) {
  const Matrix m = Parse("runner: torch\nmatrix:\n  model: [resnet50, resnet51]\n  batch_size: [1]\n");
  const Status st = CheckTorchModelRules(m, {{{"model", "resnet50"}}, {{"model", "resnet51"}}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message.rfind(
                "m.yaml:3:3: error: model: unknown model 'resnet51' (the torch runner has "
                "resnet50, mobilenet_v2, bert_base, ssd_mobilenet, fashion_cnn, fashion_cnn_bn, "
                "allreduce (strategy: ddp: the all-reduce alone), torchscript with model_path and "
                "input_shapes, or aoti",
                0),
            0u)
      << st.error().message;
  EXPECT_NE(st.error().message.find("dlbench models"), std::string::npos);
}

TEST(ModelRulesTest, TorchScriptNeedsAReadableRegularFileAndInputShapes) {
  EXPECT_EQ(CheckTorchModelCell({{"model", "torchscript"}}).size(), 2u);
  const auto missing = CheckTorchModelCell(
      {{"model", "torchscript"}, {"model_path", "/nonexistent/m.pt"}, {"input_shapes", "B,4"}});
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].key, "model_path");
  EXPECT_EQ(missing[0].message, "/nonexistent/m.pt does not exist");
  const auto dir =
      CheckTorchModelCell({{"model", "torchscript"}, {"model_path", "/"}, {"input_shapes", "B,4"}});
  ASSERT_EQ(dir.size(), 1u);
  EXPECT_EQ(dir[0].message, "/ is not a regular file");
  const std::string file = ::testing::TempDir() + "/model_rules_m.pt";
  std::ofstream(file) << "x";
  EXPECT_TRUE(
      CheckTorchModelCell({{"model", "torchscript"}, {"model_path", file}, {"input_shapes", "B,4"}}).empty());
  EXPECT_TRUE(CheckTorchModelCell({{"model", "bert_base"}}).empty());
}

TEST(ModelRulesTest, AotiNeedsAReadablePackageAndInputShapes) {
  const auto none = CheckTorchModelCell({{"model", "aoti"}});
  ASSERT_EQ(none.size(), 2u);
  EXPECT_EQ(
      none[0].message,
      "aoti needs model_path (the AOTInductor .pt2 package to load: bench/gpu/aoti_package.py makes one)");
  EXPECT_EQ(none[1].message, "aoti needs input_shapes (`B,3,224,224`, B for the batch size)");
  const auto missing = CheckTorchModelCell(
      {{"model", "aoti"}, {"model_path", "/nonexistent/m.pt2"}, {"input_shapes", "B,3,224,224"}});
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].key, "model_path");
  EXPECT_EQ(missing[0].message, "/nonexistent/m.pt2 does not exist");
  const std::string file = ::testing::TempDir() + "/model_rules_m.pt2";
  std::ofstream(file) << "x";
  EXPECT_TRUE(CheckTorchModelCell({{"model", "aoti"}, {"model_path", file}, {"input_shapes", "B,3,224,224"}})
                  .empty());
  // A package is not a Fashion-MNIST model: scenario converge is refused by name.
  const auto converge = CheckTorchModelCell(
      {{"model", "aoti"}, {"model_path", file}, {"input_shapes", "B,4"}, {"scenario", "converge"}});
  ASSERT_EQ(converge.size(), 1u);
  EXPECT_NE(converge[0].message.find("aoti does not take that"), std::string::npos) << converge[0].message;
  Combination sized = {{"model", "aoti"}, {"image_size", 64}};
  EXPECT_EQ(DropUnusedSizeKeys(sized), (std::vector<std::string>{"image_size"}));
}

TEST(ModelRulesTest, SizeKeysTheModelDoesNotReadAreDropped) {
  Combination bert = {{"model", "bert_base"}, {"image_size", 64}, {"seq_len", 32}, {"batch_size", 2}};
  EXPECT_EQ(DropUnusedSizeKeys(bert), (std::vector<std::string>{"image_size"}));
  EXPECT_EQ(bert, (Combination{{"model", "bert_base"}, {"seq_len", 32}, {"batch_size", 2}}));
  Combination resnet = {{"model", "resnet50"}, {"image_size", 64}, {"base_width", 8}};
  EXPECT_TRUE(DropUnusedSizeKeys(resnet).empty());
  Combination script = {{"model", "torchscript"}, {"image_size", 64}};
  EXPECT_EQ(DropUnusedSizeKeys(script), (std::vector<std::string>{"image_size"}));
  Combination unknown = {{"model", "nope"}, {"image_size", 64}};
  EXPECT_TRUE(DropUnusedSizeKeys(unknown).empty()) << "an unknown model is an error, not a drop";
}

TEST(ModelRulesTest, ConvergeTakesOnlyTheFashionMnistModelsWithTenClasses) {
  for (const char* model : {"fashion_cnn", "fashion_cnn_bn"}) {
    EXPECT_TRUE(CheckTorchModelCell({{"model", model}, {"scenario", "converge"}}).empty()) << model;
    EXPECT_TRUE(
        CheckTorchModelCell({{"model", model}, {"scenario", "converge"}, {"num_classes", 10}}).empty());
  }
  const auto resnet = CheckTorchModelCell({{"model", "resnet50"}, {"scenario", "converge"}});
  ASSERT_EQ(resnet.size(), 1u);
  EXPECT_EQ(resnet[0].key, "model");
  EXPECT_EQ(resnet[0].message,
            "scenario converge trains on Fashion-MNIST (1 x 28 x 28 images, 10 classes); resnet50 does not "
            "take that (use fashion_cnn or fashion_cnn_bn)");
  EXPECT_TRUE(CheckTorchModelCell({{"model", "resnet50"}, {"scenario", "train"}}).empty());
  const std::string file = ::testing::TempDir() + "/model_rules_converge.pt";
  std::ofstream(file) << "x";
  const auto script = CheckTorchModelCell({{"model", "torchscript"},
                                           {"model_path", file},
                                           {"input_shapes", "B,1,28,28"},
                                           {"scenario", "converge"}});
  ASSERT_EQ(script.size(), 1u);
  EXPECT_EQ(script[0].key, "model");
  const auto classes =
      CheckTorchModelCell({{"model", "fashion_cnn"}, {"scenario", "converge"}, {"num_classes", 5}});
  ASSERT_EQ(classes.size(), 1u);
  EXPECT_EQ(classes[0].key, "num_classes");
  EXPECT_EQ(classes[0].message, "scenario converge classifies Fashion-MNIST's 10 classes (got 5)");
  EXPECT_EQ(CheckTorchModelCell({{"model", "nope"}, {"scenario", "converge"}}).size(), 1u)
      << "an unknown model is reported once, as unknown";
  // At the matrix's line: the model axis.
  const Matrix m =
      Parse("runner: torch\nmatrix:\n  model: [fashion_cnn, resnet50]\n  scenario: [converge]\n");
  const Status st = CheckTorchModelRules(m, {{{"model", "fashion_cnn"}, {"scenario", "converge"}},
                                             {{"model", "resnet50"}, {"scenario", "converge"}}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(
      st.error().message.rfind("m.yaml:3:3: error: model: scenario converge trains on Fashion-MNIST", 0), 0u)
      << st.error().message;
}

// The plan's int8 rule, in step with the runner's CheckSupported: bert_base and a TorchScript
// model quantized offline run int8 inference on the CPU; the rest says what works.
TEST(ModelRulesTest, Int8ProblemNamesWhatWorks) {
  auto cell = [](const std::string& model, const std::string& device, const std::string& scenario) {
    return Combination{{"model", model}, {"precision", "int8"}, {"device", device}, {"scenario", scenario}};
  };
  EXPECT_EQ(Int8Problem(cell("bert_base", "cpu", "infer")), "");
  EXPECT_EQ(Int8Problem(cell("torchscript", "cpu", "infer")), "");
  EXPECT_NE(Int8Problem(cell("resnet50", "cpu", "infer")).find("scripts/quantize_cnn.py"), std::string::npos);
  EXPECT_NE(Int8Problem(cell("torchscript", "cuda", "infer"))
                .find("a TorchScript model quantized offline runs on the CPU's quantized engines only (int8 "
                      "on CUDA needs TensorRT"),
            std::string::npos)
      << Int8Problem(cell("torchscript", "cuda", "infer"));
  EXPECT_NE(Int8Problem(cell("torchscript", "cpu", "train")).find("use scenario infer"), std::string::npos);
  EXPECT_NE(Int8Problem(cell("aoti", "cuda", "infer")).find("runs at the precision it was compiled at"),
            std::string::npos);
  EXPECT_NE(Int8Problem(cell("aoti", "cpu", "infer")), "");
  Combination fp32 = cell("resnet50", "cpu", "infer");
  fp32["precision"] = "fp32";
  EXPECT_EQ(Int8Problem(fp32), "");
}

TEST(ModelRulesTest, TheSizeKeysAreTheRegistrysModelSizedKeys) {
  // Every key the table names is one of ModelSizeKeys, and each of those is a torch cell key.
  for (const auto& m : TorchModelTable()) {
    EXPECT_TRUE(std::is_sorted(m.size_keys.begin(), m.size_keys.end())) << m.name;
    for (const auto& k : m.size_keys) {
      EXPECT_TRUE(std::binary_search(ModelSizeKeys().begin(), ModelSizeKeys().end(), k)) << k;
    }
  }
  for (const auto& k : ModelSizeKeys()) {
    const ParamSpec* spec = FindParam(k, ParamSection::kCell);
    ASSERT_NE(spec, nullptr) << k;
  }
}

}  // namespace
}  // namespace dlbench::config
