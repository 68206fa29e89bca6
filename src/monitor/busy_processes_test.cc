#include "monitor/busy_processes.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "monitor/fake_procfs.h"

namespace dlbench::monitor {
namespace {

// A /proc/<pid>/stat line: pid (comm) state ppid ... utime(14) stime(15) ...
std::string Stat(pid_t pid, const std::string& comm, pid_t ppid, std::uint64_t utime, std::uint64_t stime) {
  std::string line = std::to_string(pid) + " (" + comm + ") S " + std::to_string(ppid);
  for (int field = 5; field <= 13; ++field) line += " 0";
  line += " " + std::to_string(utime) + " " + std::to_string(stime);
  for (int field = 16; field <= 52; ++field) line += " 0";
  return line + "\n";
}

TEST(BusyProcessesTest, SnapshotReadsNamesWithSpacesAndParentheses) {
  FakeProcFs fs;
  fs.Set("/proc/10/stat", Stat(10, "tmux: server", 1, 5, 2));
  fs.Set("/proc/11/stat", Stat(11, "a) b", 10, 1, 1));
  fs.Set("/proc/self/stat", Stat(99, "x", 1, 0, 0));  // not a number: skipped
  auto snap = SnapshotProcesses(fs);
  std::sort(snap.begin(), snap.end(), [](const ProcessCpu& a, const ProcessCpu& b) { return a.pid < b.pid; });
  ASSERT_EQ(snap.size(), 2u);
  EXPECT_EQ(snap[0].comm, "tmux: server");
  EXPECT_EQ(snap[0].ticks, 7u);
  EXPECT_EQ(snap[1].comm, "a) b");
  EXPECT_EQ(snap[1].ppid, 10);
}

// Hand-computed at 100 ticks/s: the compiler used 250 ticks (2.5 s), python 40 (0.4 s); the
// driver (pid 500), its runner (501) and the runner's worker (502) are ours; a process that
// started in between counts from zero; a pid reused by another name too; below the minimum, not
// named.
TEST(BusyProcessesTest, NamesTheBusiestOthersOutsideTheDriversTree) {
  const std::vector<ProcessCpu> before = {
      {1, 0, "init", 100},       {500, 1, "dlbench", 10}, {501, 500, "dlbench-torch", 10},
      {300, 1, "cc1plus", 1000}, {301, 1, "python3", 60}, {302, 1, "old", 5},
      {303, 1, "idle", 50}};
  const std::vector<ProcessCpu> after = {
      {1, 0, "init", 101},       {500, 1, "dlbench", 20},   {501, 500, "dlbench-torch", 900},
      {502, 501, "worker", 700}, {300, 1, "cc1plus", 1250}, {301, 1, "python3", 100},
      {302, 1, "new", 30},       {303, 1, "idle", 50},      {400, 1, "make", 20}};
  const auto busiest = BusiestOthers(before, after, 500, 100, 3, 0.1);
  ASSERT_EQ(busiest.size(), 3u);
  EXPECT_EQ(busiest[0].comm, "cc1plus");
  EXPECT_DOUBLE_EQ(busiest[0].cpu_s, 2.5);
  EXPECT_EQ(busiest[1].comm, "python3");
  EXPECT_DOUBLE_EQ(busiest[1].cpu_s, 0.4);
  EXPECT_EQ(busiest[2].comm, "new") << "a reused pid counts from zero: 0.3 s";
  EXPECT_DOUBLE_EQ(busiest[2].cpu_s, 0.3);
  EXPECT_EQ(DescribeBusiest(busiest),
            "cc1plus (pid 300) 2.5 CPU-s, python3 (pid 301) 0.4 CPU-s, new (pid 302) 0.3 CPU-s");
  EXPECT_EQ(BusiestOthers(before, after, 500, 100, 10, 0.1).size(), 4u) << "make's 0.2 s is the fourth";
  EXPECT_TRUE(BusiestOthers(before, after, 500, 0, 3, 0.1).empty());
  EXPECT_TRUE(BusiestOthers({}, {}, 500, 100, 3, 0.1).empty());
  EXPECT_EQ(DescribeBusiest({}), "");
}

TEST(BusyProcessesTest, ThisMachineListsThisProcess) {
  const auto snap = SnapshotProcesses(RealProcFs());
  bool found = false;
  for (const auto& p : snap) found |= p.pid == ::getpid();
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace dlbench::monitor
