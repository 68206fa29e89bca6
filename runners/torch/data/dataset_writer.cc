#include "data/dataset_writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "data/crop.h"
#include "tfrecord/example.h"
#include "tfrecord/record.h"

namespace dlbench::torchrunner::data {
namespace {

Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) == 0) return Status::Ok();
  struct stat st {};
  if (errno == EEXIST && lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Status::Ok();
  return MakeError(ErrorKind::kIo,
                   fmt::format("{}: cannot create the folder: {}", path, std::strerror(errno)));
}

Status WriteRegularFile(const std::string& path, const std::string& bytes) {
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return MakeError(ErrorKind::kInvalidInput,
                     path + ": exists and is not a regular file; refusing to replace it");
  }
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0)
    return MakeError(ErrorKind::kIo, fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return MakeError(ErrorKind::kIo, fmt::format("{}: write failed: {}", path, std::strerror(err)));
    }
    done += static_cast<std::size_t>(n);
  }
  if (close(fd) != 0) return MakeError(ErrorKind::kIo, fmt::format("{}: close failed", path));
  return Status::Ok();
}

}  // namespace

Rgb QuadrantColour(int label, int quadrant) {
  auto channel = [](int v) { return static_cast<std::uint8_t>(40 + (v % 176 + 176) % 176); };
  return {channel(label * 53 + quadrant * 97), channel(label * 91 + quadrant * 29 + 60),
          channel(label * 17 + quadrant * 151 + 120)};
}

RgbImage MakeImage(const DatasetSpec& spec, int label, int index) {
  RgbImage img;
  img.width = spec.width;
  img.height = spec.height;
  img.pixels.resize(static_cast<std::size_t>(spec.width) * spec.height * 3);
  SplitMix64 noise(
      MixSeed(spec.seed, (static_cast<std::uint64_t>(label) << 32) ^ static_cast<std::uint64_t>(index)));
  for (int y = 0; y < spec.height; ++y) {
    for (int x = 0; x < spec.width; ++x) {
      const int q = spec.quadrants ? (y * 2 >= spec.height ? 2 : 0) + (x * 2 >= spec.width ? 1 : 0) : 0;
      const Rgb c = QuadrantColour(label, q);
      std::uint8_t* p = &img.pixels[(static_cast<std::size_t>(y) * spec.width + x) * 3];
      for (int ch = 0; ch < 3; ++ch) {
        int v = c[ch];
        if (spec.texture > 0) v += static_cast<int>(noise.Below(2 * spec.texture + 1)) - spec.texture;
        p[ch] = static_cast<std::uint8_t>(std::clamp(v, 0, 255));
      }
    }
  }
  return img;
}

Status WriteJpegFolder(const std::string& root, const DatasetSpec& spec) {
  DLBENCH_RETURN_IF_ERROR(MakeDir(root));
  JpegEncoder encoder;
  for (int c = 0; c < spec.classes; ++c) {
    const std::string dir = fmt::format("{}/class_{:03d}", root, c);
    DLBENCH_RETURN_IF_ERROR(MakeDir(dir));
    for (int i = 0; i < spec.per_class; ++i) {
      auto jpeg = encoder.Encode(MakeImage(spec, c, i), spec.quality);
      if (!jpeg.ok()) return jpeg.error();
      DLBENCH_RETURN_IF_ERROR(WriteRegularFile(fmt::format("{}/img_{:05d}.jpg", dir, i), *jpeg));
    }
  }
  return Status::Ok();
}

Status WriteTfRecords(const std::string& prefix, int files, const DatasetSpec& spec, int label_offset) {
  if (files < 1) return MakeError(ErrorKind::kInvalidInput, "WriteTfRecords: at least one file");
  JpegEncoder encoder;
  std::vector<tfrecord::RecordWriter> writers;
  for (int f = 0; f < files; ++f) {
    auto w = tfrecord::RecordWriter::Create(fmt::format("{}-{:05d}-of-{:05d}", prefix, f, files));
    if (!w.ok()) return w.error();
    writers.push_back(std::move(*w));
  }
  std::int64_t n = 0;
  for (int i = 0; i < spec.per_class; ++i) {
    for (int c = 0; c < spec.classes; ++c, ++n) {
      auto jpeg = encoder.Encode(MakeImage(spec, c, i), spec.quality);
      if (!jpeg.ok()) return jpeg.error();
      DLBENCH_RETURN_IF_ERROR(writers[static_cast<std::size_t>(n % files)].Append(
          tfrecord::EncodeImageExample(*jpeg, c + label_offset)));
    }
  }
  for (auto& w : writers) DLBENCH_RETURN_IF_ERROR(w.Close());
  return Status::Ok();
}

}  // namespace dlbench::torchrunner::data
