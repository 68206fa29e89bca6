// Starting and stopping child processes. Commands are argv vectors handed to posix_spawn: no
// shell ever sees a user's string.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

namespace dlbench {

struct SpawnOptions {
  std::vector<std::string> argv;                               // argv[0] is searched in PATH if it has no '/'
  std::vector<std::pair<std::string, std::string>> extra_env;  // set on top of this process's environment
  std::string stdout_path;                                     // empty: inherit
  std::string stderr_path;                                     // empty: inherit
  std::vector<std::pair<int, int>> fd_map;                     // {child_fd, parent_fd}: dup2 in the child
  bool new_process_group = true;                               // so the whole tree can be signalled
  // Names not passed on from this process's environment; an entry ending in '*' is a prefix
  // ("SLURM_*"). extra_env is set after, so it may set one of them.
  std::vector<std::string> unset_env;
  // The child is killed (SIGKILL) when this process dies, however it dies (PR_SET_PDEATHSIG, set
  // between fork and exec): a runner must not outlive the dlbench that supervises it. The signal
  // follows the thread that spawned, so spawn from a thread that lives as long as the child.
  bool die_with_parent = false;
  // false: the child starts with RLIMIT_CORE's soft limit at 0, so a crash writes no core file
  // (nor hands one to systemd-coredump or apport, which honour the limit); the hard limit stays.
  // Set between fork and exec, as die_with_parent is.
  bool core_dump = true;
};

struct ExitStatus {
  bool signaled = false;
  int code = 0;    // exit code when !signaled
  int signal = 0;  // signal number when signaled
  bool success() const { return !signaled && code == 0; }
  std::string Describe() const;  // "exit code 3", "killed by SIGSEGV"
};

// "SIGSEGV" for 11; "signal 64" for names the platform does not know.
std::string SignalName(int sig);

// A started child. Not copyable; waiting reaps it exactly once.
class Subprocess {
 public:
  static Result<Subprocess> Spawn(const SpawnOptions& options);

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();  // a child still running is killed (its group) and reaped: no zombies, no orphans

  pid_t pid() const { return pid_; }
  bool finished() const { return status_.has_value(); }
  // Reaps the child if it has ended; never blocks.
  std::optional<ExitStatus> TryWait();
  // Blocks until the child ends.
  ExitStatus Wait();
  // Sends sig to the child's process group (or to the child alone without one).
  void SignalGroup(int sig);
  // SIGTERM to the group, up to grace_ms for it to end, then SIGKILL; then reaps.
  ExitStatus Terminate(int grace_ms);

 private:
  Subprocess() = default;
  pid_t pid_ = -1;
  bool own_group_ = false;
  std::optional<ExitStatus> status_;
};

// Creates a pipe whose two ends are close-on-exec and numbered above 9, so mapping them onto low
// child fds with dup2 never collides. {read_end, write_end}.
Result<std::pair<int, int>> MakePipe();

// Absolute path of the running executable's directory (from /proc/self/exe).
std::string ExecutableDir();

}  // namespace dlbench
