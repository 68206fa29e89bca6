#include "orchestrator/cell_logs.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace dlbench::orchestrator {

CappedLog::CappedLog(std::string path, std::size_t head_bytes, std::size_t tail_bytes)
    : path_(std::move(path)), head_bytes_(head_bytes), tail_bytes_(tail_bytes) {}

CappedLog::~CappedLog() { Close(); }

Status CappedLog::Open() {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    return MakeError(ErrorKind::kIo, "cannot write the log '" + path_ + "': " + std::strerror(errno));
  return Status::Ok();
}

void CappedLog::Write(const char* data, std::size_t size) {
  if (fd_ < 0 || error_) return;
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = fmt::format("{} after {} bytes", std::strerror(errno), written_);
      return;
    }
    written_ += static_cast<std::uint64_t>(n);
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

void CappedLog::Append(const char* data, std::size_t size) {
  total_ += size;
  const std::uint64_t room = written_ + dropped_ < head_bytes_ ? head_bytes_ - (written_ + dropped_) : 0;
  const std::size_t to_file = static_cast<std::size_t>(std::min<std::uint64_t>(room, size));
  if (to_file > 0) {
    const std::uint64_t before = written_;
    Write(data, to_file);
    // What a failed write did not take counts as dropped, so head accounting stays by the stream.
    dropped_ += to_file - (written_ - before);
  }
  dropped_ += size - to_file;
  if (tail_bytes_ == 0) return;
  tail_.append(data, size);
  if (tail_.size() > 2 * tail_bytes_) tail_.erase(0, tail_.size() - tail_bytes_);
}

void CappedLog::Close() {
  if (fd_ < 0) return;
  const std::uint64_t beyond_head = total_ > head_bytes_ ? total_ - head_bytes_ : 0;
  if (beyond_head > 0 && !error_) {
    // The stream past the head: what the tail holds of it is written after the marker.
    const std::size_t kept = static_cast<std::size_t>(
        std::min<std::uint64_t>({beyond_head, tail_bytes_, static_cast<std::uint64_t>(tail_.size())}));
    const std::string marker = fmt::format(
        "\n[dlbench: {} bytes of this stream are not in the log: it keeps the first {} bytes and the "
        "last {} (docs/limits.md)]\n",
        beyond_head - kept, head_bytes_, kept);
    Write(marker.data(), marker.size());
    Write(tail_.data() + tail_.size() - kept, kept);
    if (!error_) dropped_ = beyond_head - kept;
  }
  if (::close(fd_) != 0 && !error_) error_ = fmt::format("{} on close", std::strerror(errno));
  fd_ = -1;
}

std::string CappedLog::LastLines(int max_lines) const {
  std::string_view t = tail_;
  // When the tail does not hold the stream's start, its first line may be cut: drop it.
  if (total_ > tail_.size()) {
    const std::size_t nl = t.find('\n');
    t.remove_prefix(nl == std::string_view::npos ? t.size() : nl + 1);
  }
  while (!t.empty() && t.back() == '\n') t.remove_suffix(1);
  std::size_t begin = t.size();
  for (int lines = 0; begin > 0; --begin) {
    if (t[begin - 1] == '\n' && ++lines == max_lines) break;
  }
  t.remove_prefix(begin);
  // A message holds a few lines, not a megabyte of one.
  constexpr std::size_t kMaxChars = 8192;
  if (t.size() > kMaxChars) t.remove_prefix(t.size() - kMaxChars);
  return std::string(t);
}

}  // namespace dlbench::orchestrator
