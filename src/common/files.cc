#include "common/files.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

namespace dlbench {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    return MakeError(err == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo,
                     "cannot read '" + path + "': " + strerror(err));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

// "a directory", "a FIFO", ...: what a path names, for messages.
const char* KindName(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

Error IoError(const std::string& what, int err) {
  return MakeError(ErrorKind::kIo, what + ": " + strerror(err));
}

Status WriteAllToFd(int fd, const std::string& path, const std::string& contents) {
  const char* data = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("cannot write '" + path + "'", errno);
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

// Closes fd; a failed close can be the first report of a failed write (NFS, a full disk).
Status CloseChecked(int fd, const std::string& path) {
  if (::close(fd) != 0 && errno != EINTR) return IoError("cannot write '" + path + "'", errno);
  return Status::Ok();
}

// The temporary-file-and-rename half of WriteFileAtomic, without the check of what path is.
// `replaced_mode` is the permission bits of the file being replaced, kept on the new one.
Status ReplaceByRename(const std::string& path, const std::string& contents,
                       std::optional<mode_t> replaced_mode) {
  // A temporary name of this writer's own: two processes replacing one file (two `dlbench run`
  // on one database write its progress file) must not truncate each other's half-written copy.
  // O_EXCL: a link planted at that name is not followed.
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return IoError("cannot write '" + tmp + "'", errno);
  Status written = WriteAllToFd(fd, tmp, contents);
  if (written.ok() && replaced_mode) (void)::fchmod(fd, *replaced_mode & 07777);
  Status closed = CloseChecked(fd, tmp);
  if (written.ok()) written = closed;
  if (!written.ok()) {
    ::unlink(tmp.c_str());
    return written;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return IoError("cannot rename '" + tmp + "' to '" + path + "'", err);
  }
  return Status::Ok();
}

// What lstat says path is: nullopt when it does not exist; an error when it cannot be told.
Result<std::optional<struct stat>> LstatIfExists(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) return std::optional<struct stat>(st);
  if (errno == ENOENT) return std::optional<struct stat>();
  return IoError("cannot write '" + path + "'", errno);
}

Error Refused(const std::string& path, mode_t mode, const std::string& why) {
  return MakeError(ErrorKind::kIo, "cannot write '" + path + "': it is " + KindName(mode) + why);
}

// Opens path for writing as a shell's `>` would and writes contents through it.
Status WriteThrough(const std::string& path, const std::string& contents) {
  // No O_TRUNC before knowing what was opened: a block device reached through a link must not be
  // touched at all. O_NOCTTY: a terminal written to does not become our controlling terminal.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOCTTY | O_CLOEXEC, 0666);
  if (fd < 0) return IoError("cannot write '" + path + "'", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return IoError("cannot write '" + path + "'", err);
  }
  if (S_ISBLK(st.st_mode) || S_ISDIR(st.st_mode) || S_ISSOCK(st.st_mode)) {
    ::close(fd);
    return Refused(path, st.st_mode, " (through a link); dlbench does not write there");
  }
  if (S_ISREG(st.st_mode) && ::ftruncate(fd, 0) != 0) {
    const int err = errno;
    ::close(fd);
    return IoError("cannot write '" + path + "'", err);
  }
  Status written = WriteAllToFd(fd, path, contents);
  Status closed = CloseChecked(fd, path);
  return written.ok() ? closed : written;
}

}  // namespace

Status WriteFileAtomic(const std::string& path, const std::string& contents) {
  auto st = LstatIfExists(path);
  if (!st.ok()) return st.error();
  if (*st && !S_ISREG((*st)->st_mode)) {
    return Refused(path, (*st)->st_mode, ", not a regular file, and is left as it is");
  }
  return ReplaceByRename(path, contents, *st ? std::optional<mode_t>((*st)->st_mode) : std::nullopt);
}

Status WriteOutputFile(const std::string& path, const std::string& contents) {
  auto st = LstatIfExists(path);
  if (!st.ok()) return st.error();
  if (!*st) return ReplaceByRename(path, contents, std::nullopt);
  const mode_t mode = (*st)->st_mode;
  if (S_ISREG(mode)) return ReplaceByRename(path, contents, mode);
  if (S_ISLNK(mode) || S_ISFIFO(mode) || S_ISCHR(mode)) return WriteThrough(path, contents);
  return Refused(path, mode, "; name a file to write");
}

Status MakeDirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return MakeError(ErrorKind::kIo, "cannot create directory '" + path + "': " + ec.message());
  return Status::Ok();
}

std::string TailLines(const std::string& path, int max_lines) {
  auto text = ReadFile(path);
  if (!text.ok()) return "";
  const std::string& s = *text;
  std::vector<std::string> lines;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (static_cast<int>(lines.size()) > max_lines) lines.erase(lines.begin());
  }
  std::string out;
  for (const auto& l : lines) {
    if (!out.empty()) out += '\n';
    out += l;
  }
  return out;
}

}  // namespace dlbench
