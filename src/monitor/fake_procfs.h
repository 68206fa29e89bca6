// Canned procfs and sysfs files for tests (the ProcFs seam of procfs_sampler.h). Test-only: it
// lives in dlbench::monitor_fakes, which no production target links.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "monitor/procfs_sampler.h"

namespace dlbench::monitor {

// Canned files for tests. Directories exist implicitly: List("/proc") names the first path
// component below /proc of every file set. Thread-safe.
class FakeProcFs final : public ProcFs {
 public:
  void Set(const std::string& path, std::string contents);
  // Makes Read(path) fail with kIo (a file that exists but is not readable).
  void SetUnreadable(const std::string& path);
  void Remove(const std::string& path);
  Result<std::string> Read(const std::string& path) const override;
  Result<std::vector<std::string>> List(const std::string& path) const override;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::optional<std::string>> files_;  // nullopt: unreadable
};

}  // namespace dlbench::monitor
