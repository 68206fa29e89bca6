// Where each image is cut and at which scale it is decoded: the geometry of torchvision's
// RandomResizedCrop (training) and Resize + CenterCrop (inference), and the choice of
// libjpeg-turbo's scaled decode. Pure functions of the image size and a seeded stream, so the
// crops of a cell are the same whichever worker decodes which image. No LibTorch.
#pragma once

#include <cstdint>

#include "data/jpeg.h"

namespace dlbench::torchrunner::data {

// SplitMix64: the same numbers on every platform (std:: distributions are not).
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next();
  double Uniform();                      // [0, 1), 53 bits
  double Uniform(double lo, double hi);  // [lo, hi)
  std::uint64_t Below(std::uint64_t n);  // [0, n), unbiased (rejection); n > 0

 private:
  std::uint64_t state_;
};

// One seed from several: SplitMix64's finaliser over each value in turn.
std::uint64_t MixSeed(std::uint64_t a, std::uint64_t b);

struct CropBox {
  int x = 0;  // left column
  int y = 0;  // top row
  int width = 0;
  int height = 0;
  bool operator==(const CropBox& o) const {
    return x == o.x && y == o.y && width == o.width && height == o.height;
  }
};

// torchvision.transforms.RandomResizedCrop.get_params for a width x height image: ten tries of an
// area share in [scale_lo, scale_hi] and a log-uniform aspect ratio in [ratio_lo, ratio_hi], then
// the central crop with the ratio clamped.
CropBox RandomResizedCropBox(int width, int height, SplitMix64& rng, double scale_lo = 0.08,
                             double scale_hi = 1.0, double ratio_lo = 3.0 / 4.0, double ratio_hi = 4.0 / 3.0);

// Resize the shorter side to round(min(out) / crop_fraction) then CenterCrop(out_height, out_width)
// (torchvision's evaluation transform, 256 -> 224 at the default 0.875), as one box in the image.
CropBox CenterCropBox(int width, int height, int out_width, int out_height, double crop_fraction = 0.875);

// The smallest DCT scale at which `box` still has at least out_width x out_height pixels, so the
// decoder does less work and the resize only ever shrinks; 1/1 when even the full size is smaller.
Scale ChooseScale(const CropBox& box, int out_width, int out_height);

// `box` of a width x height image in the coordinates of that image decoded at `scale`, clipped to it.
CropBox ScaleBox(const CropBox& box, int width, int height, Scale scale);

}  // namespace dlbench::torchrunner::data
