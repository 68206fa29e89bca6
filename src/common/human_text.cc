#include "common/human_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "common/text.h"

namespace dlbench {

std::string CountNoun(std::int64_t count, std::string_view singular, std::string_view plural) {
  std::string out = std::to_string(count);
  out += ' ';
  if (count == 1 || count == -1) {
    out += singular;
  } else if (plural.empty()) {
    out += singular;
    out += 's';
  } else {
    out += plural;
  }
  return out;
}

std::string FormatSignificant(double value, int digits) {
  if (!std::isfinite(value)) return "-";
  digits = std::clamp(digits, 1, 17);
  std::string out = fmt::format("{:.{}g}", value, digits);
  // %g switches to an exponent once the integer part has more digits than asked for; a
  // duration or a rate that large reads better whole.
  if (std::fabs(value) >= 1 && out.find('e') != std::string::npos) out = fmt::format("{:.0f}", value);
  return out;
}

std::string HumanDurationNs(double ns) {
  if (!std::isfinite(ns)) return "-";
  struct Unit {
    double scale;
    const char* name;
    int digits;  // 0: whole numbers
  };
  static constexpr Unit kUnits[] = {{1, "ns", 0}, {1e3, "us", 3}, {1e6, "ms", 4}, {1e9, "s", 4}};
  constexpr std::size_t kLast = sizeof(kUnits) / sizeof(kUnits[0]) - 1;
  for (std::size_t i = 0; i <= kLast; ++i) {
    const Unit& u = kUnits[i];
    const double v = ns / u.scale;
    const std::string text = u.digits == 0 ? fmt::format("{:.0f}", v) : FormatSignificant(v, u.digits);
    // Rounding may carry the number to 1000 of this unit: the next unit says it in fewer digits.
    const auto shown = ParseNumber(text);
    if (i < kLast && (std::fabs(v) >= 1000 || (shown && std::fabs(*shown) >= 1000))) continue;
    return text + " " + u.name;
  }
  return "-";  // not reached: the last unit always returns
}

}  // namespace dlbench
