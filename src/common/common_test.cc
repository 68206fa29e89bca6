#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "common/clock.h"
#include "common/error.h"
#include "common/files.h"
#include "common/subprocess.h"
#include "common/text.h"

namespace dlbench {
namespace {

TEST(ResultTest, HoldsValueOrError) {
  Result<int> v = 42;
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 42);
  Result<int> e = MakeError(ErrorKind::kNotFound, "run 7 not found");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(e.error().message, "run 7 not found");
  Status s = MakeError(ErrorKind::kIo, "disk");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(Status::Ok().ok());
}

TEST(ClockTest, MonotonicAdvancesAndSimulatedMovesOnlyWhenTold) {
  const auto a = MonotonicNowNs();
  const auto b = MonotonicNowNs();
  EXPECT_LE(a, b);
  SimulatedClock clock(1'000);
  EXPECT_EQ(clock.NowNs(), 1'000);
  clock.AdvanceNs(500);
  EXPECT_EQ(clock.NowNs(), 1'500);
  EXPECT_EQ(FormatUtc(0), "1970-01-01T00:00:00Z");
}

TEST(SubprocessTest, ReportsExitCodeAndSignal) {
  auto ok = Subprocess::Spawn({{"/bin/sh", "-c", "exit 3"}});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  auto st = ok->Wait();
  EXPECT_FALSE(st.signaled);
  EXPECT_EQ(st.code, 3);
  EXPECT_EQ(st.Describe(), "exit code 3");

  auto killed = Subprocess::Spawn({{"/bin/sh", "-c", "kill -SEGV $$"}});
  ASSERT_TRUE(killed.ok());
  auto ks = killed->Wait();
  EXPECT_TRUE(ks.signaled);
  EXPECT_EQ(ks.Describe(), "killed by SIGSEGV");
}

TEST(SubprocessTest, UnsetEnvRemovesNamesAndPrefixesButExtraEnvWins) {
  ASSERT_EQ(setenv("DLBENCH_TEST_RANK", "3", 1), 0);
  ASSERT_EQ(setenv("DLBENCH_TEST_SLURM_A", "x", 1), 0);
  ASSERT_EQ(setenv("DLBENCH_TEST_SLURM_B", "y", 1), 0);
  ASSERT_EQ(setenv("DLBENCH_TEST_RANKED", "kept", 1), 0);
  const std::string out = ::testing::TempDir() + "/unset_env.txt";
  SpawnOptions opts;
  opts.argv = {"/usr/bin/env"};
  opts.stdout_path = out;
  opts.unset_env = {"DLBENCH_TEST_RANK", "DLBENCH_TEST_SLURM_*", "DLBENCH_TEST_ONE"};
  opts.extra_env = {{"DLBENCH_TEST_ONE", "1"}};
  auto child = Subprocess::Spawn(opts);
  ASSERT_TRUE(child.ok()) << child.error().message;
  EXPECT_TRUE(child->Wait().success());
  std::ifstream in(out);
  const std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(env.find("DLBENCH_TEST_RANK=3"), std::string::npos) << env;
  EXPECT_EQ(env.find("DLBENCH_TEST_SLURM_"), std::string::npos) << env;
  EXPECT_NE(env.find("DLBENCH_TEST_RANKED=kept"), std::string::npos) << "a name is not a prefix";
  EXPECT_NE(env.find("DLBENCH_TEST_ONE=1"), std::string::npos) << "extra_env is set after";
  for (const char* name :
       {"DLBENCH_TEST_RANK", "DLBENCH_TEST_SLURM_A", "DLBENCH_TEST_SLURM_B", "DLBENCH_TEST_RANKED"})
    unsetenv(name);
}

TEST(SubprocessTest, TerminateKillsTheWholeGroup) {
  // The shell starts a grandchild; killing the group must end both.
  char tmpl[] = "/tmp/dlbench_pidXXXXXX";
  int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  auto p = Subprocess::Spawn({{"/bin/sh", "-c", std::string("sleep 60 & echo $! > ") + tmpl + "; wait"}});
  ASSERT_TRUE(p.ok());
  pid_t grandchild = 0;
  for (int i = 0; i < 200 && grandchild == 0; ++i) {
    usleep(10'000);
    std::ifstream in(tmpl);
    in >> grandchild;
  }
  ASSERT_GT(grandchild, 0);
  auto st = p->Terminate(100);
  EXPECT_TRUE(st.signaled);
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = ::kill(grandchild, 0) != 0;
    if (!gone) usleep(10'000);
  }
  EXPECT_TRUE(gone) << "grandchild " << grandchild << " survived the group kill";
  std::remove(tmpl);
}

TEST(SubprocessTest, MissingProgramIsAnErrorValue) {
  auto p = Subprocess::Spawn({{"/nonexistent/dlbench-runner"}});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind, ErrorKind::kIo);
  EXPECT_NE(p.error().message.find("/nonexistent/dlbench-runner"), std::string::npos);
}

// The fork-and-exec path of die_with_parent does what posix_spawn does: PATH lookup, stdout to a
// file, a mapped fd, the exit code, and a missing program as an error value.
TEST(SubprocessTest, DieWithParentSpawnsAsPosixSpawnDoes) {
  const std::string out = ::testing::TempDir() + "/die_with_parent.txt";
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  SpawnOptions opts;
  opts.argv = {"sh", "-c", "echo out; echo mapped >&5; exit 3"};
  opts.stdout_path = out;
  opts.fd_map = {{5, fds[1]}};
  opts.die_with_parent = true;
  auto child = Subprocess::Spawn(opts);
  ::close(fds[1]);
  ASSERT_TRUE(child.ok()) << child.error().message;
  const ExitStatus st = child->Wait();
  EXPECT_FALSE(st.signaled);
  EXPECT_EQ(st.code, 3);
  char buf[64] = {};
  EXPECT_EQ(::read(fds[0], buf, sizeof buf - 1), 7);
  EXPECT_STREQ(buf, "mapped\n");
  ::close(fds[0]);
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "out\n");
  // The program is given the same open fds as posix_spawn gives it: no more (the files opened
  // for it are close-on-exec once duplicated), no fewer.
  int cloexec[2];
  ASSERT_EQ(::pipe2(cloexec, O_CLOEXEC), 0);
  std::string listed[2];
  for (const bool die : {false, true}) {
    SpawnOptions ls;
    ls.argv = {"ls", "/proc/self/fd"};
    ls.stdout_path = out + ".fds";
    ls.stderr_path = "/dev/null";
    ls.fd_map = {{5, cloexec[1]}};
    ls.die_with_parent = die;
    auto p = Subprocess::Spawn(ls);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_TRUE(p->Wait().success());
    std::ifstream fds_in(out + ".fds");
    listed[die ? 1 : 0].assign(std::istreambuf_iterator<char>(fds_in), std::istreambuf_iterator<char>());
  }
  ::close(cloexec[0]);
  ::close(cloexec[1]);
  EXPECT_EQ(listed[1], listed[0]);
  EXPECT_NE(listed[1].find("\n5\n"), std::string::npos) << listed[1];
  opts = SpawnOptions{};
  opts.argv = {"/nonexistent/dlbench-runner"};
  opts.die_with_parent = true;
  auto missing = Subprocess::Spawn(opts);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("cannot start '/nonexistent/dlbench-runner': No such file"),
            std::string::npos)
      << missing.error().message;
}

// core_dump = false starts the child with RLIMIT_CORE's soft limit at 0 and its hard limit as it
// was; the default leaves both as this process has them. This process's soft limit is raised to
// its hard one for the test (a shell's default is often 0, which would hide the difference).
TEST(SubprocessTest, CoreDumpFalseZeroesTheChildsSoftCoreLimit) {
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_CORE, &saved), 0);
  if (saved.rlim_max == 0) GTEST_SKIP() << "the hard RLIMIT_CORE is 0 here: no difference to see";
  struct rlimit raised = saved;
  raised.rlim_cur = saved.rlim_max;
  ASSERT_EQ(::setrlimit(RLIMIT_CORE, &raised), 0);
  const std::string out = ::testing::TempDir() + "/core_limit.txt";
  auto limits_of_child = [&](bool core_dump) {
    SpawnOptions opts;
    opts.argv = {"sh", "-c", "ulimit -S -c; ulimit -H -c"};
    opts.stdout_path = out;
    opts.core_dump = core_dump;
    auto child = Subprocess::Spawn(opts);
    if (!child.ok()) return child.error().message;
    if (!child->Wait().success()) return std::string("the shell failed");
    std::ifstream in(out);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string hard =
      saved.rlim_max == RLIM_INFINITY ? "unlimited" : std::to_string(saved.rlim_max / 512);
  const std::string with_dump = limits_of_child(true);
  const std::string without = limits_of_child(false);
  ASSERT_EQ(::setrlimit(RLIMIT_CORE, &saved), 0);
  std::remove(out.c_str());
  EXPECT_EQ(with_dump, hard + "\n" + hard + "\n");
  EXPECT_EQ(without, "0\n" + hard + "\n");
}

// A process that spawns `sleep 60` (with or without die_with_parent) and is then killed with
// SIGKILL: whether the sleep is gone within wait_ms. The sleep is killed here if it lives on.
bool ChildDiesWithItsKilledParent(bool die_with_parent, int wait_ms) {
  int fds[2];
  if (::pipe(fds) != 0) return false;
  const pid_t parent = ::fork();
  if (parent == 0) {
    SpawnOptions opts;
    opts.argv = {"sleep", "60"};
    opts.die_with_parent = die_with_parent;
    auto child = Subprocess::Spawn(opts);
    const pid_t pid = child.ok() ? child->pid() : -1;
    (void)!::write(fds[1], &pid, sizeof pid);
    for (;;) ::pause();
  }
  ::close(fds[1]);
  pid_t child = -1;
  const bool read = ::read(fds[0], &child, sizeof child) == static_cast<ssize_t>(sizeof child);
  ::close(fds[0]);
  ::kill(parent, SIGKILL);
  ::waitpid(parent, nullptr, 0);
  if (!read || child <= 0) return false;
  // Orphaned, the child is reaped by init (or a subreaper): gone, or a zombie, counts as dead.
  const auto dead = [child] {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    return text.empty() || (close != std::string::npos && text.substr(close + 2, 1) == "Z");
  };
  for (int i = 0; i < wait_ms / 10 && !dead(); ++i) usleep(10'000);
  if (dead()) return true;
  ::kill(child, SIGKILL);
  return false;
}

TEST(SubprocessTest, DieWithParentKillsTheChildWhenItsParentIsKilled) {
  EXPECT_TRUE(ChildDiesWithItsKilledParent(true, 2000));
  EXPECT_FALSE(ChildDiesWithItsKilledParent(false, 300))
      << "without it the child lives on (the test can fail)";
}

TEST(FilesTest, TailLinesKeepsTheLastLines) {
  char tmpl[] = "/tmp/dlbench_tailXXXXXX";
  int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  const std::string text = "one\ntwo\nthree\nfour\n";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  EXPECT_EQ(TailLines(tmpl, 2), "three\nfour");
  EXPECT_EQ(TailLines(tmpl, 10), "one\ntwo\nthree\nfour");
  std::remove(tmpl);
  EXPECT_EQ(ReadFile("/nonexistent/x").error().kind, ErrorKind::kNotFound);
}

TEST(TextTest, MarkdownCellEscapesPipesOnly) {
  EXPECT_EQ(EscapeMarkdownCell("a|b|"), "a\\|b\\|");
  EXPECT_EQ(EscapeMarkdownCell("plain *text*"), "plain *text*");
  EXPECT_EQ(EscapeMarkdownCell(""), "");
}

}  // namespace
}  // namespace dlbench
