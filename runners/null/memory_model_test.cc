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

// The per-token and per-pixel terms that seq_len: max and image_size: max are tested with.
TEST(MemoryModelTest, TokensAndPixelsCountPerSample) {
  const MemoryModel m{1000, 10, 3, 2};
  EXPECT_EQ(NeededBytes(m, InputShape{2, 0, 0}), 1020);
  EXPECT_EQ(NeededBytes(m, InputShape{2, 16, 0}), 1020 + 3 * 2 * 16);
  EXPECT_EQ(NeededBytes(m, InputShape{2, 16, 32}), 1020 + 96 + 2 * 2 * 32 * 32);
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(NeededBytes(MemoryModel{0, 0, 0, 1}, InputShape{1, 0, std::int64_t{1} << 32}), kMax);
  EXPECT_EQ(NeededBytes(MemoryModel{0, 0, std::int64_t{1} << 40, 0}, InputShape{1 << 20, 1 << 20, 0}), kMax);
  const auto oom = ModelledOom(m, InputShape{2, 16, 32}, 5000);
  ASSERT_TRUE(oom);
  EXPECT_EQ(
      *oom,
      "out of memory (memory model): tried to allocate 5212 bytes (base 1000 + 10 per sample x 2 + 3 per "
      "token x 2 x 16 + 2 per pixel x 2 x 32^2); memory_cap is 5000 bytes");
  EXPECT_FALSE(ModelledOom(m, InputShape{2, 16, 32}, 5212));
}

}  // namespace
}  // namespace dlbench::synthetic
