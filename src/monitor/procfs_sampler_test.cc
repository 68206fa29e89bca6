// procfs and RAPL: parsers on hand-written files, the samplers on a fake filesystem, and a smoke
// test against this machine's real /proc.
#include "monitor/procfs_sampler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "monitor/fake_procfs.h"

namespace dlbench::monitor {
namespace {

// A stat line with the fields the sampler reads set and everything else 0.
std::string StatLine(pid_t pid, const std::string& comm, pid_t ppid, std::uint64_t utime, std::uint64_t stime,
                     std::uint64_t cutime, std::uint64_t cstime, std::uint64_t rss_pages) {
  std::string line = std::to_string(pid) + " (" + comm + ") S " + std::to_string(ppid);
  for (int field = 5; field <= 52; ++field) {
    std::uint64_t v = 0;
    if (field == 14) v = utime;
    if (field == 15) v = stime;
    if (field == 16) v = cutime;
    if (field == 17) v = cstime;
    if (field == 24) v = rss_pages;
    line += " " + std::to_string(v);
  }
  return line + "\n";
}

std::map<std::string, std::vector<double>> ByName(const std::vector<SeriesPoint>& points) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& p : points) out[p.series].push_back(p.value);
  return out;
}

TEST(ProcParseTest, StatCountsFieldsFromTheLastParenthesis) {
  auto stat = ParseProcStat(StatLine(1234, "my (odd) proc) x", 77, 150, 50, 30, 20, 2560));
  ASSERT_TRUE(stat.ok()) << stat.error().message;
  EXPECT_EQ(stat->pid, 1234);
  EXPECT_EQ(stat->ppid, 77);
  EXPECT_EQ(stat->utime, 150u);
  EXPECT_EQ(stat->stime, 50u);
  EXPECT_EQ(stat->cutime, 30u);
  EXPECT_EQ(stat->cstime, 20u);
  EXPECT_EQ(stat->rss_pages, 2560u);
}

TEST(ProcParseTest, APidOrParentBeyondPidTIsAnError) {
  // Found by the procfs fuzz target: 42111111111114 was read into a pid_t, truncated.
  EXPECT_FALSE(ParseProcStat(StatLine(1, "x", 1, 0, 0, 0, 0, 0).replace(0, 1, "42111111111114")).ok());
  EXPECT_FALSE(ParseProcStat(StatLine(7, "x", 1, 0, 0, 0, 0, 0).replace(0, 1, "2147483648")).ok());
  EXPECT_EQ(ParseProcStat(StatLine(7, "x", 1, 0, 0, 0, 0, 0).replace(0, 1, "2147483647"))->pid, 2147483647);
  std::string parent = StatLine(7, "x", 1, 0, 0, 0, 0, 0);
  parent.replace(parent.find(") S 1 ") + 4, 1, "4294967297");
  EXPECT_FALSE(ParseProcStat(parent).ok()) << parent;
}

TEST(ProcParseTest, MalformedStatIsAnError) {
  for (const std::string text : {"", "12 no-parens S 1", "12 (x) S 1 2 3", "abc (x) S 1"}) {
    EXPECT_FALSE(ParseProcStat(text).ok()) << text;
  }
}

TEST(ProcParseTest, CpuTimesAndUtilisationByHand) {
  // busy = user + nice + system + irq + softirq; idle, iowait and steal are not busy.
  auto a = ParseCpuTimes("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4\n");
  auto b = ParseCpuTimes("cpu  160 0 70 880 60 5 5 0 0 0\n");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->busy, 150u);
  EXPECT_EQ(a->total, 1000u);
  EXPECT_EQ(b->busy, 240u);
  EXPECT_EQ(b->total, 1180u);
  // 90 busy of 180 elapsed ticks.
  EXPECT_DOUBLE_EQ(*CpuUtilPct(*a, *b), 50.0);
  EXPECT_FALSE(CpuUtilPct(*a, *a).has_value());
  EXPECT_FALSE(CpuUtilPct(*b, *a).has_value());
  EXPECT_FALSE(ParseCpuTimes("intr 1 2 3").ok());
  EXPECT_FALSE(ParseCpuTimes("cpu 1 2").ok());
  // Busy CPUs: 50% of a 4-CPU host is 2 cores (the cpuN lines are counted; "cpufreq" is not one).
  auto c = ParseCpuTimes("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1\ncpu1 1\ncpu2 1\ncpu3 1\ncpufreq 9\n");
  auto d = ParseCpuTimes("cpu  160 0 70 880 60 5 5 0 0 0\ncpu0 1\ncpu1 1\ncpu2 1\ncpu3 1\n");
  ASSERT_TRUE(c.ok() && d.ok());
  EXPECT_EQ(c->cpus, 4);
  EXPECT_DOUBLE_EQ(*CpuBusyCores(*c, *d), 2.0);
  EXPECT_FALSE(CpuBusyCores(*a, *b).has_value()) << "b has no per-CPU lines: the count is unknown";
}

TEST(ProcParseTest, StealIsApartFromBusyAndAShareOfAllTicks) {
  // user nice system idle iowait irq softirq steal guest guest_nice
  auto a = ParseCpuTimes("cpu  100 0 50 800 50 0 0 0 0 0\n");
  auto b = ParseCpuTimes("cpu  150 0 60 860 50 0 0 30 7 0\n");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(b->has_steal);
  EXPECT_EQ(b->steal, 30u);
  EXPECT_EQ(b->busy, 210u) << "steal is not this machine's work";
  EXPECT_EQ(b->total, 1150u) << "guest time is inside user's already";
  // 30 stolen of 150 elapsed ticks; 60 busy of 150.
  EXPECT_DOUBLE_EQ(*CpuStealPct(*a, *b), 20.0);
  EXPECT_DOUBLE_EQ(*CpuUtilPct(*a, *b), 40.0);
  // A kernel before 2.6.11 has no steal field: no figure rather than a zero.
  auto old_a = ParseCpuTimes("cpu  100 0 50 800 50 0 0\n");
  auto old_b = ParseCpuTimes("cpu  150 0 60 860 50 0 0\n");
  ASSERT_TRUE(old_a.ok() && old_b.ok());
  EXPECT_FALSE(old_b->has_steal);
  EXPECT_FALSE(CpuStealPct(*old_a, *old_b).has_value());
  EXPECT_FALSE(CpuStealPct(*b, *a).has_value()) << "counters going backwards";
}

TEST(ProcParseTest, MemInfoInKibibytes) {
  auto m = ParseMemInfo("MemTotal:       16384 kB\nMemFree:  100 kB\nMemAvailable:    4096 kB\n");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->total_bytes, 16384u * 1024);
  EXPECT_EQ(m->available_bytes, 4096u * 1024);
  EXPECT_FALSE(ParseMemInfo("MemTotal: 1 kB\n").ok());
}

// The runner 100 with threads 100 and 101; child 200 (of thread 101), grandchild 300; 400 unrelated.
std::shared_ptr<FakeProcFs> TreeFs(bool with_children_files) {
  auto fs = std::make_shared<FakeProcFs>();
  fs->Set("/proc/100/stat", StatLine(100, "runner", 1, 100, 50, 10, 0, 1000));
  fs->Set("/proc/200/stat", StatLine(200, "worker", 100, 40, 10, 0, 0, 500));
  fs->Set("/proc/300/stat", StatLine(300, "decoder", 200, 20, 0, 0, 0, 250));
  fs->Set("/proc/400/stat", StatLine(400, "other", 1, 999, 999, 0, 0, 99999));
  for (const char* task : {"/proc/100/task/100", "/proc/100/task/101", "/proc/200/task/200",
                           "/proc/300/task/300", "/proc/400/task/400"}) {
    fs->Set(std::string(task) + "/stat", "");
  }
  if (with_children_files) {
    fs->Set("/proc/100/task/100/children", "");
    fs->Set("/proc/100/task/101/children", "200 ");
    fs->Set("/proc/200/task/200/children", "300");
    fs->Set("/proc/300/task/300/children", "");
    fs->Set("/proc/400/task/400/children", "");
  }
  fs->Set("/proc/stat", "cpu  100 0 50 800 50 0 0 0 0 0\n");
  fs->Set("/proc/meminfo", "MemTotal: 1000 kB\nMemAvailable: 250 kB\n");
  return fs;
}

TEST(ProcessTreeTest, FollowsEveryThreadsChildrenFile) {
  auto fs = TreeFs(true);
  auto tree = ProcessTree(*fs, 100);
  std::sort(tree.begin(), tree.end());
  EXPECT_EQ(tree, (std::vector<pid_t>{100, 200, 300}));
}

TEST(ProcessTreeTest, FallsBackToScanningParentsWithoutChildrenFiles) {
  auto fs = TreeFs(false);
  auto tree = ProcessTree(*fs, 100);
  std::sort(tree.begin(), tree.end());
  EXPECT_EQ(tree, (std::vector<pid_t>{100, 200, 300}));
}

TEST(ProcessTreeTest, AbsentRootGivesAnEmptyTree) {
  auto fs = TreeFs(true);
  EXPECT_TRUE(ProcessTree(*fs, 555).empty());
  EXPECT_TRUE(ProcessTree(*fs, 0).empty());
}

TEST(ProcessTreeTest, IsInTreeWalksParents) {
  auto fs = TreeFs(true);
  EXPECT_TRUE(IsInTree(*fs, 300, 100));
  EXPECT_TRUE(IsInTree(*fs, 100, 100));
  EXPECT_FALSE(IsInTree(*fs, 400, 100));
  EXPECT_FALSE(IsInTree(*fs, 999, 100));
}

TEST(ProcFsSamplerTest, SamplesTreeAndHostWithUnits) {
  auto fs = TreeFs(true);
  ProcFsSampler sampler(fs, /*ticks_per_s=*/100, /*page_bytes=*/4096);
  ASSERT_EQ(sampler.state(), "ok");
  sampler.SetTargetPid(100);
  std::vector<SeriesPoint> first;
  sampler.Sample(10, first);
  auto a = ByName(first);
  // No previous /proc/stat reading yet: no utilisation rather than a since-boot average.
  EXPECT_EQ(a.count("host.cpu_util_pct"), 0u);
  // (100+50+10) + (40+10) + 20 = 230 ticks at 100 Hz; 1750 pages of 4 KiB. Process 400 excluded.
  ASSERT_EQ(a["proc.cpu_s"].size(), 1u);
  EXPECT_DOUBLE_EQ(a["proc.cpu_s"][0], 2.30);
  EXPECT_DOUBLE_EQ(a["proc.rss_bytes"][0], 1750.0 * 4096);
  EXPECT_DOUBLE_EQ(a["host.mem_used_bytes"][0], 750.0 * 1024);

  fs->Set("/proc/stat", "cpu  160 0 70 880 60 5 5 0 0 0\n");
  std::vector<SeriesPoint> second;
  sampler.Sample(20, second);
  auto b = ByName(second);
  ASSERT_EQ(b["host.cpu_util_pct"].size(), 1u);
  EXPECT_DOUBLE_EQ(b["host.cpu_util_pct"][0], 50.0);
  for (const auto& p : second) EXPECT_EQ(p.t_ns, 20);
}

TEST(ProcFsSamplerTest, RunqueueWaitIsSummedOverEveryThreadOfTheTree) {
  auto fs = TreeFs(true);
  fs->Set("/proc/100/task/100/schedstat", "5000000000 250000000 40\n");
  fs->Set("/proc/100/task/101/schedstat", "1000000000 50000000 7\n");  // a second thread of 100
  fs->Set("/proc/200/task/200/schedstat", "2000000000 100000000 9\n");
  fs->Set("/proc/300/task/300/schedstat", "garbage\n");                 // skipped, not fatal
  fs->Set("/proc/400/task/400/schedstat", "9000000000 900000000 1\n");  // not in the tree
  ProcFsSampler sampler(fs, 100, 4096);
  sampler.SetTargetPid(100);
  std::vector<SeriesPoint> out;
  sampler.Sample(1, out);
  auto m = ByName(out);
  ASSERT_EQ(m["proc.runqueue_wait_s"].size(), 1u);
  EXPECT_DOUBLE_EQ(m["proc.runqueue_wait_s"][0], 0.4);
}

TEST(ProcFsSamplerTest, TheTreeIsFoundAgainEveryNthRoundAndAfterAProcessEnds) {
  auto fs = TreeFs(true);
  ProcFsSampler sampler(fs, /*ticks_per_s=*/100, /*page_bytes=*/4096, /*tree_every_n_samples=*/3);
  sampler.SetTargetPid(100);
  auto cpu_s = [&](std::int64_t t) {
    std::vector<SeriesPoint> out;
    sampler.Sample(t, out);
    auto m = ByName(out);
    return m["proc.cpu_s"].empty() ? -1.0 : m["proc.cpu_s"][0];
  };
  EXPECT_DOUBLE_EQ(cpu_s(1), 2.30);  // round 1 finds 100, 200, 300 (230 ticks)
  // A new child of 300 (20 ticks): rounds 2 and 3 read only the tree they know, round 4 finds it.
  fs->Set("/proc/500/stat", StatLine(500, "late", 300, 15, 5, 0, 0, 10));
  fs->Set("/proc/500/task/500/stat", "");
  fs->Set("/proc/500/task/500/children", "");
  fs->Set("/proc/300/task/300/children", "500");
  EXPECT_DOUBLE_EQ(cpu_s(2), 2.30);
  EXPECT_DOUBLE_EQ(cpu_s(3), 2.30);
  EXPECT_DOUBLE_EQ(cpu_s(4), 2.50);
  // 500 ends: the round that misses it counts the rest, the next finds the tree again (without it).
  fs->Remove("/proc/500/stat");
  fs->Remove("/proc/500/task/500/stat");
  fs->Remove("/proc/500/task/500/children");
  fs->Set("/proc/300/task/300/children", "");
  fs->Set("/proc/600/stat", StatLine(600, "later", 100, 7, 3, 0, 0, 10));
  fs->Set("/proc/600/task/600/stat", "");
  fs->Set("/proc/600/task/600/children", "");
  fs->Set("/proc/100/task/100/children", "600");
  EXPECT_DOUBLE_EQ(cpu_s(5), 2.30);
  EXPECT_DOUBLE_EQ(cpu_s(6), 2.40);  // found again at once: 100, 200, 300 and 600
}

TEST(ProcFsSamplerTest, EveryRoundFindsTheTreeWithNOfOne) {
  auto fs = TreeFs(true);
  ProcFsSampler sampler(fs, 100, 4096, /*tree_every_n_samples=*/1);
  sampler.SetTargetPid(100);
  std::vector<SeriesPoint> out;
  sampler.Sample(1, out);
  fs->Set("/proc/500/stat", StatLine(500, "late", 300, 15, 5, 0, 0, 10));
  fs->Set("/proc/500/task/500/stat", "");
  fs->Set("/proc/300/task/300/children", "500");
  out.clear();
  sampler.Sample(2, out);
  EXPECT_DOUBLE_EQ(ByName(out)["proc.cpu_s"][0], 2.50);
  EXPECT_EQ(sampler.Describe()["tree_every_n_samples"], 1);
}

TEST(ProcFsSamplerTest, SchedStatParser) {
  EXPECT_EQ(*ParseSchedStatWaitNs("23203761559 53376947687 6419\n"), 53376947687u);
  EXPECT_FALSE(ParseSchedStatWaitNs("").ok());
  EXPECT_FALSE(ParseSchedStatWaitNs("17").ok());
  EXPECT_FALSE(ParseSchedStatWaitNs("x y z").ok());
}

TEST(ProcFsSamplerTest, NoTargetMeansHostSeriesOnly) {
  auto fs = TreeFs(true);
  ProcFsSampler sampler(fs, 100, 4096);
  sampler.SetTargetPid(0);
  std::vector<SeriesPoint> out;
  sampler.Sample(1, out);
  auto m = ByName(out);
  EXPECT_EQ(m.count("proc.cpu_s"), 0u);
  EXPECT_EQ(m.count("proc.rss_bytes"), 0u);
  EXPECT_EQ(m.count("host.mem_used_bytes"), 1u);
}

TEST(ProcFsSamplerTest, TargetThatEndedProducesNoProcSeries) {
  auto fs = TreeFs(true);
  ProcFsSampler sampler(fs, 100, 4096);
  sampler.SetTargetPid(777);
  std::vector<SeriesPoint> out;
  sampler.Sample(1, out);
  EXPECT_EQ(ByName(out).count("proc.rss_bytes"), 0u);
}

TEST(ProcFsSamplerTest, UnreadableProcStatIsUnsupported) {
  auto fs = std::make_shared<FakeProcFs>();
  ProcFsSampler sampler(fs, 100, 4096);
  EXPECT_EQ(sampler.state().rfind("unsupported: ", 0), 0u) << sampler.state();
  std::vector<SeriesPoint> out;
  sampler.Sample(1, out);
  EXPECT_TRUE(out.empty());
}

std::shared_ptr<FakeProcFs> RaplFs() {
  auto fs = std::make_shared<FakeProcFs>();
  const std::string root = "/sys/class/powercap";
  fs->Set(root + "/intel-rapl:0/name", "package-0\n");
  fs->Set(root + "/intel-rapl:0/energy_uj", "1000000\n");
  fs->Set(root + "/intel-rapl:0/max_energy_range_uj", "262143328850\n");
  fs->Set(root + "/intel-rapl:1/name", "package-1\n");
  fs->Set(root + "/intel-rapl:1/energy_uj", "5000000\n");
  fs->Set(root + "/intel-rapl:1/max_energy_range_uj", "10000000\n");
  // A sub-domain: already inside package 0's counter, must not count twice.
  fs->Set(root + "/intel-rapl:0:0/name", "core\n");
  fs->Set(root + "/intel-rapl:0:0/energy_uj", "777000000\n");
  return fs;
}

TEST(RaplSamplerTest, SumsPackagesAndUnwrapsTheCounter) {
  auto fs = RaplFs();
  RaplSampler sampler(fs);
  ASSERT_EQ(sampler.state(), "ok");
  EXPECT_EQ(sampler.Describe()["domains"].size(), 2u);
  std::vector<SeriesPoint> out;
  sampler.Sample(1, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].series, "host.rapl_energy_j");
  EXPECT_DOUBLE_EQ(out[0].value, 0.0);
  // Package 0: +2.5 J. Package 1 wraps at 10 J: 5 J -> 9.5 J -> (wrap) 1 J = 4.5 + 1.5 J.
  fs->Set("/sys/class/powercap/intel-rapl:0/energy_uj", "3500000");
  fs->Set("/sys/class/powercap/intel-rapl:1/energy_uj", "9500000");
  sampler.Sample(2, out);
  fs->Set("/sys/class/powercap/intel-rapl:1/energy_uj", "1000000");
  sampler.Sample(3, out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_DOUBLE_EQ(out[1].value, 2.5 + 4.5);
  EXPECT_DOUBLE_EQ(out[2].value, 2.5 + 4.5 + 1.5);
}

TEST(RaplSamplerTest, UnreadableCounterIsUnsupportedWithTheReason) {
  auto fs = std::make_shared<FakeProcFs>();
  fs->Set("/sys/class/powercap/intel-rapl:0/name", "package-0");
  fs->SetUnreadable("/sys/class/powercap/intel-rapl:0/energy_uj");
  RaplSampler sampler(fs);
  EXPECT_NE(sampler.state().find("unsupported: "), std::string::npos);
  EXPECT_NE(sampler.state().find("root only"), std::string::npos) << sampler.state();
  std::vector<SeriesPoint> out;
  sampler.Sample(1, out);
  EXPECT_TRUE(out.empty());
}

TEST(RaplSamplerTest, MissingPowercapIsUnsupported) {
  auto fs = std::make_shared<FakeProcFs>();
  RaplSampler sampler(fs);
  EXPECT_EQ(sampler.state(), "unsupported: no RAPL package domain under /sys/class/powercap");
}

TEST(RealProcFsTest, ReadsThisProcessAndFindsItInItsOwnTree) {
  auto fs = std::make_shared<RealProcFs>();
  auto text = fs->Read("/proc/self/stat");
  ASSERT_TRUE(text.ok()) << text.error().message;
  auto stat = ParseProcStat(*text);
  ASSERT_TRUE(stat.ok());
  EXPECT_EQ(stat->pid, getpid());
  auto tree = ProcessTree(*fs, getpid());
  ASSERT_FALSE(tree.empty());
  EXPECT_EQ(tree.front(), getpid());
  EXPECT_EQ(fs->Read("/proc/does-not-exist").error().kind, ErrorKind::kNotFound);
  ProcFsSampler sampler(fs);
  sampler.SetTargetPid(getpid());
  std::vector<SeriesPoint> out;
  sampler.Sample(1, out);
  auto m = ByName(out);
  ASSERT_EQ(m["proc.rss_bytes"].size(), 1u);
  EXPECT_GT(m["proc.rss_bytes"][0], 0);
}

}  // namespace
}  // namespace dlbench::monitor
