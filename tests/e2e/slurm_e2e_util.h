// Shared by the Slurm e2e tests (slurm_e2e_test.cc, slurm_group_e2e_test.cc,
// slurm_group_faults_e2e_test.cc): a real Slurm (Debian's slurm-wlm and munge), started by each
// test on this machine as ../shared/notes/slurm-on-one-host.md describes, but with everything in a
// temporary folder: its own munge key and socket, slurm.conf through SLURM_CONF, free ports for
// slurmctld and slurmd. Nothing in /etc is read or written. The variables are Slurm's own: the
// tests set none of them. Each test is skipped (with the reason) when not root or when Slurm or
// munge is not installed. Also the /proc look-ups the group tests use to find their tasks.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "e2e_util.h"

namespace dlbench::e2e {

inline constexpr const char* kSlurmctld = "/usr/sbin/slurmctld";
inline constexpr const char* kSlurmd = "/usr/sbin/slurmd";
inline constexpr const char* kMunged = "/usr/sbin/munged";
inline constexpr const char* kSrun = "/usr/bin/srun";
inline constexpr const char* kSinfo = "/usr/bin/sinfo";

// A TCP port nobody listens on now (bound to port 0 and released; another process could take it
// before slurmctld does, which would fail the start-up loudly, not silently).
inline int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

inline std::string ShortHostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  const std::string host(name);
  return host.substr(0, host.find('.'));
}

inline bool Alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

// Why the Slurm tests cannot run here (not root, or a Slurm or munge program missing), for
// GTEST_SKIP; nullopt when they can.
inline std::optional<std::string> WhySlurmCannotRun() {
  if (::geteuid() != 0) return "needs root: slurmd runs the job as SlurmUser root here";
  for (const char* exe : {kSlurmctld, kSlurmd, kMunged, kSrun, kSinfo}) {
    if (::access(exe, X_OK) != 0) {
      return std::string(exe) +
             " is not installed (apt-get install slurm-wlm munge: scripts/setup-debian.sh)";
    }
  }
  return std::nullopt;
}

// munged, slurmctld and slurmd of one test, stopped (by the PIDs in their pid files) when it ends.
class SlurmCluster {
 public:
  explicit SlurmCluster(const TempDir& dir) : dir_(dir) {}
  ~SlurmCluster() { Stop(); }

  // The environment every Slurm command of the test needs.
  std::vector<std::pair<std::string, std::string>> Env() const {
    return {{"SLURM_CONF", dir_ / "slurm.conf"}};
  }

  ::testing::AssertionResult Start() {
    namespace fs = std::filesystem;
    // munged refuses a key or a socket folder others may write or read.
    fs::permissions(dir_.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                     fs::perms::others_read | fs::perms::others_exec);
    const std::string munge = dir_ / "munge";
    fs::create_directories(munge);
    fs::permissions(munge, fs::perms::owner_all);
    for (const char* sub : {"state", "spool", "log"}) fs::create_directories(dir_ / sub);
    {
      std::ifstream random("/dev/urandom", std::ios::binary);
      std::string key(1024, '\0');
      random.read(key.data(), static_cast<std::streamsize>(key.size()));
      std::ofstream(munge + "/munge.key", std::ios::binary) << key;
    }
    fs::permissions(munge + "/munge.key", fs::perms::owner_read);
    auto m = RunCommand({kMunged, "--force", "--key-file=" + munge + "/munge.key",
                         "--socket=" + munge + "/socket", "--pid-file=" + munge + "/munged.pid",
                         "--log-file=" + munge + "/munged.log", "--seed-file=" + munge + "/seed"},
                        dir_);
    pid_files_.push_back(munge + "/munged.pid");
    if (m.exit_code != 0) return ::testing::AssertionFailure() << "munged: " << m.err;

    const std::string host = ShortHostName();
    const int ctld_port = FreePort(), d_port = FreePort();
    if (host.empty() || ctld_port == 0 || d_port == 0 || ctld_port == d_port) {
      return ::testing::AssertionFailure() << "no host name or free ports";
    }
    const std::string s = dir_.path().string();
    WriteText(dir_ / "slurm.conf", "ClusterName=dlbenchtest\nSlurmctldHost=" + host + "\nSlurmctldPort=" +
                                       std::to_string(ctld_port) + "\nSlurmdPort=" + std::to_string(d_port) +
                                       "\nSlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\n"
                                       "AuthInfo=socket=" +
                                       munge +
                                       "/socket\nCredType=cred/munge\n"
                                       "StateSaveLocation=" +
                                       s + "/state\nSlurmdSpoolDir=" + s +
                                       "/spool\n"
                                       "SlurmctldLogFile=" +
                                       s + "/log/ctld.log\nSlurmdLogFile=" + s +
                                       "/log/d.log\n"
                                       "SlurmctldPidFile=" +
                                       s + "/ctld.pid\nSlurmdPidFile=" + s +
                                       "/d.pid\n"
                                       "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                                       "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n"
                                       "MpiDefault=none\nReturnToService=2\n"
                                       "NodeName=" +
                                       host +
                                       " CPUs=2 State=UNKNOWN\n"
                                       "PartitionName=p Nodes=" +
                                       host + " Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n");
    for (const auto& [daemon, pid_file] :
         {std::pair{kSlurmctld, s + "/ctld.pid"}, std::pair{kSlurmd, s + "/d.pid"}}) {
      auto r = RunCommand({daemon}, dir_, Env());
      pid_files_.push_back(pid_file);
      if (r.exit_code != 0) return ::testing::AssertionFailure() << daemon << ": " << r.err << Logs();
    }
    // The node is idle once slurmd has registered with slurmctld.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < give_up) {
      auto r = RunCommand({kSinfo, "-h", "-o", "%t"}, dir_, Env());
      if (r.exit_code == 0 && r.out.find("idle") != std::string::npos) return ::testing::AssertionSuccess();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return ::testing::AssertionFailure() << "the node did not become idle in 30 s" << Logs();
  }

  // slurmd, slurmctld, munged: SIGTERM to all, up to 1 s, then SIGKILL to those left (slurmctld
  // took about 5 s to end on SIGTERM here; its state is in the temporary folder, thrown away).
  void Stop() {
    std::vector<pid_t> pids;
    for (auto it = pid_files_.rbegin(); it != pid_files_.rend(); ++it) {
      auto text = ReadFile(*it);
      if (!text.ok() || text->empty()) continue;
      const pid_t pid = static_cast<pid_t>(std::stol(*text));
      if (Alive(pid) && ::kill(pid, SIGTERM) == 0) pids.push_back(pid);
    }
    pid_files_.clear();
    const auto wait_for_all = [&pids](std::chrono::milliseconds limit) {
      const auto give_up = std::chrono::steady_clock::now() + limit;
      for (const pid_t pid : pids) {
        while (Alive(pid) && std::chrono::steady_clock::now() < give_up) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
    };
    wait_for_all(std::chrono::milliseconds(1000));
    for (const pid_t pid : pids) {
      if (Alive(pid)) ::kill(pid, SIGKILL);
    }
    wait_for_all(std::chrono::milliseconds(2000));
  }

  std::string Logs() const {
    std::string out;
    for (const char* log : {"log/ctld.log", "log/d.log"}) {
      auto text = ReadFile(dir_ / log);
      if (text.ok())
        out +=
            "\n--- " + std::string(log) + ":\n" + text->substr(text->size() > 3000 ? text->size() - 3000 : 0);
    }
    return out;
  }

 private:
  const TempDir& dir_;
  std::vector<std::string> pid_files_;
};

// The processes whose command line has `arg` among its arguments.
inline std::vector<pid_t> ProcessesWithArg(const std::string& arg) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto cmdline = ReadFile(entry.path().string() + "/cmdline");
    if (!cmdline.ok()) continue;
    std::string wanted(1, '\0');
    wanted += arg;
    wanted += '\0';
    if (cmdline->insert(0, 1, '\0').find(wanted) != std::string::npos)
      found.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return found;
}

// The children of `parent` named `comm`.
inline std::vector<pid_t> ChildrenNamed(pid_t parent, const std::string& comm) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto stat = ReadFile(entry.path().string() + "/stat");
    if (!stat.ok()) continue;
    const auto open = stat->find('('), close = stat->rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(stat->substr(close + 2));
    std::string state;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent && stat->substr(open + 1, close - open - 1) == comm)
      found.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return found;
}

// The first of the processes whose command line has `arg` among its arguments, waiting up to 30 s
// for one; -1 when none came.
inline pid_t WaitForProcessWithArg(const std::string& arg) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < give_up) {
    const std::vector<pid_t> found = ProcessesWithArg(arg);
    if (!found.empty()) return found.front();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

}  // namespace dlbench::e2e
