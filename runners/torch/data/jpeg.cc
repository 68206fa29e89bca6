#include "data/jpeg.h"

#include <fmt/format.h>
#include <turbojpeg.h>

#include <algorithm>
#include <climits>

namespace dlbench::torchrunner::data {
namespace {

Error Bad(std::string message) { return MakeError(ErrorKind::kInvalidInput, std::move(message)); }

std::string Reason(tjhandle handle) {
  const char* s = tjGetErrorStr2(handle);
  return s != nullptr ? s : "unknown TurboJPEG error";
}

Status CheckSize(std::string_view jpeg) {
  if (jpeg.empty()) return Bad("not a JPEG: the file is empty");
  if (jpeg.size() > static_cast<std::size_t>(ULONG_MAX)) return Bad("not a JPEG: too large");
  return Status::Ok();
}

}  // namespace

const std::vector<Scale>& DownScales() {
  static const std::vector<Scale> scales = [] {
    int n = 0;
    const tjscalingfactor* f = tjGetScalingFactors(&n);
    std::vector<Scale> out;
    for (int i = 0; f != nullptr && i < n; ++i) {
      if (f[i].num <= f[i].denom) out.push_back({f[i].num, f[i].denom});
    }
    if (out.empty()) out.push_back({1, 1});
    std::sort(out.begin(), out.end(),
              [](const Scale& a, const Scale& b) { return a.num * b.denom < b.num * a.denom; });
    return out;
  }();
  return scales;
}

int ScaledDim(int dim, Scale scale) { return (dim * scale.num + scale.denom - 1) / scale.denom; }

JpegDecoder::JpegDecoder() : handle_(tjInitDecompress()) {}
JpegDecoder::~JpegDecoder() {
  if (handle_ != nullptr) tjDestroy(static_cast<tjhandle>(handle_));
}

Result<JpegInfo> JpegDecoder::ReadHeader(std::string_view jpeg) {
  auto h = static_cast<tjhandle>(handle_);
  if (h == nullptr) return MakeError(ErrorKind::kInternal, "TurboJPEG: " + Reason(nullptr));
  DLBENCH_RETURN_IF_ERROR(CheckSize(jpeg));
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(h, reinterpret_cast<const unsigned char*>(jpeg.data()),
                          static_cast<unsigned long>(jpeg.size()), &width, &height, &subsamp,
                          &colorspace) != 0) {
    return Bad("not a JPEG libjpeg-turbo can read: " + Reason(h));
  }
  if (width <= 0 || height <= 0 || width > kMaxJpegSide || height > kMaxJpegSide ||
      static_cast<std::int64_t>(width) * height > kMaxJpegPixels) {
    return Bad(fmt::format("a {}x{} JPEG is beyond the decoder's limit ({} pixels a side, {} pixels)", width,
                           height, kMaxJpegSide, kMaxJpegPixels));
  }
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK)
    return Bad("a CMYK JPEG; only RGB and grayscale are read");
  return JpegInfo{width, height};
}

Status JpegDecoder::Decode(std::string_view jpeg, Scale scale, RgbImage& out) {
  auto info = ReadHeader(jpeg);
  if (!info.ok()) return info.error();
  const int w = ScaledDim(info->width, scale);
  const int h = ScaledDim(info->height, scale);
  out.width = w;
  out.height = h;
  out.pixels.resize(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 3);
  auto handle = static_cast<tjhandle>(handle_);
  if (tjDecompress2(handle, reinterpret_cast<const unsigned char*>(jpeg.data()),
                    static_cast<unsigned long>(jpeg.size()), out.pixels.data(), w, 0, h, TJPF_RGB,
                    TJFLAG_STOPONWARNING) != 0) {
    return Bad("corrupt JPEG: " + Reason(handle));
  }
  return Status::Ok();
}

JpegEncoder::JpegEncoder() : handle_(tjInitCompress()) {}
JpegEncoder::~JpegEncoder() {
  if (handle_ != nullptr) tjDestroy(static_cast<tjhandle>(handle_));
}

Result<std::string> JpegEncoder::Encode(const RgbImage& image, int quality, bool subsample420) {
  auto h = static_cast<tjhandle>(handle_);
  if (h == nullptr) return MakeError(ErrorKind::kInternal, "TurboJPEG: " + Reason(nullptr));
  if (image.width <= 0 || image.height <= 0 ||
      image.pixels.size() != static_cast<std::size_t>(image.width) * image.height * 3) {
    return MakeError(ErrorKind::kInvalidInput, "JpegEncoder: the image's size and its pixels disagree");
  }
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  if (tjCompress2(h, image.pixels.data(), image.width, 0, image.height, TJPF_RGB, &buffer, &size,
                  subsample420 ? TJSAMP_420 : TJSAMP_444, std::clamp(quality, 1, 100),
                  TJFLAG_ACCURATEDCT) != 0) {
    if (buffer != nullptr) tjFree(buffer);
    return MakeError(ErrorKind::kInternal, "TurboJPEG could not encode: " + Reason(h));
  }
  std::string out(reinterpret_cast<const char*>(buffer), size);
  tjFree(buffer);
  return out;
}

}  // namespace dlbench::torchrunner::data
