// Dynamic int8 Linear layers (dynamic_int8.h) and bert_base's int8 form: the outputs against
// fp32's on seeded inputs, and the deployed weight bytes against hand-computed counts.
#include "models/dynamic_int8.h"

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/version.h>

#include <cstdio>

#include "models/zoo.h"

namespace dlbench::torchrunner {
namespace {

// Relative error ||a - b|| / ||b|| (Frobenius).
double RelativeError(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).norm().item<double>() / b.norm().item<double>();
}

TEST(DynamicInt8Linear, AgreesWithFp32WithinTwoPercent) {
  torch::manual_seed(11);
  torch::nn::Linear linear(64, 48);
  const torch::Tensor x = torch::randn({4, 10, 64});  // 3-D, as BERT's projections see it
  torch::NoGradGuard no_grad;
  const torch::Tensor reference = linear->forward(x);
  const models::DynamicInt8Linear int8(linear);
  const torch::Tensor out = int8.Forward(x);
  ASSERT_EQ(out.sizes(), reference.sizes());
  EXPECT_EQ(out.scalar_type(), torch::kFloat);
  // 8-bit weights and activations: one step is 1/255 of each range; the measured error on this
  // input is reported so a change of engine shows.
  const double error = RelativeError(out, reference);
  EXPECT_LT(error, 0.02) << "relative error " << error << " on engine " << models::QuantizedEngineName();
  EXPECT_GT(error, 0.0) << "the int8 path ran (an exact result would mean fp32 ran)";
  std::printf("int8 Linear 64 -> 48 on engine %s: relative error %.4g\n",
              models::QuantizedEngineName().c_str(), error);
  EXPECT_EQ(int8.weight_elements(), std::int64_t{64} * 48);
  EXPECT_EQ(int8.weight_bytes(), std::int64_t{64} * 48 + models::kPerTensorQParamBytes);
  EXPECT_EQ(int8.bias_bytes(), std::int64_t{48} * 4);
}

TEST(DynamicInt8Linear, SlotFreesTheFp32WeightsAndSwitchesForward) {
  torch::manual_seed(3);
  torch::nn::Linear linear(16, 8);
  const torch::Tensor x = torch::randn({2, 16});
  torch::NoGradGuard no_grad;
  const torch::Tensor reference = linear->forward(x);
  models::Int8Slot slot;
  EXPECT_EQ(slot.packed(), nullptr);
  EXPECT_TRUE(slot.Forward(linear, x).equal(reference)) << "before Quantize: the fp32 layer";
  slot.Quantize(linear);
  ASSERT_NE(slot.packed(), nullptr);
  EXPECT_EQ(linear->weight.numel(), 0);
  EXPECT_EQ(linear->bias.numel(), 0);
  EXPECT_LT(RelativeError(slot.Forward(linear, x), reference), 0.03);
}

// The fp32 path is ATen's linear (one GEMM with the bias in its epilogue under autocast), not the
// C++ frontend's matmul + `+= bias`: the same values and dtype as the module's forward, in fp32
// and under the CPU's bf16 autocast, on the 3-D input BERT's projections see, and gradients flow.
TEST(DynamicInt8Linear, TheFp32PathIsAtenLinearWithTheModulesResults) {
  torch::manual_seed(7);
  torch::nn::Linear linear(32, 24);
  const torch::Tensor x = torch::randn({3, 5, 32});
  models::Int8Slot slot;
  const torch::Tensor reference = linear->forward(x);
  const torch::Tensor out = slot.Forward(linear, x);
  EXPECT_TRUE(torch::allclose(out, reference, 1e-5, 1e-6)) << (out - reference).abs().max().item<float>();
  out.sum().backward();
  ASSERT_TRUE(linear->weight.grad().defined());
  EXPECT_GT(linear->bias.grad().abs().sum().item<float>(), 0.0F);
  {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(torch::kCPU, true);
    at::autocast::set_autocast_dtype(torch::kCPU, torch::kBFloat16);
#else
    at::autocast::set_cpu_enabled(true);
    at::autocast::set_autocast_cpu_dtype(torch::kBFloat16);
#endif
    const torch::Tensor ref16 = linear->forward(x);
    const torch::Tensor out16 = slot.Forward(linear, x);
    at::autocast::clear_cache();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(torch::kCPU, false);
#else
    at::autocast::set_cpu_enabled(false);
#endif
    EXPECT_EQ(out16.scalar_type(), ref16.scalar_type());
    EXPECT_TRUE(torch::allclose(out16.to(torch::kFloat), ref16.to(torch::kFloat), 2e-2, 2e-2))
        << (out16.to(torch::kFloat) - ref16.to(torch::kFloat)).abs().max().item<float>();
  }
}

// layers 2, hidden 32, heads 4, seq 16, vocab 100, classes 3.
std::shared_ptr<ZooModel> TinyBert() {
  ModelOptions options;
  options.layers = 2;
  options.hidden_size = 32;
  options.heads = 4;
  options.seq_len = 16;
  options.vocab_size = 100;
  options.num_classes = 3;
  torch::manual_seed(5);
  return MakeModel("bert_base", options);
}

TEST(BertInt8, WeightBytesShrinkByTheHandComputedFactor) {
  std::shared_ptr<ZooModel> model = TinyBert();
  ASSERT_TRUE(model->SupportsDynamicInt8());
  const WeightBytes fp32 = model->DeployedWeightBytes();
  // Linear weight elements: per layer Q, K, V, out (4 x 32 x 32) + the feed-forward pair
  // (2 x 32 x 128) = 12288; two layers 24576; pooler 32 x 32 = 1024; classifier 32 x 3 = 96:
  // 25696 elements in 14 Linear layers.
  constexpr std::int64_t kElements = 25696;
  constexpr std::int64_t kLayers = 14;
  EXPECT_EQ(fp32.linear, 4 * kElements);
  model->QuantizeDynamicInt8();
  const WeightBytes int8 = model->DeployedWeightBytes();
  EXPECT_EQ(int8.linear, kElements + kLayers * models::kPerTensorQParamBytes);  // 25920
  // Everything else (embeddings, LayerNorms, biases, now inside the packed layers) is unchanged.
  EXPECT_EQ(int8.total, fp32.total - 4 * kElements + int8.linear);
  const double factor = static_cast<double>(fp32.linear) / static_cast<double>(int8.linear);
  EXPECT_NEAR(factor, 102784.0 / 25920.0, 1e-12);  // 3.965: 4 less the scales' share
}

TEST(BertInt8, ModelsWithoutAnInt8FormSaySo) {
  ModelOptions options;
  options.image_size = 32;
  options.base_width = 8;
  options.num_classes = 10;
  std::shared_ptr<ZooModel> resnet = MakeModel("resnet50", options);
  EXPECT_FALSE(resnet->SupportsDynamicInt8());
  EXPECT_THROW(resnet->QuantizeDynamicInt8(), std::logic_error);
}

TEST(BertInt8, LogitsAgreeWithFp32OnSeededInputs) {
  std::shared_ptr<ZooModel> fp32 = TinyBert();
  std::shared_ptr<ZooModel> int8 = TinyBert();  // the same seed: the same fp32 weights
  int8->QuantizeDynamicInt8();
  fp32->eval();
  int8->eval();
  const Batch batch = fp32->MakeBatch(16, torch::kCPU, 99);
  torch::NoGradGuard no_grad;
  const torch::Tensor reference = fp32->Forward(batch).at(0);
  const torch::Tensor out = int8->Forward(batch).at(0);
  ASSERT_EQ(out.sizes(), reference.sizes());
  const double max_diff = (out - reference).abs().max().item<double>();
  const double scale = reference.abs().max().item<double>();
  // The stated tolerance (docs/precisions.md, "Tolerance"): max |int8 - fp32| at most 10% of the
  // largest fp32 logit on this model and input (1.8% measured on onednn).
  EXPECT_LE(max_diff, 0.10 * scale) << "max diff " << max_diff << ", largest logit " << scale;
  EXPECT_GT(max_diff, 0.0);
  std::printf("tiny BERT int8 vs fp32, 16 samples: max |diff| %.4g, largest fp32 logit %.4g (%.2f%%)\n",
              max_diff, scale, 100.0 * max_diff / scale);
}

}  // namespace
}  // namespace dlbench::torchrunner
