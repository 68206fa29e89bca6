// The shared text and hash helpers (common/text.h, common/hash.h), on hand-checked values.
#include "common/text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/hash.h"

namespace dlbench {
namespace {

using Parts = std::vector<std::string>;

TEST(TextTest, TrimRemovesOnlyTheEdges) {
  EXPECT_EQ(Trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(Trim("\v\fx\f"), "x");
  EXPECT_EQ(Trim(""), "");
  EXPECT_EQ(Trim(" \t "), "");
  EXPECT_EQ(Trim("none"), "none");
  EXPECT_EQ(Trim("\"Debian 12\"\n", " \n\""), "Debian 12");
}

TEST(TextTest, SplitKeepsEmptyPieces) {
  EXPECT_EQ(Split("a;b;c", ';'), (Parts{"a", "b", "c"}));
  EXPECT_EQ(Split("", ';'), (Parts{""}));
  EXPECT_EQ(Split("a;", ';'), (Parts{"a", ""}));
  EXPECT_EQ(Split(";a", ';'), (Parts{"", "a"}));
  EXPECT_EQ(Split(";;", ';'), (Parts{"", "", ""}));
  EXPECT_EQ(Split(" a , b ", ','), (Parts{" a ", " b "}));
}

TEST(TextTest, JoinIsSplitsInverse) {
  EXPECT_EQ(Join({}, ", "), "");
  EXPECT_EQ(Join({"a"}, ", "), "a");
  EXPECT_EQ(Join({"a", "", "b"}, ";"), "a;;b");
  for (const std::string text : {"", "a", "a;b", ";", "x;;y;"}) EXPECT_EQ(Join(Split(text, ';'), ";"), text);
}

TEST(TextTest, Affixes) {
  EXPECT_TRUE(StartsWith("cuda:1", "cuda:"));
  EXPECT_TRUE(StartsWith("x", ""));
  EXPECT_FALSE(StartsWith("cud", "cuda"));
  EXPECT_TRUE(EndsWith("step_ms", "_ms"));
  EXPECT_TRUE(EndsWith("", ""));
  EXPECT_FALSE(EndsWith("ms", "_ms"));
  EXPECT_FALSE(EndsWith("steps", "_ms"));
}

TEST(TextTest, ParseIntIsStrict) {
  EXPECT_EQ(ParseInt("0"), 0);
  EXPECT_EQ(ParseInt("42"), 42);
  EXPECT_EQ(ParseInt("+7"), 7);
  EXPECT_EQ(ParseInt("-7"), -7);
  EXPECT_EQ(ParseInt("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(ParseInt("-9223372036854775808"), std::numeric_limits<std::int64_t>::min());
  for (const char* bad :
       {"", "+", "-", "9223372036854775808", "1.0", "1e3", " 1", "1 ", "0x10", "+-1", "++1", "--1", "1a"}) {
    EXPECT_EQ(ParseInt(bad), std::nullopt) << bad;
  }
}

TEST(TextTest, ParseUintTakesDigitsOnly) {
  EXPECT_EQ(ParseUint("0"), 0u);
  EXPECT_EQ(ParseUint("18446744073709551615"), std::numeric_limits<std::uint64_t>::max());
  for (const char* bad : {"", "18446744073709551616", "-1", "+1", " 1", "1x"}) {
    EXPECT_EQ(ParseUint(bad), std::nullopt) << bad;
  }
}

TEST(TextTest, ParseNumberIsFiniteAndLocaleFree) {
  EXPECT_EQ(ParseNumber("1"), 1.0);
  EXPECT_EQ(ParseNumber("-2.5"), -2.5);
  EXPECT_EQ(ParseNumber("+0.5"), 0.5);
  EXPECT_EQ(ParseNumber("1e-3"), 1e-3);
  EXPECT_EQ(ParseNumber("1.2e10"), 1.2e10);
  for (const char* bad : {"", "+", "nan", "inf", "-inf", "1e400", "1,5", " 1", "1 ", "+-1", "0x1p3"}) {
    EXPECT_EQ(ParseNumber(bad), std::nullopt) << bad;
  }
}

// Reference values: FNV-1a 64 from the published test vectors; SplitMix64 from Vigna's
// splitmix64.c seeded with 0 (both recomputed independently in Python).
TEST(HashTest, Fnv1a64KnownValues) {
  static_assert(Fnv1a64("") == kFnv1a64OffsetBasis);
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ull);
  // Bytes above 0x7f are hashed as unsigned values whatever the signedness of char.
  EXPECT_EQ(Fnv1a64("\xff"), (kFnv1a64OffsetBasis ^ 0xffull) * kFnv1a64Prime);
  EXPECT_EQ(Fnv1a64("a", 0), 0x61ull * kFnv1a64Prime);
}

TEST(HashTest, SplitMix64KnownValues) {
  std::uint64_t state = 0;
  EXPECT_EQ(SplitMix64Next(state), 0xe220a8397b1dcdafull);
  EXPECT_EQ(SplitMix64Next(state), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(SplitMix64Next(state), 0x06c45d188009454full);
  EXPECT_EQ(state, 3 * kSplitMix64Gamma);
  EXPECT_EQ(SplitMix64(0), 0xe220a8397b1dcdafull);
  EXPECT_EQ(SplitMix64(kSplitMix64Gamma), 0x6e789e6aa1b965f4ull);
}

}  // namespace
}  // namespace dlbench
