// IDX files (the format of MNIST and Fashion-MNIST, http://yann.lecun.com/exdb/mnist/), plain or
// gzip-compressed: a 4-byte magic (two zero bytes, the element type, the number of dimensions),
// each dimension as a big-endian u32, then the elements in row-major order, big-endian. A file
// is accepted only when its magic is known, its header is complete and its payload is exactly
// the product of its dimensions times the element size; every error names the file and, where
// one applies, the byte offset in the decompressed stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace dlbench::idx {

enum class ElementType : std::uint8_t {
  kUint8 = 0x08,
  kInt8 = 0x09,
  kInt16 = 0x0B,
  kInt32 = 0x0C,
  kFloat32 = 0x0D,
  kFloat64 = 0x0E,
};
std::size_t ElementBytes(ElementType type);

struct IdxArray {
  ElementType type = ElementType::kUint8;
  std::vector<std::uint32_t> dims;
  std::vector<std::uint8_t> data;  // the elements as stored (multi-byte types stay big-endian)
  std::size_t count() const;       // the product of dims (1 for no dimension)
};

// The most decompressed bytes ReadIdx accepts by default: the Fashion-MNIST training images are
// 47 MB; a gzip bomb or a wrong file stops here with an error rather than filling memory.
inline constexpr std::size_t kDefaultMaxBytes = std::size_t{1} << 30;

// Parses IDX bytes already in memory; `name` names the source in errors. kInvalidInput for a
// wrong magic, a short header, a size overflow or a payload of the wrong length.
Result<IdxArray> ParseIdx(std::string_view bytes, std::string_view name);

// Reads and parses a file, gzip-compressed (by its magic bytes, whatever its name) or not.
// kNotFound when it does not exist, kIo when it cannot be read, kInvalidInput for a corrupt gzip
// stream, more than max_bytes of content, or anything ParseIdx rejects.
Result<IdxArray> ReadIdx(const std::string& path, std::size_t max_bytes = kDefaultMaxBytes);

// An image set with its labels: images [count, rows, cols] u8, labels [count] u8 < num_classes.
struct LabelledImages {
  std::uint32_t count = 0, rows = 0, cols = 0;
  std::vector<std::uint8_t> pixels;  // count * rows * cols, row-major
  std::vector<std::uint8_t> labels;  // count
};

// Reads an images file (3 dimensions, u8) and its labels file (1 dimension, u8); kInvalidInput
// naming the file when a shape or type is not that, the counts differ, or a label is not below
// num_classes (naming the label's index and byte offset).
Result<LabelledImages> ReadLabelledImages(const std::string& images_path, const std::string& labels_path,
                                          int num_classes);

}  // namespace dlbench::idx
