// Building blocks shared by the zoo's models (internal to runners/torch/models): a builder that
// creates conv/linear layers while tracking the feature-map shape, so every model counts its
// FLOPs from the layers it actually built, and the MobileNetV2 pieces that both mobilenet_v2 and
// ssd_mobilenet use.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/zoo.h"

namespace dlbench::torchrunner::models {

enum class Activation { kNone, kReLU, kReLU6 };

// The shape of one sample's feature map flowing through a network under construction, and the
// multiply-adds of the layers built so far. A value type: Fork() starts a parallel branch from
// the same shape with no multiply-adds; Join() continues from a finished branch (its shape, plus
// its multiply-adds); Absorb() adds a side branch's multiply-adds only (a shortcut projection).
class NetBuilder {
 public:
  NetBuilder(int64_t channels, int64_t height, int64_t width);

  // Appends conv (no bias) + BatchNorm + activation to `into`, padding (k-1)/2 as torchvision's
  // Conv2dNormActivation. (Appended rather than returned: a Sequential cannot hold another.)
  void ConvBnAct(torch::nn::Sequential& into, int64_t out_channels, int64_t kernel, int64_t stride,
                 int64_t groups, Activation activation, double bn_eps = 1e-5, double bn_momentum = 0.1);
  // A plain convolution with bias, stride 1 (prediction heads).
  torch::nn::Conv2d ConvWithBias(int64_t out_channels, int64_t kernel);
  // MaxPool2d(kernel, stride, padding).
  torch::nn::MaxPool2d MaxPool(int64_t kernel, int64_t stride, int64_t padding);
  // Global average pooling to [channels] (the layer is applied functionally by the model).
  void GlobalPool();
  // Linear(in = current channels, out); the shape becomes [out, 1, 1].
  torch::nn::Linear Linear(int64_t out_features);

  NetBuilder Fork() const;
  void Join(const NetBuilder& branch);
  void Absorb(const NetBuilder& branch);

  int64_t channels() const { return channels_; }
  int64_t height() const { return height_; }
  int64_t width() const { return width_; }
  double macs() const { return macs_; }

 private:
  int64_t channels_, height_, width_;
  double macs_ = 0.0;
};

// torchvision's _make_divisible: rounds channels to a multiple of `divisor`, never below 90%.
int64_t MakeDivisible(double value, int64_t divisor);

// Throws std::invalid_argument unless `image_size` is at least `min_size` (the total stride).
void RequireImageSize(const std::string& model, int64_t image_size, int64_t min_size);

// MobileNetV2's inverted residual: optional 1x1 expansion, 3x3 depthwise (the stride), linear
// 1x1 projection, and the identity shortcut when stride is 1 and channels are kept.
class InvertedResidualImpl : public torch::nn::Module {
 public:
  InvertedResidualImpl(NetBuilder& builder, int64_t out_channels, int64_t stride, int64_t expand_ratio,
                       double bn_eps, double bn_momentum);
  torch::Tensor forward(torch::Tensor x);
  // The two halves SSDLite taps between: the expansion (empty when expand_ratio is 1), then
  // depthwise + projection. ForwardTail(ForwardExpansion(x)) + shortcut == forward(x).
  torch::Tensor ForwardExpansion(torch::Tensor x);
  torch::Tensor ForwardTail(torch::Tensor x);
  bool use_residual() const { return use_residual_; }
  int64_t hidden_channels() const { return hidden_channels_; }

 private:
  int64_t hidden_channels_;
  torch::nn::Sequential expansion_{nullptr}, tail_{nullptr};
  bool use_residual_ = false;
};
TORCH_MODULE(InvertedResidual);

// MobileNetV2's feature extractor (stem, 17 inverted residuals, final 1x1 conv to 1280 * max(1,
// width_mult) channels) built on `builder`, as torchvision builds it.
struct FeatureMapShape {
  int64_t channels = 0, height = 0, width = 0;
};
struct MobileNetV2Features {
  torch::nn::Sequential stem{nullptr};
  std::vector<InvertedResidual> blocks;
  torch::nn::Sequential last_conv{nullptr};
  size_t c4_block = 0;       // the first block that moves to output stride 32 (SSDLite's C4)
  FeatureMapShape c4_shape;  // the shape at that block's expansion output (output stride 16)
};
MobileNetV2Features BuildMobileNetV2Features(NetBuilder& builder, double width_mult, double bn_eps,
                                             double bn_momentum);

// Greedy non-maximum suppression run independently in G groups (one group per class): `boxes`
// [G, T, 4] (x1, y1, x2, y2), each group sorted by descending score; `valid` [G, T] bool marks
// real candidates (below-threshold entries neither survive nor suppress). Returns keep [G, T]:
// a candidate survives unless an earlier surviving candidate of its group overlaps it with IoU >
// `iou_threshold`. Identical to torchvision's batched_nms (the class-offset trick makes classes
// disjoint; here groups are a batch dimension instead, so memory is G*T^2, not (G*T)^2). Pure
// tensor ops: runs on any device.
torch::Tensor GroupedGreedyNms(const torch::Tensor& boxes, const torch::Tensor& valid, double iou_threshold);

// Synthetic images [batch, channels, height, width] of standard normal float32 values, made on the
// CPU: sample i from a generator of its own, seeded from (`seed`, i), the samples spread over as
// many threads as ATen's intra-op setting (at::get_num_threads()). The same seed gives the same
// images on every device and with any thread count, and a batch is the first `batch` samples of
// any larger batch of the seed. (One sequential generator made about 190 million values a second
// on one core: 3 s for a ResNet-50 batch of 4,096, paid again by every probe of a boundary search.)
torch::Tensor SeededNormalImages(int64_t batch, int64_t channels, int64_t height, int64_t width,
                                 uint64_t seed);

// SSD's default boxes as torchvision's DefaultBoxGenerator([[2, 3]] * maps, min_ratio 0.2,
// max_ratio 0.95, clip): per feature map (rows, cols) and per location, 6 boxes (aspect 1, the
// extra scale sqrt(s_k s_k+1), 2, 1/2, 3, 1/3). Returns [anchors, 4] as x1, y1, x2, y2 in pixels.
// SSD's inference selection (torchvision's SSD.postprocess_detections) from class logits [N, A, K]
// (K counts the background, class 0) and decoded boxes [N, A, 4]: per image and class the
// `topk_candidates` best anchors by softmax score, those above `score_thresh`, greedy NMS per
// class at `nms_thresh`, then the `detections_per_image` best survivors of the image by score.
// Returns [D, 7] rows (image, x1, y1, x2, y2, score, label), images in order, each image's rows
// by descending score (the order of equal scores is unspecified, as torchvision's topk). The
// images go `images_per_chunk` at a time through batched tensor ops, so a batch costs a few
// device synchronisations per chunk, not per image; memory grows with the chunk (about 16 MB an
// image at 90 classes and 300 candidates, on top of one slice of NMS groups).
struct DetectionSettings {
  double score_thresh = 0.001;
  double nms_thresh = 0.55;
  int64_t topk_candidates = 300;
  int64_t detections_per_image = 300;
  int64_t images_per_chunk = 16;
};
torch::Tensor SsdSelectDetections(const torch::Tensor& logits, const torch::Tensor& boxes,
                                  const DetectionSettings& settings);

torch::Tensor SsdDefaultBoxes(const std::vector<std::pair<int64_t, int64_t>>& feature_maps,
                              int64_t image_size);

// Factories behind MakeModel; each validates its options and throws std::invalid_argument.
std::shared_ptr<ZooModel> MakeResNet50(const ModelOptions& options);
std::shared_ptr<ZooModel> MakeMobileNetV2(const ModelOptions& options);
std::shared_ptr<ZooModel> MakeBertBase(const ModelOptions& options);
std::shared_ptr<ZooModel> MakeSsdMobileNet(const ModelOptions& options);
// Fashion-MNIST's reference CNN (fashion_cnn), with BatchNorm after each convolution when
// batch_norm (fashion_cnn_bn). Options: base_width (conv1's filters, 32; conv2 has twice),
// hidden_size (the dense layer, 1024), num_classes (10); the input is always 1 x 28 x 28.
std::shared_ptr<ZooModel> MakeFashionCnn(const ModelOptions& options, bool batch_norm);

}  // namespace dlbench::torchrunner::models
