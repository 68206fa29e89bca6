// Static int8 convolutions (static_int8.h) and the Fashion-MNIST CNNs' calibrated int8 form: the
// observers' quantization parameters against hand-computed values, BatchNorm folding against the
// unfolded layers, and the int8 outputs and weight bytes against fp32's.
#include "models/static_int8.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "models/dynamic_int8.h"
#include "models/zoo.h"

namespace dlbench::torchrunner {
namespace {

using models::MinMaxRange;
using models::QuantParams;

// Relative error ||a - b|| / ||b|| (Frobenius).
double RelativeError(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).norm().item<double>() / b.norm().item<double>();
}

QuantParams ParamsOf(std::initializer_list<float> values, bool reduce_range) {
  MinMaxRange range;
  range.Observe(torch::tensor(std::vector<float>(values)));
  return range.AffineQuint8(reduce_range);
}

TEST(MinMaxRange, AffineQuint8MatchesHandComputedValues) {
  // [-1, 3]: scale 4 / 255, zero point -round(-1 / (4/255)) = round(63.75) = 64.
  QuantParams p = ParamsOf({-1.0F, 0.5F, 3.0F}, false);
  EXPECT_DOUBLE_EQ(p.scale, 4.0 / 255.0);
  EXPECT_EQ(p.zero_point, 64);
  // reduce_range: quant_max 127, scale 4 / 127, zero point round(31.75) = 32.
  p = ParamsOf({-1.0F, 3.0F}, true);
  EXPECT_DOUBLE_EQ(p.scale, 4.0 / 127.0);
  EXPECT_EQ(p.zero_point, 32);
  // A positive range is widened to hold 0: [0, 2], zero point 0.
  p = ParamsOf({0.5F, 2.0F}, false);
  EXPECT_DOUBLE_EQ(p.scale, 2.0 / 255.0);
  EXPECT_EQ(p.zero_point, 0);
  // A negative one to [-2, 0]: the zero point at quant_max.
  p = ParamsOf({-2.0F, -1.0F}, false);
  EXPECT_EQ(p.zero_point, 255);
  // Halves round to even, as torch.round: [-3, 507] has scale 2 and -3 / 2 = -1.5 -> 2; [-1, 509]
  // has -0.5 -> 0.
  p = ParamsOf({-3.0F, 507.0F}, false);
  EXPECT_DOUBLE_EQ(p.scale, 2.0);
  EXPECT_EQ(p.zero_point, 2);
  EXPECT_EQ(ParamsOf({-1.0F, 509.0F}, false).zero_point, 0);
  // All zeros: float32's epsilon as the scale; nothing observed: scale 1, zero point 0.
  p = ParamsOf({0.0F, 0.0F}, false);
  EXPECT_DOUBLE_EQ(p.scale, 1.1920928955078125e-07);
  EXPECT_EQ(p.zero_point, 0);
  MinMaxRange empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_DOUBLE_EQ(empty.AffineQuint8(false).scale, 1.0);
  // Observations accumulate.
  MinMaxRange range;
  range.Observe(torch::tensor({0.25F, 1.0F}));
  range.Observe(torch::tensor({-0.5F}));
  range.Observe(torch::empty({0}));
  EXPECT_DOUBLE_EQ(range.min(), -0.5);
  EXPECT_DOUBLE_EQ(range.max(), 1.0);
}

TEST(StaticInt8, FoldedBatchNormEqualsConvThenBatchNorm) {
  torch::manual_seed(21);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 6, 3).padding(1));
  torch::nn::BatchNorm2d bn(6);
  torch::NoGradGuard no_grad;
  bn->running_mean.uniform_(-0.5, 0.5);
  bn->running_var.uniform_(0.5, 2.0);
  bn->weight.uniform_(0.5, 1.5);
  bn->bias.uniform_(-0.2, 0.2);
  bn->eval();
  const torch::Tensor x = torch::randn({2, 3, 8, 8});
  const torch::Tensor reference = bn->forward(conv->forward(x));
  const auto [w, b] = models::FoldBatchNorm(conv->weight, conv->bias, bn);
  EXPECT_TRUE(torch::allclose(torch::conv2d(x, w, b, 1, 1), reference, 1e-5, 1e-5));
}

TEST(StaticInt8, ConvReluAgreesWithFp32WithinThreePercent) {
  torch::manual_seed(4);
  const torch::Tensor weight = torch::randn({8, 4, 5, 5}) * 0.1;
  const torch::Tensor bias = torch::randn({8}) * 0.1;
  const torch::Tensor x = torch::rand({2, 4, 14, 14});
  torch::NoGradGuard no_grad;
  const torch::Tensor reference = torch::relu(torch::conv2d(x, weight, bias, 1, 2));
  MinMaxRange input, output;
  input.Observe(x);
  output.Observe(reference);
  const models::StaticInt8ConvRelu conv(weight, bias, 1, 2,
                                        output.AffineQuint8(models::ReduceRangeOnEngine()));
  const torch::Tensor out =
      conv.Forward(models::QuantizeActivation(x, input.AffineQuint8(models::ReduceRangeOnEngine())));
  ASSERT_TRUE(out.is_quantized());
  ASSERT_EQ(out.sizes(), reference.sizes());
  const double error = RelativeError(out.dequantize(), reference);
  EXPECT_LT(error, 0.03) << "on engine " << models::QuantizedEngineName();
  EXPECT_GT(error, 0.0);
  std::printf("static int8 conv 4 -> 8, 5x5, on engine %s: relative error %.4g\n",
              models::QuantizedEngineName().c_str(), error);
  EXPECT_EQ(conv.weight_elements(), 8 * 4 * 25);
  EXPECT_EQ(conv.weight_bytes(), 8 * 4 * 25 + 8 * 16);
  EXPECT_EQ(conv.bias_bytes(), 8 * 4);
}

std::shared_ptr<ZooModel> TinyFashionCnn(const char* name) {
  ModelOptions options;
  options.base_width = 4;
  options.hidden_size = 32;
  torch::manual_seed(8);
  return MakeModel(name, options);
}

// Both Fashion-MNIST CNNs: the int8 logits stay close to fp32's on images like the dataset's, and
// the weights shrink to the hand-computed bytes.
TEST(FashionCnnInt8, CalibratedFormAgreesWithFp32AndShrinks) {
  for (const char* name : {"fashion_cnn", "fashion_cnn_bn"}) {
    SCOPED_TRACE(name);
    std::shared_ptr<ZooModel> fp32 = TinyFashionCnn(name);
    std::shared_ptr<ZooModel> int8 = TinyFashionCnn(name);  // the same seed: the same weights
    ASSERT_TRUE(int8->SupportsCalibratedInt8());
    fp32->eval();
    const Batch calibration = fp32->MakeBatch(64, torch::kCPU, 1);
    const Batch batch = fp32->MakeBatch(32, torch::kCPU, 2);
    int8->QuantizeCalibratedInt8(calibration.inputs.at(0));
    EXPECT_THROW(int8->QuantizeCalibratedInt8(calibration.inputs.at(0)), std::logic_error);
    torch::NoGradGuard no_grad;
    const torch::Tensor reference = fp32->Forward(batch).at(0);
    const torch::Tensor out = int8->Forward(batch).at(0);
    ASSERT_EQ(out.sizes(), reference.sizes());
    EXPECT_EQ(out.scalar_type(), torch::kFloat);
    const double error = RelativeError(out, reference);
    EXPECT_LT(error, 0.05);
    EXPECT_GT(error, 0.0);
    std::printf("%s (width 4, hidden 32) int8 vs fp32 logits, 32 images: relative error %.4g\n", name, error);

    // conv1 1 -> 4 (5x5): 100 weights + 4 x 16 qparams + 4 x 4 bias = 180; conv2 4 -> 8: 800 + 128
    // + 32 = 960; dense 392 -> 32: 12544 + 16 + 128 = 12688; logits 32 -> 10: 320 + 16 + 40 = 376.
    // BatchNorm is folded away.
    const WeightBytes bytes = int8->DeployedWeightBytes();
    EXPECT_EQ(bytes.linear, 12544 + 16 + 320 + 16);
    EXPECT_EQ(bytes.total, 180 + 960 + 12688 + 376);
    const WeightBytes fp32_bytes = fp32->DeployedWeightBytes();
    EXPECT_EQ(fp32_bytes.linear, 4 * (12544 + 320));
  }
}

TEST(FashionCnnInt8, OtherModelsHaveNoCalibratedForm) {
  ModelOptions options;
  options.image_size = 32;
  options.base_width = 8;
  options.num_classes = 10;
  std::shared_ptr<ZooModel> resnet = MakeModel("resnet50", options);
  EXPECT_FALSE(resnet->SupportsCalibratedInt8());
  EXPECT_THROW(resnet->QuantizeCalibratedInt8(torch::rand({1, 3, 32, 32})), std::logic_error);
}

}  // namespace
}  // namespace dlbench::torchrunner
