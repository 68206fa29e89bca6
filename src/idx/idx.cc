#include "idx/idx.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>

namespace dlbench::idx {
namespace {

constexpr std::size_t kMagicBytes = 4;

Error Invalid(std::string_view name, std::string message) {
  return MakeError(ErrorKind::kInvalidInput, fmt::format("{}: {}", name, message));
}

bool KnownType(std::uint8_t code) {
  switch (static_cast<ElementType>(code)) {
    case ElementType::kUint8:
    case ElementType::kInt8:
    case ElementType::kInt16:
    case ElementType::kInt32:
    case ElementType::kFloat32:
    case ElementType::kFloat64:
      return true;
  }
  return false;
}

std::uint32_t BigEndianU32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (std::uint32_t{u[0]} << 24) | (std::uint32_t{u[1]} << 16) | (std::uint32_t{u[2]} << 8) | u[3];
}

// zlib's message, without the "PATH: " it starts with for file errors.
std::string GzMessage(gzFile_s* file, const std::string& path) {
  int code = 0;
  const char* what = gzerror(file, &code);
  std::string text = what != nullptr ? what : "unknown zlib error";
  if (text.rfind(path + ": ", 0) == 0) text.erase(0, path.size() + 2);
  return text;
}

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

}  // namespace

std::size_t ElementBytes(ElementType type) {
  switch (type) {
    case ElementType::kUint8:
    case ElementType::kInt8:
      return 1;
    case ElementType::kInt16:
      return 2;
    case ElementType::kInt32:
    case ElementType::kFloat32:
      return 4;
    case ElementType::kFloat64:
      return 8;
  }
  return 1;
}

std::size_t IdxArray::count() const {
  std::size_t n = 1;
  for (std::uint32_t d : dims) n *= d;
  return n;
}

Result<IdxArray> ParseIdx(std::string_view bytes, std::string_view name) {
  if (bytes.size() < kMagicBytes) {
    return Invalid(
        name, fmt::format("truncated: {} bytes, shorter than the 4-byte IDX magic number", bytes.size()));
  }
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  if (u[0] != 0 || u[1] != 0 || !KnownType(u[2]) || u[3] == 0) {
    return Invalid(name, fmt::format("not an IDX file: magic number 0x{:02x}{:02x}{:02x}{:02x} at byte 0 "
                                     "(expected 0x0000TTDD: two zero bytes, an element type 08, 09, 0B, "
                                     "0C, 0D or 0E, and 1 to 255 dimensions)",
                                     u[0], u[1], u[2], u[3]));
  }
  IdxArray array;
  array.type = static_cast<ElementType>(u[2]);
  const std::size_t rank = u[3];
  const std::size_t header = kMagicBytes + 4 * rank;
  if (bytes.size() < header) {
    return Invalid(name, fmt::format("truncated header: {} dimensions need {} header bytes, the file has {}",
                                     rank, header, bytes.size()));
  }
  std::size_t expected = ElementBytes(array.type);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::uint32_t d = BigEndianU32(bytes.data() + kMagicBytes + 4 * i);
    if (d != 0 && expected > std::numeric_limits<std::size_t>::max() / d) {
      return Invalid(name, fmt::format("dimension {} (at byte {}) of {} makes the payload overflow", i,
                                       kMagicBytes + 4 * i, d));
    }
    expected *= d;
    array.dims.push_back(d);
  }
  const std::size_t payload = bytes.size() - header;
  if (payload < expected) {
    return Invalid(name, fmt::format("truncated: the header's dimensions need {} payload bytes after byte "
                                     "{}; the data ends at byte {}",
                                     expected, header, bytes.size()));
  }
  if (payload > expected) {
    return Invalid(name, fmt::format("wrong size: {} bytes after the payload's end at byte {} (the header's "
                                     "dimensions need {} payload bytes)",
                                     payload - expected, header + expected, expected));
  }
  array.data.assign(u + header, u + bytes.size());
  return array;
}

Result<IdxArray> ReadIdx(const std::string& path, std::size_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    return MakeError(err == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo,
                     fmt::format("{}: {}", path, std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) return MakeError(ErrorKind::kInvalidInput, path + ": not a regular file");
  // gzread reads a plain file unchanged, so one path serves both forms.
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (!file) return MakeError(ErrorKind::kIo, fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const int n = gzread(file.get(), buffer, sizeof buffer);
    if (n < 0) {
      return Invalid(path, fmt::format("corrupt gzip stream after {} decompressed bytes: {}", bytes.size(),
                                       GzMessage(file.get(), path)));
    }
    if (n == 0) break;
    if (bytes.size() + static_cast<std::size_t>(n) > max_bytes) {
      return Invalid(path, fmt::format("more than {} bytes of content: not an IDX file of a size this "
                                       "reader accepts",
                                       max_bytes));
    }
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
  // A gzip stream cut short reads as a clean end in some zlib versions; gzerror says it.
  int code = Z_OK;
  (void)gzerror(file.get(), &code);
  if (code != Z_OK && code != Z_STREAM_END) {
    return Invalid(path, fmt::format("corrupt gzip stream after {} decompressed bytes: {}", bytes.size(),
                                     GzMessage(file.get(), path)));
  }
  return ParseIdx(bytes, path);
}

Result<LabelledImages> ReadLabelledImages(const std::string& images_path, const std::string& labels_path,
                                          int num_classes) {
  auto images = ReadIdx(images_path);
  if (!images.ok()) return images.error();
  auto labels = ReadIdx(labels_path);
  if (!labels.ok()) return labels.error();
  if (images->type != ElementType::kUint8 || images->dims.size() != 3) {
    return Invalid(images_path, fmt::format("expected unsigned-byte images with 3 dimensions (count, rows, "
                                            "columns); the file has element type 0x{:02x} and {} dimensions",
                                            static_cast<int>(images->type), images->dims.size()));
  }
  if (labels->type != ElementType::kUint8 || labels->dims.size() != 1) {
    return Invalid(labels_path, fmt::format("expected unsigned-byte labels with 1 dimension; the file has "
                                            "element type 0x{:02x} and {} dimensions",
                                            static_cast<int>(labels->type), labels->dims.size()));
  }
  if (images->dims[0] != labels->dims[0]) {
    return Invalid(labels_path, fmt::format("{} labels for {} images in {}", labels->dims[0], images->dims[0],
                                            images_path));
  }
  for (std::size_t i = 0; i < labels->data.size(); ++i) {
    if (labels->data[i] >= num_classes) {
      return Invalid(labels_path, fmt::format("label {} of sample {} (byte {}) is not below {} classes",
                                              labels->data[i], i, 8 + i, num_classes));
    }
  }
  LabelledImages out;
  out.count = images->dims[0];
  out.rows = images->dims[1];
  out.cols = images->dims[2];
  out.pixels = std::move(images->data);
  out.labels = std::move(labels->data);
  return out;
}

}  // namespace dlbench::idx
