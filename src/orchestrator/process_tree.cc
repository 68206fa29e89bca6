#include "orchestrator/process_tree.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <set>
#include <string>

#include "common/clock.h"

namespace dlbench::orchestrator {
namespace {

struct ProcEntry {
  pid_t ppid = 0;
  char state = '?';
};

// /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses, so the fields
// are read after the last ')'.
bool ReadStat(pid_t pid, ProcEntry& out) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return false;
  char buf[1024];
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* close = std::strrchr(buf, ')');
  if (close == nullptr) return false;
  int ppid = 0;
  char state = '?';
  if (std::sscanf(close + 1, " %c %d", &state, &ppid) != 2) return false;
  out.ppid = static_cast<pid_t>(ppid);
  out.state = state;
  return true;
}

std::map<pid_t, ProcEntry> ReadProcesses() {
  std::map<pid_t, ProcEntry> procs;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return procs;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    ProcEntry entry;
    if (ReadStat(static_cast<pid_t>(pid), entry)) procs[static_cast<pid_t>(pid)] = entry;
  }
  closedir(dir);
  return procs;
}

std::vector<pid_t> DescendantsIn(const std::map<pid_t, ProcEntry>& procs, pid_t root) {
  std::multimap<pid_t, pid_t> children;
  for (const auto& [pid, e] : procs) children.emplace(e.ppid, pid);
  std::vector<pid_t> out;
  std::deque<pid_t> queue{root};
  std::set<pid_t> seen{root};
  while (!queue.empty()) {
    const pid_t p = queue.front();
    queue.pop_front();
    auto [begin, end] = children.equal_range(p);
    for (auto it = begin; it != end; ++it) {
      if (!seen.insert(it->second).second) continue;
      out.push_back(it->second);
      queue.push_back(it->second);
    }
  }
  return out;
}

}  // namespace

Status BecomeSubreaper() {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    return MakeError(ErrorKind::kIo, std::string("prctl(PR_SET_CHILD_SUBREAPER): ") + std::strerror(errno));
  }
  return Status::Ok();
}

std::vector<pid_t> Descendants(pid_t root) { return DescendantsIn(ReadProcesses(), root); }

bool HasChildProcesses() {
  siginfo_t info{};
  // WNOWAIT leaves a zombie to be reaped below; any error but ECHILD counts as "maybe".
  return ::waitid(P_ALL, 0, &info, WEXITED | WSTOPPED | WCONTINUED | WNOHANG | WNOWAIT) == 0 ||
         errno != ECHILD;
}

int KillLeftovers(pid_t pgid, int timeout_ms) {
  const pid_t self = getpid();
  const std::int64_t deadline = MonotonicNowNs() + std::int64_t{timeout_ms} * 1'000'000;
  std::set<pid_t> killed;
  for (;;) {
    if (!HasChildProcesses()) {  // no descendant: only the runner's group may be left
      if (pgid > 0) ::kill(-pgid, SIGKILL);
      break;
    }
    // Descendants first, so that a process counts as killed here, not as one the group kill
    // already turned into a zombie.
    const std::map<pid_t, ProcEntry> procs = ReadProcesses();
    const std::vector<pid_t> left = DescendantsIn(procs, self);
    for (pid_t pid : left) {
      if (procs.at(pid).state != 'Z' && ::kill(pid, SIGKILL) == 0) killed.insert(pid);
    }
    if (pgid > 0) ::kill(-pgid, SIGKILL);
    for (pid_t pid : left) {
      // Our own children (the subreaper adopted them) are reaped here, zombies included.
      if (procs.at(pid).ppid == self) (void)waitpid(pid, nullptr, WNOHANG);
    }
    if (left.empty() || MonotonicNowNs() >= deadline) break;
    const timespec pause{0, 1'000'000};
    nanosleep(&pause, nullptr);
  }
  return static_cast<int>(killed.size());
}

}  // namespace dlbench::orchestrator
