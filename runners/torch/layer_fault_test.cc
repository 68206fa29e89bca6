#include "layer_fault.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cell_options.h"
#include "reference_eval.h"
#include "workload.h"

namespace dlbench::torchrunner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A one-layer BERT small enough for the CPU, scenario infer, with `extra`'s keys added.
nlohmann::json TinyBertInfer(const nlohmann::json& extra) {
  nlohmann::json p = {{"model", "bert_base"}, {"layers", 1},       {"hidden_size", 32},  {"heads", 2},
                      {"seq_len", 16},        {"vocab_size", 100}, {"scenario", "infer"}};
  p.update(extra);
  return p;
}

TEST(RelativeError, FrobeniusNormsAndDegenerateCases) {
  // (3, 4) against (3, 5): |diff| 1, |ref| 5.
  EXPECT_DOUBLE_EQ(RelativeError(torch::tensor({3.0, 4.0}), torch::tensor({3.0, 5.0})), 0.2);
  EXPECT_DOUBLE_EQ(RelativeError(torch::zeros({2}), torch::zeros({2})), 0.0);
  EXPECT_EQ(RelativeError(torch::zeros({2}), torch::ones({2})), kInf);
  EXPECT_EQ(RelativeError(torch::ones({2}), torch::ones({3})), kInf);
  EXPECT_EQ(RelativeError(torch::ones({2}), torch::tensor({1.0, std::nan("")})), kInf);
  // A bf16 candidate is compared in double.
  EXPECT_DOUBLE_EQ(RelativeError(torch::tensor({1.0, 2.0}), torch::tensor({1.0, 2.0}).to(torch::kBFloat16)),
                   0.0);
}

TEST(FaultFromErrors, NamesTheStageOfLargestGrowth) {
  const std::vector<std::string> paths = {"a", "b", "c", "d"};
  // Growths 0.001, 0.001, 0.898, 0.05: c.
  LayerFault f = FaultFromErrors(paths, {0.001, 0.002, 0.9, 0.95});
  EXPECT_EQ(f.layer, "c");
  EXPECT_NEAR(f.growth, 0.898, 1e-12);
  // A large error at the first stage: growth from 0.
  EXPECT_EQ(FaultFromErrors(paths, {0.5, 0.6, 0.7, 0.8}).layer, "a");
  // Equal growths: the first. Shrinking errors: the first stage (growth = its error).
  EXPECT_EQ(FaultFromErrors({"a", "b"}, {0.25, 0.5}).layer, "a");
  EXPECT_EQ(FaultFromErrors(paths, {0.4, 0.3, 0.2, 0.1}).layer, "a");
  // The first non-finite output is at fault; later stages inherit it.
  EXPECT_EQ(FaultFromErrors(paths, {0.01, 0.9, kInf, kInf}).layer, "c");
  EXPECT_EQ(FaultFromErrors({}, {}).why_none, "no stages to compare");
}

// A chain where one layer is made to disagree: "shift" adds 1000 to values of about 1 (its
// output keeps them within bf16's 0.4% relative error), "cancel" subtracts 1000 again, and the
// bf16 rounding of the shifted values (spacing 4 near 1000) is now most of what is left:
// catastrophic cancellation at "cancel". "head" only scales.
TEST(LocateLayerAtFault, NamesTheCancellingLayerOfATinyChainAtBf16) {
  torch::manual_seed(7);
  const torch::Tensor input = torch::randn({8, 4});
  torch::nn::Linear shift(4, 4), cancel(4, 4), head(4, 2);
  {
    torch::NoGradGuard no_grad;
    shift->weight.copy_(torch::eye(4));
    shift->bias.fill_(1000.0);
    cancel->weight.copy_(torch::eye(4));
    cancel->bias.fill_(-1000.0);
    head->weight.copy_(torch::ones({2, 4}) * 0.5);
    head->bias.zero_();
  }
  auto chain = [&] {
    return std::vector<ForwardStage>{
        {"shift", [&](const torch::Tensor&) { return shift->forward(input); }},
        {"cancel", [&](const torch::Tensor& x) { return cancel->forward(x); }},
        {"head", [&](const torch::Tensor& x) { return head->forward(x); }},
    };
  };
  const LayerFault f = LocateLayerAtFault(chain(), chain(), torch::kCPU, torch::kBFloat16);
  ASSERT_TRUE(f.why_none.empty()) << f.why_none;
  EXPECT_EQ(f.layer, "cancel");
  ASSERT_EQ(f.relative_errors.size(), 3U);
  EXPECT_LT(f.relative_errors[0], 0.01);
  EXPECT_GT(f.relative_errors[1], 0.1);
  // At fp32 (no autocast) both chains are the same computation: no error anywhere.
  const LayerFault same = LocateLayerAtFault(chain(), chain(), torch::kCPU, std::nullopt);
  for (double e : same.relative_errors) EXPECT_EQ(e, 0.0);
  const nlohmann::json j = f.ToJson();
  EXPECT_EQ(j["layer"], "cancel");
  EXPECT_EQ(j["stages"].size(), 3U);
  EXPECT_EQ(j["stages"][1]["path"], "cancel");
}

TorchCell TinyBert(const char* precision) {
  auto cell = ParseTorchCell({{"model", "bert_base"},
                              {"layers", 2},
                              {"hidden_size", 32},
                              {"heads", 2},
                              {"seq_len", 16},
                              {"vocab_size", 100},
                              {"num_classes", 3},
                              {"scenario", "infer"},
                              {"device", "cpu"},
                              {"precision", precision},
                              {"batch_size", 4},  // the evaluation copy's batch: reference_samples
                              {"reference_samples", 4}});
  EXPECT_TRUE(cell.ok()) << cell.error().message;
  return *cell;
}

// BERT's stages are its forward: at fp32 the chain's last output is Forward's, bit for bit.
TEST(BertForwardStages, TheChainIsTheForward) {
  const TorchCell cell = TinyBert("fp32");
  torch::manual_seed(kEvalWeightsSeed);
  std::unique_ptr<Workload> w = MakeWorkload(cell);
  w->Prepare(cell, torch::kCPU, torch::MemoryFormat::Contiguous, kEvalInputsSeed);
  w->SetTraining(false);
  c10::InferenceMode inference;
  const std::vector<ForwardStage> stages = w->ForwardStages();
  ASSERT_EQ(stages.size(), 5U);  // embeddings, layers.0, layers.1, pooler, classifier
  EXPECT_EQ(stages[0].path, "embeddings");
  EXPECT_EQ(stages[2].path, "layers.1");
  EXPECT_EQ(stages[4].path, "classifier");
  torch::Tensor x;
  for (const ForwardStage& s : stages) x = s.run(x);
  EXPECT_TRUE(torch::equal(x, w->Forward().at(0)));
}

// The CNNs' and SSD's small variants, as the tests build them.
struct StagedCnn {
  std::string model;
  nlohmann::json params;
  std::size_t stages;              // the chain's length
  std::vector<std::string> named;  // the paths of stages 0, 1, ..., and the last two
  std::string perturbed;           // a stage the fault test makes fail
};

void PrintTo(const StagedCnn& c, std::ostream* os) { *os << c.model; }

std::vector<StagedCnn> StagedCnns() {
  return {
      // stem, 16 bottlenecks, fc.
      {"resnet50",
       {{"image_size", 32}, {"base_width", 8}, {"num_classes", 10}},
       18,
       {"stem", "stages.0", "stages.15", "fc"},
       "stages.5"},
      // stem, 17 inverted residuals, last_conv, classifier.
      {"mobilenet_v2",
       {{"image_size", 32}, {"width_mult", 0.25}, {"num_classes", 10}},
       20,
       {"stem", "blocks.0", "last_conv", "classifier"},
       "blocks.9"},
      // stem, 17 inverted residuals, last_conv, 4 extra blocks, the class heads.
      {"ssd_mobilenet",
       {{"image_size", 64}, {"width_mult", 0.25}, {"num_classes", 3}},
       24,
       {"stem", "blocks.0", "extras.3", "class_heads"},
       "extras.1"},
  };
}

class CnnForwardStages : public ::testing::TestWithParam<StagedCnn> {};

// Each CNN's stages are its forward: at fp32 the chain's last output is Forward's first (SSD: the
// class logits), bit for bit, in both memory formats.
TEST_P(CnnForwardStages, TheChainIsTheForward) {
  const StagedCnn& c = GetParam();
  nlohmann::json params = c.params;
  params["model"] = c.model;
  params["scenario"] = "infer";
  params["batch_size"] = 2;
  auto cell = ParseTorchCell(params);
  ASSERT_TRUE(cell.ok()) << cell.error().message;
  for (torch::MemoryFormat format : {torch::MemoryFormat::Contiguous, torch::MemoryFormat::ChannelsLast}) {
    torch::manual_seed(kEvalWeightsSeed);
    std::unique_ptr<Workload> w = MakeWorkload(*cell);
    w->Prepare(*cell, torch::kCPU, format, kEvalInputsSeed);
    w->SetTraining(false);
    c10::InferenceMode inference;
    const std::vector<ForwardStage> stages = w->ForwardStages();
    ASSERT_EQ(stages.size(), c.stages);
    EXPECT_EQ(stages[0].path, c.named[0]);
    EXPECT_EQ(stages[1].path, c.named[1]);
    EXPECT_EQ(stages[c.stages - 2].path, c.named[2]);
    EXPECT_EQ(stages[c.stages - 1].path, c.named[3]);
    torch::Tensor x;
    for (const ForwardStage& s : stages) x = s.run(x);
    EXPECT_TRUE(torch::equal(x, w->Forward().at(0))) << format;
    // Twice: a chain run again starts afresh (SSD's feature maps are not carried over).
    for (const ForwardStage& s : stages) x = s.run(x);
    EXPECT_TRUE(torch::equal(x, w->Forward().at(0))) << format;
  }
}

// A case built to fail at a known stage: two copies of the same seeds at fp32, the second with
// that stage's convolution weights scaled by 4. Every stage before it is exact (the same
// computation), and the search names it.
TEST_P(CnnForwardStages, TheSearchNamesAStageMadeToFail) {
  const StagedCnn& c = GetParam();
  auto make = [&c] {
    torch::manual_seed(kEvalWeightsSeed);
    std::shared_ptr<ZooModel> model = MakeModel(c.model, ModelOptions::FromParams(c.params));
    model->eval();
    return model;
  };
  std::shared_ptr<ZooModel> reference = make();
  std::shared_ptr<ZooModel> candidate = make();
  int scaled = 0;
  {
    torch::NoGradGuard no_grad;
    for (auto& item : candidate->named_parameters()) {
      if (item.key().rfind(c.perturbed + ".", 0) == 0 && item.value().dim() == 4) {
        item.value().mul_(4.0);
        ++scaled;
      }
    }
  }
  ASSERT_GT(scaled, 0) << "no convolution under " << c.perturbed;
  const Batch batch = reference->MakeBatch(2, torch::kCPU, kEvalInputsSeed);
  const LayerFault f = LocateLayerAtFault(reference->ForwardStages(batch), candidate->ForwardStages(batch),
                                          torch::kCPU, std::nullopt);
  ASSERT_TRUE(f.why_none.empty()) << f.why_none;
  EXPECT_EQ(f.layer, c.perturbed) << f.ToJson().dump();
  std::size_t at = 0;
  while (at < f.paths.size() && f.paths[at] != c.perturbed) ++at;
  ASSERT_LT(at, f.paths.size());
  for (std::size_t i = 0; i < at; ++i) EXPECT_EQ(f.relative_errors[i], 0.0) << f.paths[i];
  EXPECT_GT(f.relative_errors[at], 0.1);
}

INSTANTIATE_TEST_SUITE_P(SmallVariants, CnnForwardStages, ::testing::ValuesIn(StagedCnns()),
                         [](const auto& info) { return info.param.model; });

// The runner's search on the tiny BERT at int8 (a second fp32 copy) and bf16 (the same copy):
// every stage compared, errors finite; the embeddings (no Linear layer, no autocast op) exact, the
// classifier's output not; a stage named.
TEST(LocateFault, RunsOnTheTinyBertAtInt8AndBf16) {
  for (const char* precision : {"int8", "bf16"}) {
    const TorchCell cell = TinyBert(precision);
    torch::manual_seed(kEvalWeightsSeed);
    std::unique_ptr<Workload> w = MakeWorkload(cell);
    w->Prepare(cell, torch::kCPU, torch::MemoryFormat::Contiguous, kEvalInputsSeed);
    w->SetTraining(false);
    if (cell.precision == Precision::kInt8) w->QuantizeDynamicInt8();
    const LayerFault f = LocateFault(cell, *w, torch::kCPU, torch::MemoryFormat::Contiguous);
    ASSERT_TRUE(f.why_none.empty()) << precision << ": " << f.why_none;
    ASSERT_EQ(f.relative_errors.size(), 5U) << precision;
    for (double e : f.relative_errors) EXPECT_TRUE(std::isfinite(e)) << precision << " " << f.ToJson().dump();
    EXPECT_EQ(f.relative_errors.front(), 0.0) << precision;
    EXPECT_GT(f.relative_errors.back(), 0.0) << precision;
    EXPECT_NE(f.layer, "embeddings") << precision;
  }
}

// RunReferenceEval with a tolerance: its own fp32 check recorded, and the search run exactly
// when that check falls below the tolerance. On this project's machine the 2-layer BERT at int8
// agrees on 249 of 256 rows (0.9727) and the search names a stage; another CPU's int8 kernels may
// agree on all, and then no fault is recorded: the test holds either way.
TEST(RunReferenceEval, RecordsItsOwnCheckAndTheFaultBelowTheTolerance) {
  auto cell = ParseTorchCell({{"model", "bert_base"},
                              {"layers", 2},
                              {"hidden_size", 32},
                              {"heads", 2},
                              {"seq_len", 16},
                              {"vocab_size", 100},
                              {"num_classes", 10},
                              {"scenario", "infer"},
                              {"precision", "int8"},
                              {"reference_samples", 256},
                              {"min_agreement", "int8=1"}});
  ASSERT_TRUE(cell.ok()) << cell.error().message;
  const nlohmann::json eval = RunReferenceEval(*cell, torch::kCPU, torch::MemoryFormat::Contiguous);
  EXPECT_EQ(eval["min_agreement"], 1.0);
  ASSERT_TRUE(eval.contains("self_check")) << eval.dump();
  EXPECT_EQ(eval["self_check"]["rows"], 256);
  const double agreement = eval["self_check"]["top1_agreement"].get<double>();
  EXPECT_GT(agreement, 0.5);
  EXPECT_EQ(eval.contains("fault"), agreement < 1.0) << eval.dump();
  if (eval.contains("fault")) {
    const auto& fault = eval["fault"];
    ASSERT_TRUE(fault.contains("layer")) << fault.dump();
    EXPECT_EQ(fault["stages_total"], 5);
    bool named = false;
    for (const auto& stage : fault["stages"]) named = named || stage["path"] == fault["layer"];
    EXPECT_TRUE(named) << fault.dump();
  }
  EXPECT_FALSE(eval.contains("detections")) << "a classifier records no boxes";
  // Without a tolerance, neither the check nor the search.
  auto plain = ParseTorchCell(TinyBertInfer({{"precision", "int8"}}));
  ASSERT_TRUE(plain.ok());
  const nlohmann::json none = RunReferenceEval(*plain, torch::kCPU, torch::MemoryFormat::Contiguous);
  EXPECT_FALSE(none.contains("self_check"));
  EXPECT_FALSE(none.contains("min_agreement"));
}

// The evaluation runs with cuDNN autotuning off (its shape is not the window's: autotuning it
// would time algorithms after the window and could pick differently in two runs), says so, and
// leaves the process's setting as it found it (a reused runner's next cell keeps its own).
TEST(RunReferenceEval, RunsWithoutCudnnAutotuningAndRestoresTheSetting) {
  auto cell = ParseTorchCell(TinyBertInfer({{"reference_samples", 2}}));
  ASSERT_TRUE(cell.ok()) << cell.error().message;
  auto& ctx = at::globalContext();
  const bool before = ctx.benchmarkCuDNN();
  for (const bool setting : {true, false}) {
    ctx.setBenchmarkCuDNN(setting);
    const nlohmann::json eval = RunReferenceEval(*cell, torch::kCPU, torch::MemoryFormat::Contiguous);
    EXPECT_EQ(eval.value("cudnn_benchmark", true), false) << eval.dump();
    EXPECT_EQ(ctx.benchmarkCuDNN(), setting);
  }
  ctx.setBenchmarkCuDNN(before);
}

// A bound on |diff| triggers the search on its own: the tiny BERT at bf16 with max_abs_diff 0
// (any difference is beyond it) records its figures and a fault; with the bound at the registry's
// maximum, neither is beyond it and there is no fault.
TEST(RunReferenceEval, ABoundOnTheDifferenceTriggersTheSearch) {
  auto eval_with = [](const char* key, const char* value) {
    auto cell = ParseTorchCell({{"model", "bert_base"},
                                {"layers", 2},
                                {"hidden_size", 32},
                                {"heads", 2},
                                {"seq_len", 16},
                                {"vocab_size", 100},
                                {"num_classes", 3},
                                {"scenario", "infer"},
                                {"precision", "bf16"},
                                {"reference_samples", 4},
                                {key, value}});
    EXPECT_TRUE(cell.ok()) << cell.error().message;
    return RunReferenceEval(*cell, torch::kCPU, torch::MemoryFormat::Contiguous);
  };
  const nlohmann::json tight = eval_with("max_abs_diff", "bf16=0");
  EXPECT_EQ(tight["max_abs_diff"], 0.0);
  EXPECT_FALSE(tight.contains("min_agreement"));
  ASSERT_TRUE(tight.contains("self_check")) << tight.dump();
  const double max_diff = tight["self_check"]["max_abs_diff"].get<double>();
  const double mean_diff = tight["self_check"]["mean_abs_diff"].get<double>();
  EXPECT_GT(max_diff, 0.0) << "bf16 rounds the logits";
  EXPECT_GE(max_diff, mean_diff);
  ASSERT_TRUE(tight.contains("fault")) << tight.dump();
  EXPECT_TRUE(tight["fault"].contains("layer")) << tight.dump();
  const nlohmann::json loose = eval_with("max_mean_abs_diff", "bf16=1000000");
  EXPECT_EQ(loose["max_mean_abs_diff"], 1e6);
  EXPECT_FALSE(loose.contains("fault")) << loose.dump();
}

TEST(LocateFault, AModelWithoutStagesSaysSo) {
  auto cell = ParseTorchCell({{"model", "fashion_cnn"},
                              {"base_width", 4},
                              {"hidden_size", 16},
                              {"scenario", "infer"},
                              {"precision", "bf16"},
                              {"reference_samples", 1}});
  ASSERT_TRUE(cell.ok()) << cell.error().message;
  std::unique_ptr<Workload> w = MakeWorkload(*cell);
  w->Prepare(*cell, torch::kCPU, torch::MemoryFormat::Contiguous, kEvalInputsSeed);
  EXPECT_EQ(LocateFault(*cell, *w, torch::kCPU, torch::MemoryFormat::Contiguous).why_none,
            "fashion_cnn does not expose its forward as a chain of layers (bert_base, resnet50, mobilenet_v2 "
            "and ssd_mobilenet do)");
}

// The search on the small SSD at bf16 (autocast, the same copy for both chains): every stage
// compared, the stem's error finite and small, a stage named.
TEST(LocateFault, RunsOnTheSmallSsdAtBf16) {
  auto cell = ParseTorchCell({{"model", "ssd_mobilenet"},
                              {"image_size", 64},
                              {"width_mult", 0.25},
                              {"num_classes", 3},
                              {"scenario", "infer"},
                              {"precision", "bf16"},
                              {"batch_size", 2},
                              {"reference_samples", 2}});
  ASSERT_TRUE(cell.ok()) << cell.error().message;
  torch::manual_seed(kEvalWeightsSeed);
  std::unique_ptr<Workload> w = MakeWorkload(*cell);
  w->Prepare(*cell, torch::kCPU, torch::MemoryFormat::Contiguous, kEvalInputsSeed);
  w->SetTraining(false);
  const LayerFault f = LocateFault(*cell, *w, torch::kCPU, torch::MemoryFormat::Contiguous);
  ASSERT_TRUE(f.why_none.empty()) << f.why_none;
  ASSERT_EQ(f.relative_errors.size(), 24U);
  for (double e : f.relative_errors) EXPECT_TRUE(std::isfinite(e)) << f.ToJson().dump();
  EXPECT_GT(f.relative_errors.front(), 0.0);
  EXPECT_LT(f.relative_errors.front(), 0.05);
  EXPECT_FALSE(f.layer.empty());
}

}  // namespace
}  // namespace dlbench::torchrunner
