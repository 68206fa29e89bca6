#include "runners/null/memory_model.h"

#include <gtest/gtest.h>

#include <limits>

namespace dlbench::synthetic {
namespace {

TEST(MemoryModelTest, NeedIsBasePlusPerSample) {
  const MemoryModel m{1000, 250};
  EXPECT_EQ(NeededBytes(m, 0), 1000);
  EXPECT_EQ(NeededBytes(m, 1), 1250);
  EXPECT_EQ(NeededBytes(m, 8), 3000);
  EXPECT_EQ(NeededBytes(MemoryModel{}, 1 << 20), 0);
}

TEST(MemoryModelTest, NeedSaturatesInsteadOfOverflowing) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(NeededBytes(MemoryModel{1, std::int64_t{1} << 40}, std::int64_t{1} << 40), kMax);
  EXPECT_EQ(NeededBytes(MemoryModel{kMax, 0}, 5), kMax);
  EXPECT_EQ(NeededBytes(MemoryModel{kMax - 10, 5}, 2), kMax);
  EXPECT_EQ(NeededBytes(MemoryModel{kMax - 10, 5}, 3), kMax);
}

// The boundary is exact: need == cap fits, one byte more does not; no cap never runs out.
TEST(MemoryModelTest, OutOfMemoryExactlyAboveTheCap) {
  const MemoryModel m{1000, 250};
  EXPECT_FALSE(ModelledOom(m, 8, 3000));
  const auto oom = ModelledOom(m, 9, 3000);
  ASSERT_TRUE(oom);
  EXPECT_EQ(*oom,
            "out of memory (memory model): tried to allocate 3250 bytes (base 1000 + 250 per sample x 9); "
            "memory_cap is 3000 bytes");
  EXPECT_FALSE(ModelledOom(m, 1 << 20, std::nullopt));
  EXPECT_TRUE(ModelledOom(m, 0, 999));
}

}  // namespace
}  // namespace dlbench::synthetic
