#include "common/clock.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace dlbench {
namespace {

TEST(SecondsToNsTest, ConvertsAndSaturatesInsteadOfOverflowing) {
  EXPECT_EQ(SecondsToNs(0.0), 0);
  EXPECT_EQ(SecondsToNs(1.5), 1'500'000'000);
  EXPECT_EQ(SecondsToNs(-2.0), -2'000'000'000);
  EXPECT_EQ(SecondsToNs(604800.0), 604'800'000'000'000);
  // 1e10 s is 1e19 ns, beyond int64: it used to wrap to a negative deadline (every cell timed out
  // at once).
  EXPECT_EQ(SecondsToNs(1e10), kMaxDurationNs);
  EXPECT_EQ(SecondsToNs(1e300), kMaxDurationNs);
  EXPECT_EQ(SecondsToNs(std::numeric_limits<double>::infinity()), kMaxDurationNs);
  EXPECT_EQ(SecondsToNs(-1e300), -kMaxDurationNs);
  EXPECT_EQ(SecondsToNs(std::nan("")), 0);
  // A saturated duration added to a clock reading of this century does not overflow.
  const std::int64_t now = MonotonicNowNs();
  EXPECT_GT(now + SecondsToNs(1e300), now);
  EXPECT_GT(WallNowNs() + SecondsToNs(1e300), 0);
}

}  // namespace
}  // namespace dlbench
