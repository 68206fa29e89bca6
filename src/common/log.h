// Human-facing diagnostics on stderr. Never called inside a timed region or a sampling loop.
#pragma once

#include <fmt/core.h>

#include <cstdio>
#include <string>

namespace dlbench {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
void LogLine(LogLevel level, const std::string& line);

template <class... Args>
void LogInfo(fmt::format_string<Args...> f, Args&&... args) {
  if (GetLogLevel() <= LogLevel::kInfo) LogLine(LogLevel::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void LogWarning(fmt::format_string<Args...> f, Args&&... args) {
  LogLine(LogLevel::kWarning, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void LogError(fmt::format_string<Args...> f, Args&&... args) {
  LogLine(LogLevel::kError, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void LogDebug(fmt::format_string<Args...> f, Args&&... args) {
  if (GetLogLevel() <= LogLevel::kDebug)
    LogLine(LogLevel::kDebug, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace dlbench
