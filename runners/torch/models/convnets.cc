// The image classifiers: ResNet-50 v1.5 and MobileNetV2, plus the MobileNetV2 pieces that
// ssd_mobilenet reuses.
#include <ATen/ThreadLocalState.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "models/layers.h"

namespace dlbench::torchrunner::models {

torch::Tensor SeededNormalImages(int64_t batch, int64_t channels, int64_t height, int64_t width,
                                 uint64_t seed) {
  torch::Tensor images = torch::empty({batch, channels, height, width}, torch::kFloat);
  // Sample i, i + workers, ...: one std::thread per intra-op thread (at::parallel_for's OpenMP
  // team would need this file built with -fopenmp; without it the loop runs on one thread).
  const int64_t workers = std::clamp<int64_t>(at::get_num_threads(), 1, batch);
  // The caller's thread-local state (grad and inference mode, dispatch settings) goes with each
  // thread, as at::launch carries it.
  const at::ThreadLocalState caller_state;
  auto fill = [&images, &caller_state, batch, workers, seed](int64_t first) {
    const at::ThreadLocalStateGuard state_guard(caller_state);
    for (int64_t i = first; i < batch; i += workers) {
      // splitmix64 of (seed, i): distinct, well-mixed seeds for neighbouring samples.
      uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(i) + 1);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      z ^= z >> 31;
      auto generator = at::detail::createCPUGenerator(z);
      images[i].normal_(0.0, 1.0, generator);
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(workers - 1));
  try {
    for (int64_t w = 1; w < workers; ++w) threads.emplace_back(fill, w);
  } catch (...) {
    // A thread that could not start: join those that did (a joinable std::thread's destructor
    // would end the process) and report the failure as the batch's.
    for (auto& t : threads) t.join();
    throw;
  }
  fill(0);
  for (auto& t : threads) t.join();
  return images;
}

namespace {

constexpr int64_t kTotalStride = 32;  // both CNNs downsample by 2 five times

// What the two image classifiers share: synthetic images and class targets, cross-entropy, and
// SGD with momentum as in torchvision's reference training recipe.
class ImageClassifier : public ZooModel {
 public:
  ImageClassifier(int64_t image_size, int64_t num_classes)
      : image_size_(image_size), num_classes_(num_classes) {}

  bool is_convolutional() const override { return true; }

  Batch MakeBatch(int64_t batch_size, torch::Device device, uint64_t seed) const override {
    if (batch_size <= 0) {
      throw std::invalid_argument(name() + ": batch_size must be positive, got " +
                                  std::to_string(batch_size));
    }
    // Drawn on the CPU with private generators, then moved: the same seed gives the same batch
    // on every device, and the global generator (model weights, dropout) is left alone.
    auto generator = at::detail::createCPUGenerator(seed);
    Batch batch;
    batch.inputs.push_back(SeededNormalImages(batch_size, 3, image_size_, image_size_, seed).to(device));
    batch.target = torch::randint(num_classes_, {batch_size}, generator, torch::kLong).to(device);
    return batch;
  }

  std::vector<torch::Tensor> Forward(const Batch& batch) override { return {Logits(batch.inputs.at(0))}; }

  torch::Tensor Loss(const std::vector<torch::Tensor>& outputs, const Batch& batch) override {
    return torch::nn::functional::cross_entropy(outputs.at(0), batch.target);
  }

  std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(std::optional<double> lr) override {
    return std::make_unique<torch::optim::SGD>(
        parameters(), torch::optim::SGDOptions(lr.value_or(0.1)).momentum(0.9).weight_decay(1e-4));
  }

  double ForwardFlopsPerSample() const override { return 2.0 * macs_; }

  // Logits' own steps, one stage each (layer_fault.h): what Stages lists.
  std::vector<ForwardStage> ForwardStages(const Batch& batch) override { return Stages(batch.inputs.at(0)); }

 protected:
  virtual torch::Tensor Logits(torch::Tensor images) = 0;
  // Logits on `images` as a chain; the stages hold `images` by reference.
  virtual std::vector<ForwardStage> Stages(const torch::Tensor& images) = 0;

  int64_t image_size_;
  int64_t num_classes_;
  double macs_ = 0.0;
};

// torchvision's Bottleneck (v1.5: the stride sits on the 3x3 conv).
class BottleneckImpl : public torch::nn::Module {
 public:
  BottleneckImpl(NetBuilder& builder, int64_t width, int64_t stride) {
    const int64_t out_channels = width * 4;
    NetBuilder main = builder.Fork();
    torch::nn::Sequential layers;
    main.ConvBnAct(layers, width, 1, 1, 1, Activation::kReLU);
    main.ConvBnAct(layers, width, 3, stride, 1, Activation::kReLU);
    main.ConvBnAct(layers, out_channels, 1, 1, 1, Activation::kNone);
    main_ = register_module("main", layers);
    if (stride != 1 || builder.channels() != out_channels) {
      NetBuilder side = builder.Fork();
      torch::nn::Sequential projection;
      side.ConvBnAct(projection, out_channels, 1, stride, 1, Activation::kNone);
      downsample_ = register_module("downsample", projection);
      builder.Absorb(side);
    }
    builder.Join(main);
  }

  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor shortcut = downsample_.is_empty() ? x : downsample_->forward(x);
    return torch::relu(main_->forward(x) + shortcut);
  }

 private:
  torch::nn::Sequential main_{nullptr}, downsample_{nullptr};
};
TORCH_MODULE(Bottleneck);

class ResNet50 : public ImageClassifier {
 public:
  ResNet50(int64_t image_size, int64_t base_width, int64_t num_classes)
      : ImageClassifier(image_size, num_classes), base_width_(base_width) {
    NetBuilder builder(3, image_size, image_size);
    torch::nn::Sequential stem;
    builder.ConvBnAct(stem, base_width, 7, 2, 1, Activation::kReLU);
    stem->push_back(builder.MaxPool(3, 2, 1));
    stem_ = register_module("stem", stem);
    const int64_t kBlocks[] = {3, 4, 6, 3};
    stages_ = register_module("stages", torch::nn::Sequential());
    for (int stage = 0; stage < 4; ++stage) {
      const int64_t width = base_width << stage;
      for (int64_t block = 0; block < kBlocks[stage]; ++block) {
        const int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
        stages_->push_back(Bottleneck(builder, width, stride));
      }
    }
    builder.GlobalPool();
    fc_ = register_module("fc", builder.Linear(num_classes));
    macs_ = builder.macs();
  }

  std::string name() const override { return "resnet50"; }

  nlohmann::json EffectiveOptions() const override {
    return {{"image_size", image_size_}, {"base_width", base_width_}, {"num_classes", num_classes_}};
  }

 protected:
  torch::Tensor Logits(torch::Tensor images) override {
    return Head(stages_->forward(stem_->forward(images)));
  }

  // stem, every bottleneck ("stages.0" .. "stages.15"), then the pooling and fc ("fc").
  std::vector<ForwardStage> Stages(const torch::Tensor& images) override {
    std::vector<ForwardStage> stages;
    stages.push_back(
        {"stem", [this, &images](const torch::Tensor& /*previous*/) { return stem_->forward(images); }});
    for (std::size_t i = 0; i < stages_->size(); ++i) {
      auto* block = stages_[i]->as<Bottleneck>();
      stages.push_back({"stages." + std::to_string(i),
                        [block](const torch::Tensor& previous) { return block->forward(previous); }});
    }
    stages.push_back({"fc", [this](const torch::Tensor& previous) { return Head(previous); }});
    return stages;
  }

 private:
  torch::Tensor Head(const torch::Tensor& x) {
    return fc_->forward(torch::flatten(torch::adaptive_avg_pool2d(x, {1, 1}), 1));
  }

  int64_t base_width_;
  torch::nn::Sequential stem_{nullptr}, stages_{nullptr};
  torch::nn::Linear fc_{nullptr};
};

class MobileNetV2 : public ImageClassifier {
 public:
  MobileNetV2(int64_t image_size, double width_mult, int64_t num_classes)
      : ImageClassifier(image_size, num_classes), width_mult_(width_mult) {
    NetBuilder builder(3, image_size, image_size);
    MobileNetV2Features features = BuildMobileNetV2Features(builder, width_mult, 1e-5, 0.1);
    stem_ = register_module("stem", features.stem);
    blocks_ = register_module("blocks", torch::nn::Sequential());
    for (auto& block : features.blocks) blocks_->push_back(block);
    last_conv_ = register_module("last_conv", features.last_conv);
    builder.GlobalPool();
    dropout_ = register_module("dropout", torch::nn::Dropout(0.2));
    classifier_ = register_module("classifier", builder.Linear(num_classes));
    macs_ = builder.macs();
  }

  std::string name() const override { return "mobilenet_v2"; }

  nlohmann::json EffectiveOptions() const override {
    return {{"image_size", image_size_}, {"width_mult", width_mult_}, {"num_classes", num_classes_}};
  }

 protected:
  torch::Tensor Logits(torch::Tensor images) override {
    return Head(last_conv_->forward(blocks_->forward(stem_->forward(images))));
  }

  // stem, every inverted residual ("blocks.0" .. "blocks.16"), last_conv, then the pooling,
  // dropout and classifier ("classifier").
  std::vector<ForwardStage> Stages(const torch::Tensor& images) override {
    std::vector<ForwardStage> stages;
    stages.push_back(
        {"stem", [this, &images](const torch::Tensor& /*previous*/) { return stem_->forward(images); }});
    for (std::size_t i = 0; i < blocks_->size(); ++i) {
      auto* block = blocks_[i]->as<InvertedResidual>();
      stages.push_back({"blocks." + std::to_string(i),
                        [block](const torch::Tensor& previous) { return block->forward(previous); }});
    }
    stages.push_back(
        {"last_conv", [this](const torch::Tensor& previous) { return last_conv_->forward(previous); }});
    stages.push_back({"classifier", [this](const torch::Tensor& previous) { return Head(previous); }});
    return stages;
  }

 private:
  torch::Tensor Head(const torch::Tensor& x) {
    return classifier_->forward(dropout_->forward(torch::flatten(torch::adaptive_avg_pool2d(x, {1, 1}), 1)));
  }

  double width_mult_;
  torch::nn::Sequential stem_{nullptr}, blocks_{nullptr}, last_conv_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
  torch::nn::Linear classifier_{nullptr};
};

}  // namespace

InvertedResidualImpl::InvertedResidualImpl(NetBuilder& builder, int64_t out_channels, int64_t stride,
                                           int64_t expand_ratio, double bn_eps, double bn_momentum) {
  const int64_t in_channels = builder.channels();
  const int64_t hidden = in_channels * expand_ratio;
  hidden_channels_ = hidden;
  use_residual_ = stride == 1 && in_channels == out_channels;
  if (expand_ratio != 1) {
    torch::nn::Sequential expansion;
    builder.ConvBnAct(expansion, hidden, 1, 1, 1, Activation::kReLU6, bn_eps, bn_momentum);
    expansion_ = register_module("expansion", expansion);
  }
  torch::nn::Sequential tail;
  builder.ConvBnAct(tail, hidden, 3, stride, hidden, Activation::kReLU6, bn_eps, bn_momentum);
  builder.ConvBnAct(tail, out_channels, 1, 1, 1, Activation::kNone, bn_eps, bn_momentum);
  tail_ = register_module("tail", tail);
}

torch::Tensor InvertedResidualImpl::ForwardExpansion(torch::Tensor x) {
  return expansion_.is_empty() ? x : expansion_->forward(x);
}

torch::Tensor InvertedResidualImpl::ForwardTail(torch::Tensor x) { return tail_->forward(x); }

torch::Tensor InvertedResidualImpl::forward(torch::Tensor x) {
  torch::Tensor y = ForwardTail(ForwardExpansion(x));
  return use_residual_ ? x + y : y;
}

MobileNetV2Features BuildMobileNetV2Features(NetBuilder& builder, double width_mult, double bn_eps,
                                             double bn_momentum) {
  struct Stage {
    int64_t expand_ratio, channels, repeats, stride;
  };
  // torchvision's inverted_residual_setting (t, c, n, s).
  const Stage kStages[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                           {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  MobileNetV2Features features;
  features.stem = torch::nn::Sequential();
  builder.ConvBnAct(features.stem, MakeDivisible(32 * width_mult, 8), 3, 2, 1, Activation::kReLU6, bn_eps,
                    bn_momentum);
  int64_t output_stride = 2;
  for (const Stage& stage : kStages) {
    const int64_t out_channels = MakeDivisible(stage.channels * width_mult, 8);
    for (int64_t i = 0; i < stage.repeats; ++i) {
      const int64_t stride = i == 0 ? stage.stride : 1;
      // The expansion of the block that leaves output stride 16 is SSDLite's C4 tap; it keeps
      // the block's input resolution (a 1x1 conv).
      const bool is_c4 = stride == 2 && output_stride == 16;
      const FeatureMapShape input{builder.channels(), builder.height(), builder.width()};
      output_stride *= stride;
      features.blocks.emplace_back(builder, out_channels, stride, stage.expand_ratio, bn_eps, bn_momentum);
      if (is_c4) {
        features.c4_block = features.blocks.size() - 1;
        features.c4_shape = {features.blocks.back()->hidden_channels(), input.height, input.width};
      }
    }
  }
  features.last_conv = torch::nn::Sequential();
  builder.ConvBnAct(features.last_conv, MakeDivisible(1280 * std::max(1.0, width_mult), 8), 1, 1, 1,
                    Activation::kReLU6, bn_eps, bn_momentum);
  return features;
}

std::shared_ptr<ZooModel> MakeResNet50(const ModelOptions& options) {
  const int64_t image_size = options.image_size.value_or(224);
  RequireImageSize("resnet50", image_size, kTotalStride);
  return std::make_shared<ResNet50>(image_size, options.base_width.value_or(64),
                                    options.num_classes.value_or(1000));
}

std::shared_ptr<ZooModel> MakeMobileNetV2(const ModelOptions& options) {
  const int64_t image_size = options.image_size.value_or(224);
  RequireImageSize("mobilenet_v2", image_size, kTotalStride);
  return std::make_shared<MobileNetV2>(image_size, options.width_mult.value_or(1.0),
                                       options.num_classes.value_or(1000));
}

}  // namespace dlbench::torchrunner::models
