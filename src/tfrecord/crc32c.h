// CRC-32C (Castagnoli) and TFRecord's masking of it. The CRC comes from Debian's Intel ISA-L
// (libisal: crc32_iscsi, with SSE4.2/PCLMUL where the CPU has them); TFRecord stores every CRC
// masked, because a CRC computed over data that holds CRCs is weak
// (tensorflow/tsl/lib/hash/crc32c.h; ../shared/notes/libtorch-loadgen-nvml-facts.md §8.1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace dlbench::tfrecord {

// CRC-32C of `size` bytes, as google/crc32c's crc32c::Value and TensorFlow's crc32c::Value
// compute it (initial value and final XOR 0xFFFFFFFF, reflected): "123456789" -> 0xE3069283.
std::uint32_t Crc32c(const void* data, std::size_t size);
inline std::uint32_t Crc32c(std::string_view bytes) { return Crc32c(bytes.data(), bytes.size()); }

// The CRC-32C of A followed by `data`, given `crc` = Crc32c(A): a CRC computed in pieces.
std::uint32_t ExtendCrc32c(std::uint32_t crc, const void* data, std::size_t size);

inline constexpr std::uint32_t kMaskDelta = 0xa282ead8u;

// TensorFlow's mask: rotate right by 15 bits, then add kMaskDelta (mod 2^32).
constexpr std::uint32_t MaskCrc(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
constexpr std::uint32_t UnmaskCrc(std::uint32_t masked) {
  const std::uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace dlbench::tfrecord
