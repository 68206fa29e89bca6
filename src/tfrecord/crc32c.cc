#include "tfrecord/crc32c.h"

#include <isa-l/crc.h>

#include <algorithm>
#include <climits>

namespace dlbench::tfrecord {

std::uint32_t ExtendCrc32c(std::uint32_t crc, const void* data, std::size_t size) {
  // crc32_iscsi works on the CRC register without the final inversion, and takes an int length:
  // invert in and out, and feed buffers larger than INT_MAX in pieces.
  unsigned int state = crc ^ 0xffffffffu;
  // ISA-L's signature takes a non-const pointer; it only reads the buffer.
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  constexpr std::size_t kMaxPiece = static_cast<std::size_t>(INT_MAX) & ~std::size_t{4095};
  while (size > 0) {
    const std::size_t piece = std::min(size, kMaxPiece);
    state = crc32_iscsi(p, static_cast<int>(piece), state);
    p += piece;
    size -= piece;
  }
  return state ^ 0xffffffffu;
}

std::uint32_t Crc32c(const void* data, std::size_t size) { return ExtendCrc32c(0, data, size); }

}  // namespace dlbench::tfrecord
