#include "common/files.h"

#include <string.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
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

Status WriteFileAtomic(const std::string& path, const std::string& contents) {
  // A temporary name of this writer's own: two processes replacing one file (two `dlbench run`
  // on one database write its progress file) must not truncate each other's half-written copy.
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return MakeError(ErrorKind::kIo, "cannot write '" + tmp + "': " + strerror(errno));
    out << contents;
    if (!out.flush()) {
      out.close();
      std::remove(tmp.c_str());
      return MakeError(ErrorKind::kIo, "cannot write '" + tmp + "'");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    return MakeError(ErrorKind::kIo, "cannot rename '" + tmp + "' to '" + path + "': " + ec.message());
  }
  return Status::Ok();
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
