// Numbers for people: a count with its noun ("1 cell", "3 cells"), significant digits without
// exponents for large values, and durations in the unit that reads best. Every text dlbench
// prints or writes for a person (console tables, verdict reasons, the HTML report) formats counts
// and durations through these, so "1 cells" and "1e+03 us" appear nowhere. Pure functions;
// locale-independent.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dlbench {

// The count and its noun for people: "1 cell", "0 cells", "16 cells", "-1 cell". `plural` is
// used for every count but 1 and -1; empty means `singular` + "s" ("1 query" needs "queries").
std::string CountNoun(std::int64_t count, std::string_view singular, std::string_view plural = {});

// `value` with `digits` significant digits (1..17) and never an exponent for |value| >= 1: what
// "%.*g" gives, except that 1234.6 at 3 digits is "1235", not "1.23e+03". Values below 1 keep
// %g's form ("0.00012", "1.2e-07"); "-" for a value that is not finite.
std::string FormatSignificant(double value, int digits);

// A duration given in nanoseconds for people, in the largest unit that keeps the number at or
// above 1: "850 ns", "12.3 us", "1.235 ms", "12.35 s", "4321 s". Nanoseconds are whole, us show 3
// significant digits, ms and s 4. A value that rounds up to 1000 of its unit is written in the
// next one ("999.96 us" is "1 ms", never "1e+03 us"); "-" for a value that is not finite.
std::string HumanDurationNs(double ns);

}  // namespace dlbench
