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

TEST(TerminalSafeTest, ControlCharactersBecomeHexEscapesNewlineAndTabStay) {
  struct Case {
    std::string in;
    std::string out;
  };
  const Case cases[] = {
      {"", ""},
      {"resnet50 train bs=32", "resnet50 train bs=32"},
      {"two\nlines\tand a tab", "two\nlines\tand a tab"},
      // CSI "clear screen", a bell, a carriage return (overwrites the line), NUL and DEL.
      {"\x1b[2Jname\a", "\\x1b[2Jname\\x07"},
      {"a\rb", "a\\x0db"},
      {std::string("a\0b", 3), "a\\x00b"},
      {"x\x7fy", "x\\x7fy"},
      // An OSC sequence (sets the window title) ends in BEL.
      {"\x1b]0;owned\a", "\\x1b]0;owned\\x07"},
  };
  for (const Case& c : cases) EXPECT_EQ(TerminalSafe(c.in), c.out) << c.out;
}

TEST(TerminalSafeTest, ValidUtf8StaysC1ControlsAndBrokenBytesAreEscaped) {
  // Printable UTF-8 (the table's sparklines, the +-) passes unchanged.
  EXPECT_EQ(TerminalSafe("\xc2\xb1"
                         "CI \xe2\x96\x81\xe2\x96\x88 \xf0\x9f\x98\x80"),
            "\xc2\xb1"
            "CI \xe2\x96\x81\xe2\x96\x88 \xf0\x9f\x98\x80");
  // U+009B is an 8-bit CSI to some terminals; its two bytes are shown.
  EXPECT_EQ(TerminalSafe("a\xc2\x9b"
                         "2J"),
            "a\\xc2\\x9b2J");
  // A lone 0x9b byte (CSI on a Latin-1 terminal), a truncated sequence, an overlong '/' and a
  // UTF-16 surrogate are not UTF-8: each byte is shown.
  EXPECT_EQ(TerminalSafe("\x9b"), "\\x9b");
  EXPECT_EQ(TerminalSafe("\xe2\x96"), "\\xe2\\x96");
  EXPECT_EQ(TerminalSafe("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(TerminalSafe("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(TerminalSafe("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  // A broken lead byte does not swallow the ASCII after it.
  EXPECT_EQ(TerminalSafe("\xe2"
                         "ab"),
            "\\xe2ab");
}

TEST(ValidUtf8PrefixTest, StopsAtTheFirstByteThatIsNotUtf8) {
  EXPECT_EQ(ValidUtf8Prefix(""), 0u);
  EXPECT_EQ(ValidUtf8Prefix("plain"), 5u);
  EXPECT_EQ(ValidUtf8Prefix("\xef\xbb\xbf"
                            "bom and \xc2\xb1"),
            13u);
  EXPECT_EQ(ValidUtf8Prefix("ab\xff"
                            "cd"),
            2u);
  EXPECT_EQ(ValidUtf8Prefix("ab\xe2\x96"), 2u);  // truncated at the end
  EXPECT_EQ(ValidUtf8Prefix("\xc0\xaf"), 0u);    // overlong '/'
}

}  // namespace
}  // namespace dlbench
