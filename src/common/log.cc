#include "common/log.h"

#include <atomic>
#include <mutex>

namespace dlbench {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_mutex;
}  // namespace

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

void LogLine(LogLevel level, const std::string& line) {
  static const char* kPrefix[] = {"debug: ", "", "warning: ", "error: "};
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "dlbench: %s%s\n", kPrefix[static_cast<int>(level)], line.c_str());
}

}  // namespace dlbench
