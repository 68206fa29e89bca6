// The datasheet peak table (peak_flops.h).
#include "peak_flops.h"

#include <gtest/gtest.h>

namespace dlbench::torchrunner {
namespace {

TEST(PeakFlopsPerS, TableLookupBySubstringAndPrecision) {
  EXPECT_DOUBLE_EQ(*PeakFlopsPerS("NVIDIA H200", Precision::kBf16), 989e12);
  EXPECT_DOUBLE_EQ(*PeakFlopsPerS("NVIDIA H200", Precision::kFp16), 989e12);
  EXPECT_DOUBLE_EQ(*PeakFlopsPerS("NVIDIA H200", Precision::kTf32), 494e12);
  EXPECT_DOUBLE_EQ(*PeakFlopsPerS("NVIDIA H100 80GB HBM3", Precision::kFp32), 67e12);
  // The PCIe card must not take the SXM figure.
  EXPECT_DOUBLE_EQ(*PeakFlopsPerS("NVIDIA H100 PCIe", Precision::kBf16), 756e12);
  EXPECT_FALSE(PeakFlopsPerS("NVIDIA H200", Precision::kInt8).has_value());
  EXPECT_FALSE(PeakFlopsPerS("Tesla T4", Precision::kFp32).has_value());
}

}  // namespace
}  // namespace dlbench::torchrunner
