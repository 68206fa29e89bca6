#include "common/text.h"

#include <gtest/gtest.h>

#include <string>

namespace dlbench {
namespace {

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
