#include "common/clock.h"

#include <ctime>

namespace dlbench {

std::string FormatUtc(std::int64_t wall_ns) {
  std::time_t seconds = static_cast<std::time_t>(wall_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace dlbench
