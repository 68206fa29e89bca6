// The helpers that write counts and durations for people (common/human_text.h), on
// hand-checked values, including the rounding edges that gave "1e+03 us".
#include "common/human_text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace dlbench {
namespace {

TEST(HumanTextTest, CountNounIsSingularOnlyForOne) {
  EXPECT_EQ(CountNoun(1, "cell"), "1 cell");
  EXPECT_EQ(CountNoun(-1, "cell"), "-1 cell");
  EXPECT_EQ(CountNoun(0, "cell"), "0 cells");
  EXPECT_EQ(CountNoun(2, "cell"), "2 cells");
  EXPECT_EQ(CountNoun(16, "step"), "16 steps");
  EXPECT_EQ(CountNoun(1, "query", "queries"), "1 query");
  EXPECT_EQ(CountNoun(3, "query", "queries"), "3 queries");
  EXPECT_EQ(CountNoun(std::numeric_limits<std::int64_t>::max(), "run"), "9223372036854775807 runs");
}

TEST(HumanTextTest, FormatSignificantNeverWritesAnExponentForLargeValues) {
  const struct {
    double value;
    int digits;
    const char* text;
  } cases[] = {
      {1234.5, 3, "1234"},  // whole, not 1.23e+03 (1234.5 rounds half to even in %.0f)
      {1235.5, 4, "1236"},           {999.96, 4, "1000"},    {12.345, 4, "12.35"},    {0.5, 3, "0.5"},
      {0.00012, 3, "0.00012"},       {1.2e-7, 2, "1.2e-07"}, {-98765.4, 2, "-98765"}, {0, 3, "0"},
      {1e15, 4, "1000000000000000"}, {3.0, 0, "3"},          {2.5, 99, "2.5"},
  };
  for (const auto& c : cases) EXPECT_EQ(FormatSignificant(c.value, c.digits), c.text) << c.value;
  EXPECT_EQ(FormatSignificant(std::numeric_limits<double>::quiet_NaN(), 3), "-");
  EXPECT_EQ(FormatSignificant(std::numeric_limits<double>::infinity(), 3), "-");
}

TEST(HumanTextTest, HumanDurationPicksTheUnitAfterRounding) {
  const struct {
    double ns;
    const char* text;
  } cases[] = {
      {0, "0 ns"},
      {850, "850 ns"},
      {999.4, "999 ns"},
      {999.6, "1 us"},  // rounds to 1000 ns: said in us
      {1000, "1 us"},
      {12'345, "12.3 us"},
      {999'400, "999 us"},
      {999'960, "1 ms"},  // "%.3g us" wrote 1e+03 us
      {1'234'567, "1.235 ms"},
      {999'999'999, "1 s"},
      {12'345'678'901, "12.35 s"},
      {4.321e12, "4321 s"},  // %.4g would write 4.321e+03 s
      {1.2345e13, "12345 s"},
      {-2'500'000, "-2.5 ms"},
  };
  for (const auto& c : cases) EXPECT_EQ(HumanDurationNs(c.ns), c.text) << c.ns;
  EXPECT_EQ(HumanDurationNs(std::numeric_limits<double>::quiet_NaN()), "-");
  EXPECT_EQ(HumanDurationNs(-std::numeric_limits<double>::infinity()), "-");
}

}  // namespace
}  // namespace dlbench
