#include "peak_flops.h"

#include <array>

namespace dlbench::torchrunner {
namespace {

struct PeakEntry {
  const char* name_part;  // matched as a substring of the CUDA device name; first match wins
  double fp32;
  double tf32;
  double half;  // bf16 and fp16 on the tensor cores
};

// NVIDIA datasheets, dense figures (the sparse ones are twice these). H200 SXM and H100 SXM share
// the compute die and clocks, so their arithmetic peaks are equal; the PCIe H100 is clocked lower.
// The PCIe entry comes before the plain "H100" so that it matches first.
constexpr std::array<PeakEntry, 5> kPeakTable{{
    {"H100 PCIe", 51.2e12, 378e12, 756e12},
    {"H200", 67e12, 494e12, 989e12},
    {"H100", 67e12, 494e12, 989e12},
    {"A100", 19.5e12, 156e12, 312e12},
    {"L40S", 91.6e12, 183e12, 362e12},
}};

}  // namespace

std::optional<double> PeakFlopsPerS(const std::string& device_name, Precision precision) {
  for (const PeakEntry& e : kPeakTable) {
    if (device_name.find(e.name_part) == std::string::npos) continue;
    switch (precision) {
      case Precision::kFp32:
        return e.fp32;
      case Precision::kTf32:
        return e.tf32;
      case Precision::kBf16:
      case Precision::kFp16:
        return e.half;
      case Precision::kInt8:
        return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace dlbench::torchrunner
