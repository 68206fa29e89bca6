#include "data/crop.h"

#include <algorithm>
#include <cmath>

namespace dlbench::torchrunner::data {

std::uint64_t SplitMix64::Next() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double SplitMix64::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

double SplitMix64::Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }

std::uint64_t SplitMix64::Below(std::uint64_t n) {
  // Reject the draws below 2^64 mod n, so every residue is equally likely.
  const std::uint64_t threshold = (0 - n) % n;
  for (;;) {
    const std::uint64_t r = Next();
    if (r >= threshold) return r % n;
  }
}

std::uint64_t MixSeed(std::uint64_t a, std::uint64_t b) {
  SplitMix64 first(a);
  SplitMix64 second(first.Next() ^ b);
  return second.Next();
}

CropBox RandomResizedCropBox(int width, int height, SplitMix64& rng, double scale_lo, double scale_hi,
                             double ratio_lo, double ratio_hi) {
  const double area = static_cast<double>(width) * height;
  const double log_lo = std::log(ratio_lo);
  const double log_hi = std::log(ratio_hi);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng.Uniform(scale_lo, scale_hi);
    const double aspect = std::exp(rng.Uniform(log_lo, log_hi));
    const int w = static_cast<int>(std::lround(std::sqrt(target * aspect)));
    const int h = static_cast<int>(std::lround(std::sqrt(target / aspect)));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      const int y = static_cast<int>(rng.Below(static_cast<std::uint64_t>(height - h + 1)));
      const int x = static_cast<int>(rng.Below(static_cast<std::uint64_t>(width - w + 1)));
      return {x, y, w, h};
    }
  }
  const double in_ratio = static_cast<double>(width) / height;
  int w = width;
  int h = height;
  if (in_ratio < ratio_lo) {
    h = std::max(1, static_cast<int>(std::lround(w / ratio_lo)));
  } else if (in_ratio > ratio_hi) {
    w = std::max(1, static_cast<int>(std::lround(h * ratio_hi)));
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

CropBox CenterCropBox(int width, int height, int out_width, int out_height, double crop_fraction) {
  const double resize_to = std::round(std::min(out_width, out_height) / crop_fraction);
  const double shorter = std::min(width, height);
  const double k = resize_to / shorter;  // the Resize's factor
  const int w = std::clamp(static_cast<int>(std::lround(out_width / k)), 1, width);
  const int h = std::clamp(static_cast<int>(std::lround(out_height / k)), 1, height);
  return {(width - w) / 2, (height - h) / 2, w, h};
}

Scale ChooseScale(const CropBox& box, int out_width, int out_height) {
  for (const Scale& s : DownScales()) {
    if (static_cast<std::int64_t>(box.width) * s.num >= static_cast<std::int64_t>(out_width) * s.denom &&
        static_cast<std::int64_t>(box.height) * s.num >= static_cast<std::int64_t>(out_height) * s.denom) {
      return s;
    }
  }
  return {1, 1};
}

CropBox ScaleBox(const CropBox& box, int width, int height, Scale scale) {
  const int sw = ScaledDim(width, scale);
  const int sh = ScaledDim(height, scale);
  const double fx = static_cast<double>(sw) / width;
  const double fy = static_cast<double>(sh) / height;
  CropBox out;
  out.x = std::clamp(static_cast<int>(std::floor(box.x * fx)), 0, sw - 1);
  out.y = std::clamp(static_cast<int>(std::floor(box.y * fy)), 0, sh - 1);
  out.width = std::clamp(static_cast<int>(std::lround(box.width * fx)), 1, sw - out.x);
  out.height = std::clamp(static_cast<int>(std::lround(box.height * fy)), 1, sh - out.y);
  return out;
}

}  // namespace dlbench::torchrunner::data
