// The hashes and mixers whose outputs dlbench stores or documents (cell seeds, interleaved order,
// environment ids, bootstrap seeds). Written out rather than taken from std::hash or <random>,
// whose results differ between standard libraries: a stored seed must mean the same everywhere.
#pragma once

#include <cstdint>
#include <string_view>

namespace dlbench {

// FNV-1a, 64 bits (Fowler, Noll, Vo): offset basis and prime of the published definition.
inline constexpr std::uint64_t kFnv1a64OffsetBasis = 14695981039346656037ull;
inline constexpr std::uint64_t kFnv1a64Prime = 1099511628211ull;

// FNV-1a of the bytes, starting from `basis` (the standard offset basis unless a caller derives
// its own, e.g. to mix a seed in).
constexpr std::uint64_t Fnv1a64(std::string_view bytes, std::uint64_t basis = kFnv1a64OffsetBasis) {
  std::uint64_t h = basis;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= kFnv1a64Prime;
  }
  return h;
}

// SplitMix64 (Steele, Lea, Flood 2014; the constants of Vigna's splitmix64.c).
inline constexpr std::uint64_t kSplitMix64Gamma = 0x9E3779B97F4A7C15ull;

// The SplitMix64 finaliser of x + gamma: a bijection that spreads every input bit over the output.
constexpr std::uint64_t SplitMix64(std::uint64_t x) {
  std::uint64_t z = x + kSplitMix64Gamma;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The next output of the SplitMix64 generator whose state is `state`, which advances by gamma.
// From state 0 the outputs are 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f.
constexpr std::uint64_t SplitMix64Next(std::uint64_t& state) {
  const std::uint64_t out = SplitMix64(state);
  state += kSplitMix64Gamma;
  return out;
}

}  // namespace dlbench
