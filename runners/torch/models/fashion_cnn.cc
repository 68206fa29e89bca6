// Fashion-MNIST's reference CNN ("2 Conv+pooling", benchmark/convnet.py of the dataset, from
// TensorFlow's layers tutorial) and its batch-norm variant ("2 Conv+pooling+BN" in the dataset's
// README table). docs/models.md and docs/convergence.md describe both.
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "models/dynamic_int8.h"
#include "models/layers.h"
#include "models/static_int8.h"

namespace dlbench::torchrunner::models {
namespace {

constexpr int64_t kImageSize = 28;  // Fashion-MNIST's images: 1 x 28 x 28
// convnet.py: tf.train.GradientDescentOptimizer(learning_rate=0.001), constant, no momentum.
constexpr double kReferenceLr = 0.001;
constexpr double kDropout = 0.4;  // tf.layers.dropout(rate=0.4) after the dense layer
// Calibration batches: bounded activation memory (1,000 images of conv1's output at base width 32
// are 100 MB in fp32).
constexpr int64_t kCalibrationChunk = 250;

// Empties a tensor in place (the module keeps it registered): the deployed int8 model holds the
// packed copy only.
void Free(torch::Tensor& t) {
  if (t.defined()) t.set_data(torch::empty({0}, t.options()));
}

// conv1 5x5 "same" (32) + ReLU, max-pool 2x2/2, conv2 5x5 "same" (64) + ReLU, max-pool 2x2/2,
// dense 7*7*64 -> 1024 + ReLU, dropout 0.4 (training only), dense 1024 -> 10. With batch_norm,
// BatchNorm2d sits between each convolution and its ReLU. Weights are Glorot-uniform and biases
// zero, as tf.layers initialises them (LibTorch's default Kaiming init would not be the reference).
class FashionCnn : public ZooModel {
 public:
  FashionCnn(bool batch_norm, int64_t filters, int64_t dense_units, int64_t num_classes)
      : batch_norm_(batch_norm), filters_(filters), dense_units_(dense_units), num_classes_(num_classes) {
    NetBuilder builder(1, kImageSize, kImageSize);
    conv1_ = register_module("conv1", builder.ConvWithBias(filters, 5));
    if (batch_norm) bn1_ = register_module("bn1", torch::nn::BatchNorm2d(filters));
    pool1_ = register_module("pool1", builder.MaxPool(2, 2, 0));
    conv2_ = register_module("conv2", builder.ConvWithBias(2 * filters, 5));
    if (batch_norm) bn2_ = register_module("bn2", torch::nn::BatchNorm2d(2 * filters));
    pool2_ = register_module("pool2", builder.MaxPool(2, 2, 0));
    dense_ = register_module("dense", builder.Linear(dense_units));
    logits_ = register_module("logits", builder.Linear(num_classes));
    macs_ = builder.macs();
    for (auto& p : named_parameters()) {
      if (p.key().find("bn") != std::string::npos) continue;  // BatchNorm keeps weight 1, bias 0
      if (p.value().dim() > 1)
        torch::nn::init::xavier_uniform_(p.value());
      else
        torch::nn::init::zeros_(p.value());
    }
  }

  std::string name() const override { return batch_norm_ ? "fashion_cnn_bn" : "fashion_cnn"; }
  bool is_convolutional() const override { return true; }

  Batch MakeBatch(int64_t batch_size, torch::Device device, uint64_t seed) const override {
    if (batch_size <= 0) {
      throw std::invalid_argument(name() + ": batch_size must be positive, got " +
                                  std::to_string(batch_size));
    }
    // Images uniform in [0, 1], as the dataset's pixels / 255; a private generator, as the other
    // classifiers draw theirs.
    auto generator = at::detail::createCPUGenerator(seed);
    Batch batch;
    batch.inputs.push_back(
        torch::rand({batch_size, 1, kImageSize, kImageSize}, generator, torch::kFloat).to(device));
    batch.target = torch::randint(num_classes_, {batch_size}, generator, torch::kLong).to(device);
    return batch;
  }

  std::vector<torch::Tensor> Forward(const Batch& batch) override {
    if (int8_) return {Int8Forward(batch.inputs.at(0))};
    torch::Tensor x = conv1_->forward(batch.inputs.at(0));
    if (batch_norm_) x = bn1_->forward(x);
    x = pool1_->forward(torch::relu(x));
    x = conv2_->forward(x);
    if (batch_norm_) x = bn2_->forward(x);
    x = pool2_->forward(torch::relu(x));
    x = torch::relu(dense_->forward(x.flatten(1)));
    x = torch::dropout(x, kDropout, is_training());
    return {logits_->forward(x)};
  }

  torch::Tensor Loss(const std::vector<torch::Tensor>& outputs, const Batch& batch) override {
    return torch::nn::functional::cross_entropy(outputs.at(0), batch.target);
  }

  double ForwardFlopsPerSample() const override { return 2.0 * macs_; }

  nlohmann::json EffectiveOptions() const override {
    // The input is fixed (image_size is not read): named apart from the size keys.
    return {{"input", "1 x 28 x 28"},
            {"base_width", filters_},
            {"hidden_size", dense_units_},
            {"num_classes", num_classes_},
            {"batch_norm", batch_norm_},
            {"dropout", kDropout},
            {"init", "glorot_uniform weights, zero biases (tf.layers)"}};
  }

  // Static int8 convolutions (BatchNorm folded) and dynamic int8 dense layers, as eager-mode
  // post-training quantization with fused Conv+BN+ReLU and quantize_dynamic's Linear would make them.
  bool SupportsCalibratedInt8() const override { return true; }
  void QuantizeCalibratedInt8(const torch::Tensor& calibration_images) override {
    if (int8_) throw std::logic_error(name() + ": already quantized");
    if (calibration_images.dim() != 4 || calibration_images.size(0) == 0) {
      throw std::invalid_argument(name() + ": calibration needs a non-empty batch of images");
    }
    torch::NoGradGuard no_grad;
    eval();
    auto folded = [&](const torch::nn::Conv2d& conv, const torch::nn::BatchNorm2d& bn) {
      return batch_norm_ ? FoldBatchNorm(conv->weight, conv->bias, bn)
                         : std::make_pair(conv->weight.detach(), conv->bias.detach());
    };
    const auto [w1, b1] = folded(conv1_, bn1_);
    const auto [w2, b2] = folded(conv2_, bn2_);
    const int64_t pad1 = (conv1_->options.kernel_size()->at(0) - 1) / 2;  // as NetBuilder pads
    const int64_t pad2 = (conv2_->options.kernel_size()->at(0) - 1) / 2;
    // The activations each quantized tensor carries: the input, and each convolution's output
    // after its ReLU (max-pooling keeps the range), observed on the folded fp32 network.
    MinMaxRange input, act1, act2;
    for (const torch::Tensor& chunk : calibration_images.split(kCalibrationChunk)) {
      const torch::Tensor x = chunk.to(torch::kCPU, torch::kFloat);
      input.Observe(x);
      torch::Tensor y = torch::relu(torch::conv2d(x, w1, b1, 1, pad1));
      act1.Observe(y);
      y = torch::relu(torch::conv2d(pool1_->forward(y), w2, b2, 1, pad2));
      act2.Observe(y);
    }
    const bool reduce_range = ReduceRangeOnEngine();
    auto form = std::make_unique<Int8Form>(
        Int8Form{input.AffineQuint8(reduce_range),
                 StaticInt8ConvRelu(w1, b1, 1, pad1, act1.AffineQuint8(reduce_range)),
                 StaticInt8ConvRelu(w2, b2, 1, pad2, act2.AffineQuint8(reduce_range))});
    dense_int8_.Quantize(dense_);
    logits_int8_.Quantize(logits_);
    for (torch::nn::Conv2d* conv : {&conv1_, &conv2_}) {
      Free((*conv)->weight);
      Free((*conv)->bias);
    }
    if (batch_norm_) {
      for (torch::nn::BatchNorm2d* bn : {&bn1_, &bn2_}) {
        Free((*bn)->weight);
        Free((*bn)->bias);
        Free((*bn)->running_mean);
        Free((*bn)->running_var);
        Free((*bn)->num_batches_tracked);
      }
    }
    int8_ = std::move(form);
  }

  // The reference's optimizer: plain SGD at a constant rate (no momentum, no weight decay, no
  // schedule).
  std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(std::optional<double> lr) override {
    return std::make_unique<torch::optim::SGD>(parameters(),
                                               torch::optim::SGDOptions(lr.value_or(kReferenceLr)));
  }

 protected:
  WeightBytes PackedWeightBytes() const override {
    WeightBytes out;
    if (!int8_) return out;
    for (const StaticInt8ConvRelu* conv : {&int8_->conv1, &int8_->conv2})
      out.total += conv->weight_bytes() + conv->bias_bytes();
    for (const Int8Slot* slot : {&dense_int8_, &logits_int8_}) {
      if (const DynamicInt8Linear* packed = slot->packed()) {
        out.linear += packed->weight_bytes();
        out.total += packed->weight_bytes() + packed->bias_bytes();
      }
    }
    return out;
  }

 private:
  // The int8 network: the input's quantization and the two packed convolutions (the dense layers
  // are in their Int8Slots).
  struct Int8Form {
    QuantParams input;
    StaticInt8ConvRelu conv1, conv2;
  };

  torch::Tensor Int8Forward(const torch::Tensor& images) {
    torch::Tensor q = QuantizeActivation(images, int8_->input);
    q = pool1_->forward(int8_->conv1.Forward(q));
    q = pool2_->forward(int8_->conv2.Forward(q));
    const torch::Tensor x = torch::relu(dense_int8_.Forward(dense_, q.dequantize().flatten(1)));
    return logits_int8_.Forward(logits_, x);
  }

  bool batch_norm_;
  int64_t filters_, dense_units_, num_classes_;
  double macs_ = 0.0;
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
  torch::nn::MaxPool2d pool1_{nullptr}, pool2_{nullptr};
  torch::nn::Linear dense_{nullptr}, logits_{nullptr};
  std::unique_ptr<const Int8Form> int8_;  // set by QuantizeCalibratedInt8
  Int8Slot dense_int8_, logits_int8_;
};

}  // namespace

std::shared_ptr<ZooModel> MakeFashionCnn(const ModelOptions& options, bool batch_norm) {
  return std::make_shared<FashionCnn>(batch_norm, options.base_width.value_or(32),
                                      options.hidden_size.value_or(1024), options.num_classes.value_or(10));
}

}  // namespace dlbench::torchrunner::models
