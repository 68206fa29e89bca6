// What a runner leaves behind is found and killed: a child in its group, and a grandchild that left
// the group with setsid() and whose parent exited (adopted by this process as a subreaper).
#include "orchestrator/process_tree.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace dlbench::orchestrator {
namespace {

bool Alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  // A zombie still answers kill(0): read its state.
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return false;
  char buf[512] = {};
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const char* close = std::strrchr(buf, ')');
  return n > 0 && close != nullptr && close[2] != 'Z';
}

TEST(ProcessTreeTest, ASetsidGrandchildWhoseParentExitedIsFoundAndKilled) {
  ASSERT_TRUE(BecomeSubreaper().ok());
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const pid_t runner = ::fork();
  ASSERT_GE(runner, 0);
  if (runner == 0) {
    ::setpgid(0, 0);
    const pid_t in_group = ::fork();
    if (in_group == 0) {
      for (;;) pause();
    }
    const pid_t escaped = ::fork();
    if (escaped == 0) {
      ::setsid();
      for (;;) pause();
    }
    const pid_t pids[2] = {in_group, escaped};
    (void)!::write(report[1], pids, sizeof pids);
    _exit(0);  // the runner exits; its children live on
  }
  pid_t pids[2] = {0, 0};
  ASSERT_EQ(::read(report[0], pids, sizeof pids), static_cast<ssize_t>(sizeof pids));
  ASSERT_EQ(::waitpid(runner, nullptr, 0), runner);
  // Reparented to this process (the subreaper): its descendants now.
  std::vector<pid_t> found;
  for (int i = 0; i < 200 && found.size() < 2; ++i) {
    found = Descendants(::getpid());
    usleep(5'000);
  }
  EXPECT_NE(std::find(found.begin(), found.end(), pids[0]), found.end());
  EXPECT_NE(std::find(found.begin(), found.end(), pids[1]), found.end());
  EXPECT_TRUE(Alive(pids[0]));
  EXPECT_TRUE(Alive(pids[1]));

  EXPECT_EQ(KillLeftovers(runner, 2000), 2);
  EXPECT_FALSE(Alive(pids[0]));
  EXPECT_FALSE(Alive(pids[1]));
  EXPECT_TRUE(Descendants(::getpid()).empty()) << "killed and reaped: no zombie left";
  ::close(report[0]);
  ::close(report[1]);
}

// KillLeftovers skips its /proc walk when this process has no child: the test of that must see a
// zombie, a stopped and a running child as children, and nothing once they are reaped.
TEST(ProcessTreeTest, HasChildProcessesSeesLiveStoppedAndZombieChildren) {
  ASSERT_TRUE(Descendants(::getpid()).empty());
  EXPECT_FALSE(HasChildProcesses());
  const pid_t running = ::fork();
  ASSERT_GE(running, 0);
  if (running == 0) {
    for (;;) pause();
  }
  EXPECT_TRUE(HasChildProcesses());
  ASSERT_EQ(::kill(running, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(running, &status, WUNTRACED), running);
  EXPECT_TRUE(HasChildProcesses()) << "a stopped child";
  const pid_t exited = ::fork();
  ASSERT_GE(exited, 0);
  if (exited == 0) _exit(0);
  ASSERT_EQ(::kill(running, SIGKILL), 0);
  ASSERT_EQ(::waitpid(running, nullptr, 0), running);
  // `exited` is a zombie until reaped; HasChildProcesses must not reap it (WNOWAIT).
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(HasChildProcesses()) << "a zombie child";
  ASSERT_EQ(::waitpid(exited, nullptr, 0), exited);
  EXPECT_FALSE(HasChildProcesses());
}

// A zombie child is a child: KillLeftovers takes the /proc path, reaps it and counts no kill.
TEST(ProcessTreeTest, AZombieChildIsReapedNotCountedAsKilled) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);  // now a zombie
  EXPECT_EQ(KillLeftovers(0, 2000), 0);
  EXPECT_FALSE(HasChildProcesses()) << "the zombie was reaped";
}

TEST(ProcessTreeTest, NothingLeftIsNothingKilled) {
  EXPECT_EQ(KillLeftovers(0, 100), 0);
  EXPECT_TRUE(Descendants(::getpid()).empty());
}

}  // namespace
}  // namespace dlbench::orchestrator
