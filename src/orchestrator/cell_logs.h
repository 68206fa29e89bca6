// A runner's stdout or stderr on its way to the cell's log file. The runner writes into a pipe the
// orchestrator drains as it polls (so the runner never blocks on its output), and the log keeps a
// bounded part of the stream: its first `head_bytes`, then, when more came, a marker line and its
// last `tail_bytes` (docs/limits.md). The last `tail_bytes` are also kept in memory for the cell's
// message, so nothing reads the log back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/error.h"

namespace dlbench::orchestrator {

// docs/limits.md: what one log file of a cell keeps of its stream.
inline constexpr std::size_t kLogHeadBytes = std::size_t{32} << 20;
inline constexpr std::size_t kLogTailBytes = std::size_t{1} << 20;

class CappedLog {
 public:
  CappedLog(std::string path, std::size_t head_bytes = kLogHeadBytes, std::size_t tail_bytes = kLogTailBytes);
  ~CappedLog();
  CappedLog(const CappedLog&) = delete;
  CappedLog& operator=(const CappedLog&) = delete;

  // Creates or truncates the file (following a symbolic link, as a shell's `>` does). kIo naming
  // the path on failure.
  Status Open();
  // Takes the next piece of the stream. A failed write (a full disk: ENOSPC) is remembered and
  // ends writing; the stream is still counted and its tail kept.
  void Append(const char* data, std::size_t size);
  // Writes the marker and the tail when bytes were dropped, then closes the file. Idempotent.
  void Close();

  const std::string& path() const { return path_; }
  std::uint64_t total_bytes() const { return total_; }      // the whole stream
  std::uint64_t dropped_bytes() const { return dropped_; }  // not in the file (0 when all of it is)
  // The first failed write or close, "No space left on device after 1048576 bytes"; nullopt when
  // none failed.
  const std::optional<std::string>& write_error() const { return error_; }
  // The last `max_lines` lines of the stream's kept tail, joined by '\n' (a message's context).
  std::string LastLines(int max_lines) const;

 private:
  void Write(const char* data, std::size_t size);

  std::string path_;
  std::size_t head_bytes_;
  std::size_t tail_bytes_;
  int fd_ = -1;
  std::uint64_t total_ = 0;
  std::uint64_t written_ = 0;
  std::uint64_t dropped_ = 0;
  std::string tail_;  // the last tail_bytes_ of the stream (at most twice that while it grows)
  std::optional<std::string> error_;
};

}  // namespace dlbench::orchestrator
