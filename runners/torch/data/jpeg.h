// JPEG decoding and encoding with Debian's libjpeg-turbo (TurboJPEG API, libturbojpeg0-dev). No
// LibTorch here. A decoder or encoder holds a TurboJPEG handle, which is not thread-safe: each
// pipeline worker owns one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace dlbench::torchrunner::data {

// The largest image the pipeline decodes; beyond it a file is reported rather than allocated for.
inline constexpr int kMaxJpegSide = 16384;
inline constexpr std::int64_t kMaxJpegPixels = std::int64_t{1} << 26;  // 64 Mpixel: 192 MiB of RGB

// A scaling factor of libjpeg-turbo's DCT-domain scaled decode (num/denom: 1/8 ... 2).
struct Scale {
  int num = 1;
  int denom = 1;
  bool operator==(const Scale& o) const { return num == o.num && denom == o.denom; }
};
// The factors this libjpeg-turbo offers that do not enlarge (<= 1), smallest first.
const std::vector<Scale>& DownScales();
// A dimension decoded at `scale`, rounded up as TurboJPEG's TJSCALED does.
int ScaledDim(int dim, Scale scale);

struct JpegInfo {
  int width = 0;
  int height = 0;
};

// An RGB image, rows top to bottom, 3 bytes per pixel (height x width x 3).
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> pixels;
};

class JpegDecoder {
 public:
  JpegDecoder();
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // The image's size from its header. kInvalidInput with TurboJPEG's reason when the bytes are not
  // a JPEG it can read, or when the image is larger than kMaxJpegSide/kMaxJpegPixels.
  Result<JpegInfo> ReadHeader(std::string_view jpeg);
  // Decodes to RGB at `scale` into `out` (its buffer is reused). Any libjpeg warning (a truncated
  // or damaged stream) is an error: a corrupt input, not a grey half-image. Grayscale JPEGs come
  // out as RGB; CMYK ones are an error.
  Status Decode(std::string_view jpeg, Scale scale, RgbImage& out);

 private:
  void* handle_;
};

class JpegEncoder {
 public:
  JpegEncoder();
  ~JpegEncoder();
  JpegEncoder(const JpegEncoder&) = delete;
  JpegEncoder& operator=(const JpegEncoder&) = delete;

  // Baseline JPEG of an RGB image (quality 1..100, 4:2:0 chroma subsampling unless `subsample420`
  // is false, then 4:4:4).
  Result<std::string> Encode(const RgbImage& image, int quality, bool subsample420 = true);

 private:
  void* handle_;
};

}  // namespace dlbench::torchrunner::data
