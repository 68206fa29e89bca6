#include "models/zoo.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "models/layers.h"

namespace dlbench::torchrunner {
namespace {

using models::Activation;

std::optional<int64_t> PositiveInt(const nlohmann::json& params, const char* key) {
  auto it = params.find(key);
  if (it == params.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) {
    throw std::invalid_argument(std::string("model option '") + key + "' must be an integer, got " +
                                it->dump());
  }
  const int64_t value = it->get<int64_t>();
  if (value <= 0) {
    throw std::invalid_argument(std::string("model option '") + key + "' must be positive, got " +
                                std::to_string(value));
  }
  return value;
}

std::optional<double> PositiveNumber(const nlohmann::json& params, const char* key) {
  auto it = params.find(key);
  if (it == params.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) {
    throw std::invalid_argument(std::string("model option '") + key + "' must be a number, got " +
                                it->dump());
  }
  const double value = it->get<double>();
  if (!(value > 0.0) || !std::isfinite(value)) {
    throw std::invalid_argument(std::string("model option '") + key +
                                "' must be a positive finite number, got " + it->dump());
  }
  return value;
}

}  // namespace

ModelOptions ModelOptions::FromParams(const nlohmann::json& params) {
  if (!params.is_object()) {
    throw std::invalid_argument("model options must be a JSON object, got " + params.dump());
  }
  ModelOptions options;
  options.image_size = PositiveInt(params, "image_size");
  options.base_width = PositiveInt(params, "base_width");
  options.num_classes = PositiveInt(params, "num_classes");
  options.layers = PositiveInt(params, "layers");
  options.hidden_size = PositiveInt(params, "hidden_size");
  options.heads = PositiveInt(params, "heads");
  options.seq_len = PositiveInt(params, "seq_len");
  options.vocab_size = PositiveInt(params, "vocab_size");
  options.width_mult = PositiveNumber(params, "width_mult");
  return options;
}

std::vector<std::string> KnownModels() {
  return {"resnet50", "mobilenet_v2", "bert_base", "ssd_mobilenet", "fashion_cnn", "fashion_cnn_bn"};
}

void ZooModel::QuantizeDynamicInt8() {
  throw std::logic_error(name() + ": no dynamic int8 form (only bert_base has one)");
}

void ZooModel::QuantizeCalibratedInt8(const torch::Tensor&) {
  throw std::logic_error(name() + ": no calibrated int8 form (fashion_cnn and fashion_cnn_bn have one)");
}

WeightBytes ZooModel::DeployedWeightBytes() const {
  auto bytes = [](const torch::Tensor& t) {
    return t.defined() ? static_cast<std::int64_t>(t.numel() * t.element_size()) : std::int64_t{0};
  };
  WeightBytes out = PackedWeightBytes();
  for (const torch::Tensor& p : parameters()) out.total += bytes(p);
  for (const torch::Tensor& b : buffers()) out.total += bytes(b);
  for (const auto& module : modules(/*include_self=*/false)) {
    if (const auto* linear = module->as<torch::nn::Linear>()) out.linear += bytes(linear->weight);
  }
  return out;
}

std::shared_ptr<ZooModel> MakeModel(const std::string& name, const ModelOptions& options) {
  if (name == "resnet50") return models::MakeResNet50(options);
  if (name == "mobilenet_v2") return models::MakeMobileNetV2(options);
  if (name == "bert_base") return models::MakeBertBase(options);
  if (name == "ssd_mobilenet") return models::MakeSsdMobileNet(options);
  if (name == "fashion_cnn") return models::MakeFashionCnn(options, /*batch_norm=*/false);
  if (name == "fashion_cnn_bn") return models::MakeFashionCnn(options, /*batch_norm=*/true);
  std::string known;
  for (const auto& model : KnownModels()) known += (known.empty() ? "" : ", ") + model;
  throw std::invalid_argument("unknown model '" + name + "' (known models: " + known + ")");
}

namespace models {

NetBuilder::NetBuilder(int64_t channels, int64_t height, int64_t width)
    : channels_(channels), height_(height), width_(width) {}

void NetBuilder::ConvBnAct(torch::nn::Sequential& into, int64_t out_channels, int64_t kernel, int64_t stride,
                           int64_t groups, Activation activation, double bn_eps, double bn_momentum) {
  const int64_t padding = (kernel - 1) / 2;
  into->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(channels_, out_channels, kernel)
                                        .stride(stride)
                                        .padding(padding)
                                        .groups(groups)
                                        .bias(false)));
  into->push_back(
      torch::nn::BatchNorm2d(torch::nn::BatchNorm2dOptions(out_channels).eps(bn_eps).momentum(bn_momentum)));
  if (activation == Activation::kReLU) into->push_back(torch::nn::ReLU(true));
  if (activation == Activation::kReLU6) into->push_back(torch::nn::ReLU6(true));
  height_ = (height_ + 2 * padding - kernel) / stride + 1;
  width_ = (width_ + 2 * padding - kernel) / stride + 1;
  macs_ += static_cast<double>(out_channels) * (channels_ / groups) * kernel * kernel * height_ * width_;
  channels_ = out_channels;
}

torch::nn::Conv2d NetBuilder::ConvWithBias(int64_t out_channels, int64_t kernel) {
  const int64_t padding = (kernel - 1) / 2;
  torch::nn::Conv2d conv(
      torch::nn::Conv2dOptions(channels_, out_channels, kernel).padding(padding).bias(true));
  height_ = height_ + 2 * padding - kernel + 1;
  width_ = width_ + 2 * padding - kernel + 1;
  macs_ += static_cast<double>(out_channels) * channels_ * kernel * kernel * height_ * width_;
  channels_ = out_channels;
  return conv;
}

torch::nn::MaxPool2d NetBuilder::MaxPool(int64_t kernel, int64_t stride, int64_t padding) {
  height_ = (height_ + 2 * padding - kernel) / stride + 1;
  width_ = (width_ + 2 * padding - kernel) / stride + 1;
  return torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(kernel).stride(stride).padding(padding));
}

void NetBuilder::GlobalPool() {
  height_ = 1;
  width_ = 1;
}

torch::nn::Linear NetBuilder::Linear(int64_t out_features) {
  const int64_t in_features = channels_ * height_ * width_;
  macs_ += static_cast<double>(in_features) * out_features;
  channels_ = out_features;
  height_ = 1;
  width_ = 1;
  return torch::nn::Linear(in_features, out_features);
}

NetBuilder NetBuilder::Fork() const { return NetBuilder(channels_, height_, width_); }

void NetBuilder::Join(const NetBuilder& branch) {
  channels_ = branch.channels_;
  height_ = branch.height_;
  width_ = branch.width_;
  macs_ += branch.macs_;
}

void NetBuilder::Absorb(const NetBuilder& branch) { macs_ += branch.macs_; }

int64_t MakeDivisible(double value, int64_t divisor) {
  int64_t rounded =
      std::max<int64_t>(divisor, static_cast<int64_t>(value + divisor / 2.0) / divisor * divisor);
  if (rounded < 0.9 * value) rounded += divisor;
  return rounded;
}

void RequireImageSize(const std::string& model, int64_t image_size, int64_t min_size) {
  if (image_size < min_size) {
    throw std::invalid_argument(model + ": image_size " + std::to_string(image_size) +
                                " is too small for the network's total stride; use at least " +
                                std::to_string(min_size));
  }
}

}  // namespace models
}  // namespace dlbench::torchrunner
