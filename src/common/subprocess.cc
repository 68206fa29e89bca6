#include "common/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <thread>
#include <utility>

extern char** environ;

namespace dlbench {

std::string SignalName(int sig) {
  switch (sig) {
    case SIGHUP:
      return "SIGHUP";
    case SIGINT:
      return "SIGINT";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGILL:
      return "SIGILL";
    case SIGTRAP:
      return "SIGTRAP";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGKILL:
      return "SIGKILL";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGUSR2:
      return "SIGUSR2";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGALRM:
      return "SIGALRM";
    case SIGTERM:
      return "SIGTERM";
    case SIGXCPU:
      return "SIGXCPU";
    case SIGXFSZ:
      return "SIGXFSZ";
    case SIGSYS:
      return "SIGSYS";
    default:
      return "signal " + std::to_string(sig);
  }
}

std::string ExitStatus::Describe() const {
  if (signaled) return "killed by " + SignalName(signal);
  return "exit code " + std::to_string(code);
}

namespace {

ExitStatus FromWaitStatus(int wstatus) {
  ExitStatus s;
  if (WIFSIGNALED(wstatus)) {
    s.signaled = true;
    s.signal = WTERMSIG(wstatus);
  } else if (WIFEXITED(wstatus)) {
    s.code = WEXITSTATUS(wstatus);
  }
  return s;
}

Error ErrnoError(const std::string& what, int err) {
  return MakeError(ErrorKind::kIo, what + ": " + strerror(err));
}

// argv[0] as posix_spawnp finds it: a name without '/' is looked up in PATH (this process's).
std::string ResolveProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = dirs.find(':', start);
    std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = std::move(dir);
    candidate += '/';
    candidate += name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (end == std::string::npos) return name;  // execve then fails with ENOENT, as posix_spawnp would
    start = end + 1;
  }
}

// What Spawn's posix_spawn does, with fork and exec so that the child can ask, before exec, to be
// killed with its parent (PR_SET_PDEATHSIG) or to dump no core (RLIMIT_CORE), which posix_spawn
// cannot set. Everything is prepared before fork: the parent may have other threads, so the child
// makes only async-signal-safe calls (plain system calls). Returns the child's pid, or the errno
// that stopped it (negated).
pid_t ForkExec(const SpawnOptions& options, const std::string& program, char* const argv[],
               char* const envp[]) {
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return -errno;
  // The child's end must not be one of the fds the child is given (dup2 would replace it).
  int lowest = STDERR_FILENO + 1;
  for (const auto& entry : options.fd_map) lowest = std::max(lowest, entry.first + 1);
  if (report[1] < lowest) {
    const int moved = ::fcntl(report[1], F_DUPFD_CLOEXEC, lowest);
    const int err = errno;
    ::close(report[1]);
    if (moved < 0) {
      ::close(report[0]);
      return -err;
    }
    report[1] = moved;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(report[0]);
    ::close(report[1]);
    return -err;
  }
  if (pid == 0) {
    const auto fail = [&](int err) {
      (void)!::write(report[1], &err, sizeof err);
      ::_exit(127);
    };
    if (options.new_process_group && ::setpgid(0, 0) != 0) fail(errno);
    if (options.die_with_parent) {
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(errno);
      if (::getppid() != parent) ::_exit(127);  // the parent died before the request took
    }
    if (!options.core_dump) {
      struct rlimit core {};
      if (::getrlimit(RLIMIT_CORE, &core) != 0) fail(errno);
      core.rlim_cur = 0;
      if (::setrlimit(RLIMIT_CORE, &core) != 0) fail(errno);
    }
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD, SIGHUP, SIGQUIT}) ::sigaction(sig, &dfl, nullptr);
    // Opened close-on-exec and duplicated onto `fd` (a duplicate is not close-on-exec): only `fd`
    // reaches the program, as with posix_spawn's addopen.
    const auto open_as = [&](const char* path, int flags, int fd) {
      const int opened = ::open(path, flags | O_CLOEXEC, 0644);
      if (opened < 0) fail(errno);
      if (opened == fd ? ::fcntl(fd, F_SETFD, 0) != 0 : ::dup2(opened, fd) < 0) fail(errno);
    };
    open_as("/dev/null", O_RDONLY, STDIN_FILENO);
    if (!options.stdout_path.empty())
      open_as(options.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, STDOUT_FILENO);
    if (!options.stderr_path.empty())
      open_as(options.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, STDERR_FILENO);
    for (const auto& [child_fd, parent_fd] : options.fd_map) {
      // dup2 onto itself keeps FD_CLOEXEC; posix_spawn's adddup2 clears it, and so does this.
      if (child_fd == parent_fd ? ::fcntl(child_fd, F_SETFD, 0) != 0 : ::dup2(parent_fd, child_fd) < 0)
        fail(errno);
    }
    sigset_t empty_mask;
    sigemptyset(&empty_mask);
    ::sigprocmask(SIG_SETMASK, &empty_mask, nullptr);
    ::execve(program.c_str(), argv, envp);
    fail(errno);
  }
  ::close(report[1]);
  if (options.new_process_group) (void)::setpgid(pid, pid);  // as the child does: no race on the group
  int err = 0;
  ssize_t n = 0;
  do {
    n = ::read(report[0], &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  ::close(report[0]);
  if (n == static_cast<ssize_t>(sizeof err)) {
    int wstatus = 0;
    while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    return -err;
  }
  return pid;
}

}  // namespace

Result<Subprocess> Subprocess::Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return MakeError(ErrorKind::kInvalidInput, "empty command");

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (options.new_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
  }
  posix_spawnattr_setflags(&attr, flags);
  sigset_t empty_mask, default_signals;
  sigemptyset(&empty_mask);
  posix_spawnattr_setsigmask(&attr, &empty_mask);
  sigemptyset(&default_signals);
  for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD, SIGHUP, SIGQUIT}) sigaddset(&default_signals, sig);
  posix_spawnattr_setsigdefault(&attr, &default_signals);

  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (!options.stdout_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, options.stdout_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  if (!options.stderr_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, options.stderr_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  for (const auto& [child_fd, parent_fd] : options.fd_map) {
    posix_spawn_file_actions_adddup2(&actions, parent_fd, child_fd);
  }

  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    bool overridden = false;
    for (const auto& [k, v] : options.extra_env) {
      if (entry.compare(0, k.size() + 1, k + "=") == 0) overridden = true;
    }
    for (const std::string& name : options.unset_env) {
      const bool prefix = !name.empty() && name.back() == '*';
      const std::string key = prefix ? name.substr(0, name.size() - 1) : name + "=";
      if (entry.compare(0, key.size(), key) == 0) overridden = true;
    }
    if (!overridden) env_strings.push_back(std::move(entry));
  }
  for (const auto& [k, v] : options.extra_env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = options.argv;
  std::vector<char*> argv;
  for (auto& s : argv_copy) argv.push_back(s.data());
  argv.push_back(nullptr);

  pid_t pid = -1;
  int rc = 0;
  if (options.die_with_parent || !options.core_dump) {
    pid = ForkExec(options, ResolveProgram(options.argv[0]), argv.data(), envp.data());
    if (pid < 0) rc = -pid;
  } else {
    rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return ErrnoError("cannot start '" + options.argv[0] + "'", rc);

  Subprocess p;
  p.pid_ = pid;
  p.own_group_ = options.new_process_group;
  return p;
}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : pid_(other.pid_), own_group_(other.own_group_), status_(other.status_) {
  other.pid_ = -1;
}

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0 && !status_) Terminate(0);
    pid_ = other.pid_;
    own_group_ = other.own_group_;
    status_ = other.status_;
    other.pid_ = -1;
  }
  return *this;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !status_) Terminate(0);
}

std::optional<ExitStatus> Subprocess::TryWait() {
  if (status_ || pid_ <= 0) return status_;
  int wstatus = 0;
  pid_t r = waitpid(pid_, &wstatus, WNOHANG);
  if (r == pid_) status_ = FromWaitStatus(wstatus);
  return status_;
}

ExitStatus Subprocess::Wait() {
  if (status_ || pid_ <= 0) return status_.value_or(ExitStatus{});
  int wstatus = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &wstatus, 0);
  } while (r < 0 && errno == EINTR);
  status_ = r == pid_ ? FromWaitStatus(wstatus) : ExitStatus{};
  return *status_;
}

void Subprocess::SignalGroup(int sig) {
  if (pid_ <= 0) return;
  // Signal the group even after the leader ended: its children may live on.
  if (own_group_) {
    ::kill(-pid_, sig);
  } else if (!status_) {
    ::kill(pid_, sig);
  }
}

ExitStatus Subprocess::Terminate(int grace_ms) {
  if (pid_ <= 0) return ExitStatus{};
  if (grace_ms > 0 && !TryWait()) {
    SignalGroup(SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
    while (!TryWait() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  SignalGroup(SIGKILL);
  return Wait();
}

Result<std::pair<int, int>> MakePipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe", errno);
  int out[2];
  for (int i = 0; i < 2; ++i) {
    out[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 10);
    ::close(fds[i]);
    if (out[i] < 0) return ErrnoError("fcntl(F_DUPFD_CLOEXEC)", errno);
  }
  return std::make_pair(out[0], out[1]);
}

std::string ExecutableDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace dlbench
