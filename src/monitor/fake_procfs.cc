#include "monitor/fake_procfs.h"

#include <string.h>

#include <cerrno>
#include <set>
#include <utility>

namespace dlbench::monitor {
namespace {

// As RealProcFs reports them, so code under test sees the same kinds and messages.
Error IoError(const std::string& what, const std::string& path, int err) {
  return MakeError(err == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo,
                   what + " '" + path + "': " + strerror(err));
}

}  // namespace

void FakeProcFs::Set(const std::string& path, std::string contents) {
  std::lock_guard<std::mutex> lock(mutex_);
  files_[path] = std::move(contents);
}

void FakeProcFs::SetUnreadable(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  files_[path] = std::nullopt;
}

void FakeProcFs::Remove(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  files_.erase(path);
}

Result<std::string> FakeProcFs::Read(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = files_.find(path);
  if (it == files_.end()) return IoError("cannot open", path, ENOENT);
  if (!it->second) return IoError("cannot open", path, EACCES);
  return *it->second;
}

Result<std::vector<std::string>> FakeProcFs::List(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string prefix = path;
  if (prefix.empty() || prefix.back() != '/') prefix += '/';
  std::set<std::string> names;
  for (auto it = files_.lower_bound(prefix); it != files_.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    std::string rest = it->first.substr(prefix.size());
    names.insert(rest.substr(0, rest.find('/')));
  }
  if (names.empty()) return IoError("cannot list", path, ENOENT);
  return std::vector<std::string>(names.begin(), names.end());
}

}  // namespace dlbench::monitor
