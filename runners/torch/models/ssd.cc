// SSDLite320 on a MobileNetV2 backbone, as torchvision builds ssdlite320_mobilenet_v3_large with
// the backbone swapped for MobileNetV2 (the SSDLite of the MobileNetV2 paper): feature maps at
// the C4 expansion (stride 16) and the last conv (stride 32), four extra blocks, depthwise-
// separable heads, default boxes, and the inference post-processing (box decoding, score
// threshold, per-class top-k, NMS, detections per image).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "models/layers.h"

namespace dlbench::torchrunner::models {
namespace {

// torchvision's SSDLite settings.
constexpr int64_t kAnchorsPerLocation = 6;  // aspect ratios [2, 3] plus the two squares
constexpr double kBnEps = 1e-3;
constexpr double kBnMomentum = 0.03;
constexpr double kScoreThresh = 0.001;
constexpr double kNmsThresh = 0.55;
constexpr int64_t kDetectionsPerImage = 300;
constexpr int64_t kTopkCandidates = 300;
constexpr double kBoxWeights[4] = {10.0, 10.0, 5.0, 5.0};  // variances 0.1 / 0.2
constexpr int64_t kNegativesPerPositive = 3;               // hard negative mining
// NMS's memory and syncs (GroupedGreedyNms): groups (a class of an image) whose IoU is built at
// once, and rounds between two tests for the fixed point.
constexpr int64_t kNmsGroupsPerSlice = 64;
constexpr int64_t kNmsRoundsPerCheck = 4;
// Share of anchors given a foreground class in the synthetic target: a handful of objects per
// image, each matched by a few anchors.
constexpr double kForegroundFraction = 0.02;

// torchvision's _extra_block: 1x1 to half the channels, 3x3 depthwise stride 2, 1x1 out.
torch::nn::Sequential ExtraBlock(NetBuilder& builder, int64_t out_channels) {
  const int64_t mid = out_channels / 2;
  torch::nn::Sequential block;
  builder.ConvBnAct(block, mid, 1, 1, 1, Activation::kReLU6, kBnEps, kBnMomentum);
  builder.ConvBnAct(block, mid, 3, 2, mid, Activation::kReLU6, kBnEps, kBnMomentum);
  builder.ConvBnAct(block, out_channels, 1, 1, 1, Activation::kReLU6, kBnEps, kBnMomentum);
  return block;
}

// torchvision's _prediction_block: 3x3 depthwise + BN + ReLU6, then a 1x1 conv with bias.
torch::nn::Sequential PredictionBlock(NetBuilder builder, int64_t out_channels, double& macs) {
  torch::nn::Sequential block;
  builder.ConvBnAct(block, builder.channels(), 3, 1, builder.channels(), Activation::kReLU6, kBnEps,
                    kBnMomentum);
  block->push_back(builder.ConvWithBias(out_channels, 1));
  macs += builder.macs();
  return block;
}

class SsdMobileNet : public ZooModel {
 public:
  SsdMobileNet(int64_t image_size, double width_mult, int64_t num_classes)
      : image_size_(image_size), width_mult_(width_mult), num_classes_(num_classes) {
    NetBuilder builder(3, image_size, image_size);
    MobileNetV2Features features = BuildMobileNetV2Features(builder, width_mult, kBnEps, kBnMomentum);
    stem_ = register_module("stem", features.stem);
    blocks_ = register_module("blocks", torch::nn::ModuleList());
    for (auto& block : features.blocks) blocks_->push_back(block);
    c4_block_ = features.c4_block;
    last_conv_ = register_module("last_conv", features.last_conv);

    std::vector<FeatureMapShape> maps = {features.c4_shape,
                                         {builder.channels(), builder.height(), builder.width()}};
    extras_ = register_module("extras", torch::nn::ModuleList());
    for (int64_t channels : {512, 256, 256, 128}) {
      // torchvision's get_depth: max(min_depth 16, int(d * width_mult)).
      const int64_t depth = std::max<int64_t>(16, static_cast<int64_t>(channels * width_mult));
      extras_->push_back(ExtraBlock(builder, depth));
      maps.push_back({builder.channels(), builder.height(), builder.width()});
    }
    macs_ = builder.macs();

    class_heads_ = register_module("class_heads", torch::nn::ModuleList());
    box_heads_ = register_module("box_heads", torch::nn::ModuleList());
    std::vector<std::pair<int64_t, int64_t>> grid;
    for (const FeatureMapShape& map : maps) {
      const NetBuilder head_input(map.channels, map.height, map.width);
      class_heads_->push_back(PredictionBlock(head_input, kAnchorsPerLocation * num_classes, macs_));
      box_heads_->push_back(PredictionBlock(head_input, kAnchorsPerLocation * 4, macs_));
      grid.emplace_back(map.height, map.width);
    }
    anchors_ = register_buffer("anchors", SsdDefaultBoxes(grid, image_size));
  }

  std::string name() const override { return "ssd_mobilenet"; }
  bool is_convolutional() const override { return true; }
  int64_t num_anchors() const { return anchors_.size(0); }

  // The target is float [N, anchors, 5]: column 0 the anchor's class id (0 = background),
  // columns 1..4 its encoded box regression target (meaningful for foreground anchors only).
  // This stands in for the anchor matching of a real pipeline, which the issue leaves out of
  // the step.
  Batch MakeBatch(int64_t batch_size, torch::Device device, uint64_t seed) const override {
    if (batch_size <= 0) {
      throw std::invalid_argument("ssd_mobilenet: batch_size must be positive, got " +
                                  std::to_string(batch_size));
    }
    auto generator = at::detail::createCPUGenerator(seed);
    const int64_t anchors = anchors_.size(0);
    Batch batch;
    batch.inputs.push_back(SeededNormalImages(batch_size, 3, image_size_, image_size_, seed).to(device));
    torch::Tensor foreground =
        torch::rand({batch_size, anchors}, generator, torch::kFloat) < kForegroundFraction;
    torch::Tensor classes =
        torch::randint(1, num_classes_, {batch_size, anchors}, generator, torch::kLong) * foreground;
    torch::Tensor boxes = torch::randn({batch_size, anchors, 4}, generator, torch::kFloat);
    batch.target = torch::cat({classes.unsqueeze(2).to(torch::kFloat), boxes}, 2).to(device);
    return batch;
  }

  std::vector<torch::Tensor> Forward(const Batch& batch) override {
    torch::Tensor x = stem_->forward(batch.inputs.at(0));
    std::vector<torch::Tensor> maps;
    for (size_t i = 0; i < blocks_->size(); ++i) {
      auto* block = blocks_[i]->as<InvertedResidual>();
      if (i == c4_block_) {
        // The tap sits inside the block; it has stride 2, so no shortcut is lost by splitting.
        maps.push_back(block->ForwardExpansion(x));
        x = block->ForwardTail(maps.back());
      } else {
        x = block->forward(x);
      }
    }
    maps.push_back(last_conv_->forward(x));
    for (const auto& extra : *extras_) {
      maps.push_back(extra->as<torch::nn::Sequential>()->forward(maps.back()));
    }
    std::vector<torch::Tensor> box_regression;
    for (size_t i = 0; i < maps.size(); ++i) {
      box_regression.push_back(HeadOutput(box_heads_[i]->as<torch::nn::Sequential>()->forward(maps[i]), 4));
    }
    return {ClassLogits(maps), torch::cat(box_regression, 1)};
  }

  // Forward's steps to its first output (the class logits, what the evaluation compares), one
  // stage each: stem, every inverted residual ("blocks.0" .. "blocks.16"; the C4 block also keeps
  // its tap), last_conv, every extra block ("extras.0" .. "extras.3"), then the class heads on all
  // six feature maps ("class_heads"). The box heads are not in the chain. Each chain keeps its
  // own feature maps.
  std::vector<ForwardStage> ForwardStages(const Batch& batch) override {
    const torch::Tensor& images = batch.inputs.at(0);
    auto maps = std::make_shared<std::vector<torch::Tensor>>();
    std::vector<ForwardStage> stages;
    stages.push_back({"stem", [this, &images, maps](const torch::Tensor& /*previous*/) {
                        maps->clear();
                        return stem_->forward(images);
                      }});
    for (size_t i = 0; i < blocks_->size(); ++i) {
      auto* block = blocks_[i]->as<InvertedResidual>();
      const bool tap = i == c4_block_;
      stages.push_back({"blocks." + std::to_string(i), [block, tap, maps](const torch::Tensor& previous) {
                          if (!tap) return block->forward(previous);
                          maps->push_back(block->ForwardExpansion(previous));
                          return block->ForwardTail(maps->back());
                        }});
    }
    stages.push_back({"last_conv", [this, maps](const torch::Tensor& previous) {
                        maps->push_back(last_conv_->forward(previous));
                        return maps->back();
                      }});
    for (size_t i = 0; i < extras_->size(); ++i) {
      auto* extra = extras_[i]->as<torch::nn::Sequential>();
      stages.push_back({"extras." + std::to_string(i), [extra, maps](const torch::Tensor& previous) {
                          maps->push_back(extra->forward(previous));
                          return maps->back();
                        }});
    }
    stages.push_back(
        {"class_heads", [this, maps](const torch::Tensor& /*previous*/) { return ClassLogits(*maps); }});
    return stages;
  }

  // torchvision's SSD loss: smooth L1 on foreground boxes, cross-entropy on foreground anchors
  // and the 3x as many hardest background anchors, both divided by the foreground count.
  torch::Tensor Loss(const std::vector<torch::Tensor>& outputs, const Batch& batch) override {
    const torch::Tensor& logits = outputs.at(0);
    const torch::Tensor& regression = outputs.at(1);
    torch::Tensor classes = batch.target.select(2, 0).to(torch::kLong);
    torch::Tensor box_targets = batch.target.narrow(2, 1, 4);
    torch::Tensor foreground = classes > 0;
    torch::Tensor num_foreground = foreground.sum(1, /*keepdim=*/true);

    namespace F = torch::nn::functional;
    torch::Tensor box_loss = F::smooth_l1_loss(regression, box_targets.to(regression.scalar_type()),
                                               F::SmoothL1LossFuncOptions().reduction(torch::kNone))
                                 .sum(2)
                                 .masked_select(foreground)
                                 .sum();
    torch::Tensor class_loss = F::cross_entropy(logits.reshape({-1, num_classes_}), classes.reshape({-1}),
                                                F::CrossEntropyFuncOptions().reduction(torch::kNone))
                                   .view(classes.sizes());
    torch::Tensor negative_loss =
        class_loss.detach().masked_fill(foreground, -std::numeric_limits<double>::infinity());
    torch::Tensor order = std::get<1>(negative_loss.sort(1, /*descending=*/true));
    torch::Tensor rank = std::get<1>(order.sort(1));
    torch::Tensor hard_negative = rank < kNegativesPerPositive * num_foreground;
    torch::Tensor denominator = num_foreground.sum().clamp_min(1).to(class_loss.scalar_type());
    return (box_loss + class_loss.masked_select(foreground | hard_negative).sum()) / denominator;
  }

  torch::Tensor PostProcess(const std::vector<torch::Tensor>& outputs) override {
    // In fp32 whatever the compute precision: decoding and IoU are precision-sensitive.
    return SsdSelectDetections(outputs.at(0).to(torch::kFloat), DecodeBoxes(outputs.at(1).to(torch::kFloat)),
                               {kScoreThresh, kNmsThresh, kTopkCandidates, kDetectionsPerImage});
  }

  double ForwardFlopsPerSample() const override { return 2.0 * macs_; }

  nlohmann::json EffectiveOptions() const override {
    return {{"image_size", image_size_},
            {"width_mult", width_mult_},
            {"num_classes", num_classes_},
            {"anchors", anchors_.size(0)},
            {"score_thresh", kScoreThresh},
            {"nms_thresh", kNmsThresh},
            {"detections_per_img", kDetectionsPerImage},
            {"topk_candidates", kTopkCandidates}};
  }

  std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(std::optional<double> lr) override {
    // torchvision's SSDLite recipe uses weight decay 4e-5.
    return std::make_unique<torch::optim::SGD>(
        parameters(), torch::optim::SGDOptions(lr.value_or(0.1)).momentum(0.9).weight_decay(4e-5));
  }

 private:
  // The class heads on every feature map, concatenated: [N, anchors, classes].
  torch::Tensor ClassLogits(const std::vector<torch::Tensor>& maps) {
    std::vector<torch::Tensor> class_logits;
    for (size_t i = 0; i < maps.size(); ++i) {
      class_logits.push_back(
          HeadOutput(class_heads_[i]->as<torch::nn::Sequential>()->forward(maps[i]), num_classes_));
    }
    return torch::cat(class_logits, 1);
  }

  // [N, A*K, H, W] -> [N, H*W*A, K]: location-major, anchor-minor, the order of the anchors.
  static torch::Tensor HeadOutput(const torch::Tensor& x, int64_t k) {
    const int64_t n = x.size(0), h = x.size(2), w = x.size(3);
    return x.view({n, kAnchorsPerLocation, k, h, w})
        .permute({0, 3, 4, 1, 2})
        .reshape({n, h * w * kAnchorsPerLocation, k});
  }

  // torchvision's BoxCoder.decode_single with weights (10, 10, 5, 5), then clipping to the
  // image. `regression` [N, A, 4] -> boxes [N, A, 4] (x1, y1, x2, y2).
  torch::Tensor DecodeBoxes(const torch::Tensor& regression) const {
    torch::Tensor anchors = anchors_.to(regression.device(), torch::kFloat);
    torch::Tensor widths = anchors.select(1, 2) - anchors.select(1, 0);
    torch::Tensor heights = anchors.select(1, 3) - anchors.select(1, 1);
    torch::Tensor center_x = anchors.select(1, 0) + 0.5 * widths;
    torch::Tensor center_y = anchors.select(1, 1) + 0.5 * heights;
    const double max_log_scale = std::log(1000.0 / 16.0);
    torch::Tensor dx = regression.select(2, 0) / kBoxWeights[0];
    torch::Tensor dy = regression.select(2, 1) / kBoxWeights[1];
    torch::Tensor dw = (regression.select(2, 2) / kBoxWeights[2]).clamp_max(max_log_scale);
    torch::Tensor dh = (regression.select(2, 3) / kBoxWeights[3]).clamp_max(max_log_scale);
    torch::Tensor x = dx * widths + center_x;
    torch::Tensor y = dy * heights + center_y;
    torch::Tensor half_w = 0.5 * torch::exp(dw) * widths;
    torch::Tensor half_h = 0.5 * torch::exp(dh) * heights;
    return torch::stack({x - half_w, y - half_h, x + half_w, y + half_h}, 2)
        .clamp(0.0, static_cast<double>(image_size_));
  }

  int64_t image_size_;
  double width_mult_;
  int64_t num_classes_;
  double macs_ = 0.0;
  size_t c4_block_ = 0;
  torch::nn::Sequential stem_{nullptr}, last_conv_{nullptr};
  torch::nn::ModuleList blocks_{nullptr}, extras_{nullptr}, class_heads_{nullptr}, box_heads_{nullptr};
  torch::Tensor anchors_;
};

}  // namespace

torch::Tensor GroupedGreedyNms(const torch::Tensor& boxes, const torch::Tensor& valid, double iou_threshold) {
  TORCH_CHECK(boxes.dim() == 3 && boxes.size(2) == 4, "GroupedGreedyNms: boxes must be [G, T, 4]");
  TORCH_CHECK(valid.dim() == 2 && valid.size(0) == boxes.size(0) && valid.size(1) == boxes.size(1) &&
                  valid.scalar_type() == torch::kBool,
              "GroupedGreedyNms: valid must be bool [G, T]");
  const int64_t groups = boxes.size(0);
  const int64_t t = boxes.size(1);
  torch::Tensor earlier = torch::ones({t, t}, valid.options()).triu(/*diagonal=*/1).unsqueeze(0);
  // suppresses[g, j, i]: the earlier candidate j would remove candidate i if j survives. Built a
  // slice of groups at a time: the IoU's float intermediates take about 30 bytes a pair, the
  // result one.
  torch::Tensor suppresses = torch::empty({groups, t, t}, valid.options());
  for (int64_t first = 0; first < groups; first += kNmsGroupsPerSlice) {
    const int64_t count = std::min(kNmsGroupsPerSlice, groups - first);
    torch::Tensor b = boxes.narrow(0, first, count);
    torch::Tensor area = (b.select(2, 2) - b.select(2, 0)) * (b.select(2, 3) - b.select(2, 1));
    torch::Tensor top_left = torch::max(b.narrow(2, 0, 2).unsqueeze(2), b.narrow(2, 0, 2).unsqueeze(1));
    torch::Tensor bottom_right = torch::min(b.narrow(2, 2, 2).unsqueeze(2), b.narrow(2, 2, 2).unsqueeze(1));
    torch::Tensor overlap = (bottom_right - top_left).clamp_min(0).prod(3);
    torch::Tensor iou = overlap / (area.unsqueeze(2) + area.unsqueeze(1) - overlap);
    suppresses.narrow(0, first, count)
        .copy_((iou > iou_threshold) & earlier & valid.narrow(0, first, count).unsqueeze(2));
  }
  // Greedy NMS is the fixed point of keep[i] = valid[i] && no kept j < i suppresses i. Iterating
  // from keep = valid settles one more position per round (position i depends only on j < i),
  // so it is exact after at most T rounds, and a settled keep stays as it is; in practice
  // suppression chains are short. Each round is a batched tensor op over every group; the test for
  // the fixed point (a device synchronisation) comes every kNmsRoundsPerCheck rounds.
  torch::Tensor keep = valid;
  for (int64_t round = 0; round <= t; round += kNmsRoundsPerCheck) {
    torch::Tensor next = keep;
    for (int64_t i = 0; i < kNmsRoundsPerCheck; ++i) {
      next = valid & ~(suppresses & next.unsqueeze(2)).any(1);
    }
    if (torch::equal(next, keep)) break;
    keep = next;
  }
  return keep;
}

torch::Tensor SsdSelectDetections(const torch::Tensor& logits, const torch::Tensor& boxes,
                                  const DetectionSettings& settings) {
  TORCH_CHECK(logits.dim() == 3 && logits.size(2) >= 2, "SsdSelectDetections: logits must be [N, A, K >= 2]");
  TORCH_CHECK(boxes.dim() == 3 && boxes.size(0) == logits.size(0) && boxes.size(1) == logits.size(1) &&
                  boxes.size(2) == 4,
              "SsdSelectDetections: boxes must be [N, A, 4] beside logits [N, A, K]");
  TORCH_CHECK(settings.images_per_chunk >= 1, "SsdSelectDetections: images_per_chunk must be at least 1");
  const int64_t images = logits.size(0);
  const int64_t candidates = std::min(settings.topk_candidates, logits.size(1));
  const int64_t classes = logits.size(2) - 1;
  const int64_t ranked = classes * candidates;
  const int64_t count = std::min(settings.detections_per_image, ranked);
  const float none = -std::numeric_limits<float>::infinity();
  std::vector<torch::Tensor> detections;
  for (int64_t first = 0; first < images; first += settings.images_per_chunk) {
    const int64_t c = std::min(settings.images_per_chunk, images - first);
    torch::Tensor scores = torch::softmax(logits.narrow(0, first, c), -1).narrow(2, 1, classes);
    // Per-class top-k over all anchors, then the threshold: the same set as torchvision's
    // threshold-then-top-k, for every class of every image of the chunk at once.
    auto [top_scores, top_anchors] = scores.topk(candidates, 1);   // [c, candidates, classes]
    top_scores = top_scores.transpose(1, 2).reshape({c, ranked});  // class-major, as the groups
    torch::Tensor anchor_index = top_anchors.transpose(1, 2).reshape({c, ranked, 1}).expand({c, ranked, 4});
    torch::Tensor class_boxes = boxes.narrow(0, first, c).gather(1, anchor_index);  // [c, ranked, 4]
    torch::Tensor keep =
        GroupedGreedyNms(class_boxes.view({c * classes, candidates, 4}),
                         (top_scores > settings.score_thresh).view({c * classes, candidates}),
                         settings.nms_thresh)
            .view({c, ranked});
    // The best `count` survivors of each image, by score; the rest of the slots are marked.
    auto [best, order] = top_scores.masked_fill(~keep, none).topk(count, 1);  // [c, count]
    torch::Tensor labels = order.div(candidates, "floor").add(1).to(torch::kFloat);
    torch::Tensor image = torch::arange(first, first + c, best.options()).unsqueeze(1).expand({c, count});
    torch::Tensor rows =
        torch::cat({image.unsqueeze(2), class_boxes.gather(1, order.unsqueeze(2).expand({c, count, 4})),
                    best.unsqueeze(2), labels.unsqueeze(2)},
                   2);
    detections.push_back(rows.masked_select((best > none).unsqueeze(2)).view({-1, 7}));
  }
  if (detections.empty()) return torch::zeros({0, 7}, logits.options());
  return torch::cat(detections, 0);
}

torch::Tensor SsdDefaultBoxes(const std::vector<std::pair<int64_t, int64_t>>& feature_maps,
                              int64_t image_size) {
  const size_t maps = feature_maps.size();
  std::vector<double> scales;
  for (size_t k = 0; k < maps; ++k) {
    scales.push_back(maps > 1 ? 0.2 + (0.95 - 0.2) * k / (maps - 1.0) : 0.2);
  }
  scales.push_back(1.0);
  std::vector<float> data;
  for (size_t k = 0; k < maps; ++k) {
    const double s = scales[k];
    const double s_prime = std::sqrt(scales[k] * scales[k + 1]);
    std::vector<std::pair<double, double>> sizes = {{s, s}, {s_prime, s_prime}};
    for (double ratio : {2.0, 3.0}) {
      sizes.emplace_back(s * std::sqrt(ratio), s / std::sqrt(ratio));
      sizes.emplace_back(s / std::sqrt(ratio), s * std::sqrt(ratio));
    }
    const auto [rows, cols] = feature_maps[k];
    for (int64_t row = 0; row < rows; ++row) {
      for (int64_t col = 0; col < cols; ++col) {
        const double cx = (col + 0.5) / cols;
        const double cy = (row + 0.5) / rows;
        for (const auto& [w_raw, h_raw] : sizes) {
          const double w = std::clamp(w_raw, 0.0, 1.0);
          const double h = std::clamp(h_raw, 0.0, 1.0);
          for (double v : {cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h}) {
            data.push_back(static_cast<float>(v * image_size));
          }
        }
      }
    }
  }
  return torch::tensor(data).view({-1, 4});
}

std::shared_ptr<ZooModel> MakeSsdMobileNet(const ModelOptions& options) {
  const int64_t image_size = options.image_size.value_or(320);
  RequireImageSize("ssd_mobilenet", image_size, 32);
  const int64_t num_classes = options.num_classes.value_or(91);
  if (num_classes < 2) {
    throw std::invalid_argument(
        "ssd_mobilenet: num_classes counts the background class and must "
        "be at least 2, got " +
        std::to_string(num_classes));
  }
  return std::make_shared<SsdMobileNet>(image_size, options.width_mult.value_or(1.0), num_classes);
}

}  // namespace dlbench::torchrunner::models
