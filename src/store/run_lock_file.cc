#include "store/run_lock_file.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace dlbench::store {
namespace {

Error LockError(const std::string& path, const char* what) {
  return MakeError(ErrorKind::kStore, fmt::format("run lock {}: {}: {}", path, what, std::strerror(errno)));
}

// What a holder wrote; fields it had not written yet read as empty.
RunLockOwner ReadOwner(int fd) {
  RunLockOwner owner;
  char buf[4096];
  const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  if (n <= 0) return owner;
  const nlohmann::json j = nlohmann::json::parse(buf, buf + n, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return owner;
  if (auto it = j.find("pid"); it != j.end() && it->is_number_integer()) owner.pid = it->get<std::int64_t>();
  if (auto it = j.find("host"); it != j.end() && it->is_string()) owner.host = it->get<std::string>();
  if (auto it = j.find("since_wall_ns"); it != j.end() && it->is_number_integer()) {
    owner.since_wall_ns = it->get<std::int64_t>();
  }
  return owner;
}

}  // namespace

RunLockFiles::~RunLockFiles() {
  while (!held_.empty()) (void)Unlock(held_.begin()->first);
}

std::string RunLockFiles::PathOf(std::int64_t run_id) const {
  return fmt::format("{}.run-{}.lock", db_path_, run_id);
}

Result<std::optional<RunLockOwner>> RunLockFiles::TryLock(std::int64_t run_id, const RunLockOwner& owner) {
  if (held_.count(run_id)) return std::optional<RunLockOwner>();
  if (db_path_.empty() || db_path_ == ":memory:") {
    held_[run_id] = -1;
    return std::optional<RunLockOwner>();
  }
  const std::string path = PathOf(run_id);
  // A holder removes its file before it lets go of the lock, so the file we locked may have been
  // unlinked in between: then it locks nothing, and we try again on the new file.
  for (int attempt = 0; attempt < 10; ++attempt) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return LockError(path, "cannot open");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err != EWOULDBLOCK) {
        ::close(fd);
        errno = err;
        return LockError(path, "cannot lock");
      }
      const RunLockOwner holder = ReadOwner(fd);
      ::close(fd);
      return std::optional<RunLockOwner>(holder);
    }
    struct stat locked {
    }, named{};
    if (::fstat(fd, &locked) != 0 || ::stat(path.c_str(), &named) != 0 || locked.st_ino != named.st_ino ||
        locked.st_dev != named.st_dev) {
      ::close(fd);
      continue;
    }
    const std::string text =
        nlohmann::json({{"pid", owner.pid}, {"host", owner.host}, {"since_wall_ns", owner.since_wall_ns}})
            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
        "\n";
    if (::ftruncate(fd, 0) != 0 ||
        ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
      const Error e = LockError(path, "cannot write");
      ::unlink(path.c_str());
      ::close(fd);
      return e;
    }
    held_[run_id] = fd;
    return std::optional<RunLockOwner>();
  }
  return MakeError(ErrorKind::kStore, "run lock " + path + ": it keeps being replaced; try again");
}

Status RunLockFiles::Unlock(std::int64_t run_id) {
  auto it = held_.find(run_id);
  if (it == held_.end()) return Status::Ok();
  const int fd = it->second;
  held_.erase(it);
  if (fd < 0) return Status::Ok();
  const std::string path = PathOf(run_id);
  const bool removed = ::unlink(path.c_str()) == 0 || errno == ENOENT;
  ::close(fd);
  if (!removed) return LockError(path, "cannot remove");
  return Status::Ok();
}

}  // namespace dlbench::store
