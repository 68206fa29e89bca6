// cgroup v2 for a cpu cell's memory_cap (orchestrator/cgroup_v2.h, memory_cap.h) on a fake cgroup
// tree in a temporary folder: which mechanism applies and why, recorded in extras.memory_cap; the
// files a cell's cgroup gets; an OOM kill turned into `oom` with the numbers. The development
// machine binds the memory controller to cgroup v1, so no real cgroup v2 memory.max is used here.
#include "orchestrator/cgroup_v2.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/files.h"
#include "common/subprocess.h"
#include "common/text.h"
#include "orchestrator/memory_cap.h"

namespace dlbench::orchestrator {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::string Read(const fs::path& path) {
  auto text = ReadFile(path.string());
  return text.ok() ? *text : "<" + text.error().message + ">";
}

// A fake tree: `root` stands for /sys/fs/cgroup, mounted as cgroup2; this process in `own`.
class FakeCgroups : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dlbench_cgroup_v2_test." + std::to_string(::getpid()));
    fs::remove_all(dir_);
    root_ = dir_ / "cgroup";
    fs::create_directories(root_);
    sources_.mounts = (dir_ / "mounts").string();
    sources_.self_cgroup = (dir_ / "self_cgroup").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // /proc/self/mounts with the fake root as the cgroup2 mount, and optionally a v1 memory hierarchy.
  void Mounts(bool v2, bool v1_memory) {
    std::string text = "proc /proc proc rw,nosuid 0 0\n";
    if (v2) text += "cgroup2 " + root_.string() + " cgroup2 rw,relatime 0 0\n";
    if (v1_memory) text += "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n";
    Write(sources_.mounts, text);
  }
  // A cgroup directory with its controllers and the controllers its children get.
  fs::path Cgroup(const std::string& rel, const std::string& controllers, const std::string& subtree) {
    fs::path p = rel.empty() ? root_ : root_ / rel;
    Write(p / "cgroup.controllers", controllers + "\n");
    Write(p / "cgroup.subtree_control", subtree + "\n");
    return p;
  }

  fs::path dir_, root_;
  CgroupSources sources_;
};

TEST_F(FakeCgroups, NoCgroup2MountIsTheReason) {
  Mounts(false, true);
  const CgroupParent p = FindCgroupParent(sources_);
  EXPECT_TRUE(p.path.empty());
  EXPECT_EQ(p.why_not, "no cgroup2 file system is mounted (" + sources_.mounts + ")");
}

// This development machine's layout: cgroup2 mounted, but `memory` bound to the v1 hierarchy, so
// the v2 root offers only hugetlb.
TEST_F(FakeCgroups, AMemoryControllerBoundToV1IsNamed) {
  Mounts(true, true);
  Write(sources_.self_cgroup, "4:memory:/process_api/x\n0::/\n");
  Cgroup("", "hugetlb", "");
  const CgroupParent p = FindCgroupParent(sources_);
  EXPECT_TRUE(p.path.empty());
  EXPECT_EQ(p.source, "this process's cgroup");
  EXPECT_EQ(p.why_not, "the memory controller is not available in " + root_.string() +
                           " (cgroup.controllers: 'hugetlb'); it is bound to the cgroup v1 hierarchy at "
                           "/sys/fs/cgroup/memory, and a v1 controller cannot join v2");
}

TEST_F(FakeCgroups, ANonRootProcessCgroupWithoutMemoryForItsChildrenIsRefusedWithTheRule) {
  Mounts(true, false);
  Write(sources_.self_cgroup, "0::/user.slice/session-2.scope\n");
  Cgroup("user.slice/session-2.scope", "cpu memory pids", "");
  // The kernel refuses "+memory" in a cgroup with processes (EBUSY); a file that is a directory
  // stands in for the refusal here.
  fs::remove(root_ / "user.slice/session-2.scope/cgroup.subtree_control");
  fs::create_directories(root_ / "user.slice/session-2.scope/cgroup.subtree_control");
  const CgroupParent p = FindCgroupParent(sources_);
  EXPECT_TRUE(p.path.empty());
  EXPECT_NE(p.why_not.find("no-internal-process rule; run dlbench in a delegated cgroup of its own"),
            std::string::npos)
      << p.why_not;
  EXPECT_NE(
      p.why_not.find("`systemd-run --user --scope -p Delegate=yes env DLBENCH_CGROUP_PARENT=self dlbench "
                     "run ...`"),
      std::string::npos)
      << p.why_not;
}

// `plan` writes nothing: a process cgroup that holds processes is refused with their pids and the
// rule, before any write; an empty configured parent is usable, and what a run will still write is
// said, not done.
TEST_F(FakeCgroups, ReadOnlyDetectionPredictsTheRuleAndWritesNothing) {
  Mounts(true, false);
  Write(sources_.self_cgroup, "0::/user.slice/session-2.scope\n");
  const fs::path own = Cgroup("user.slice/session-2.scope", "cpu memory pids", "");
  Write(own / "cgroup.procs", "1234\n" + std::to_string(::getpid()) + "\n");
  CgroupParent p = FindCgroupParent(sources_, CgroupCheck::kReadOnly);
  EXPECT_TRUE(p.path.empty());
  EXPECT_EQ(p.why_not.rfind("cannot give " + own.string() +
                                "'s children the memory controller: it holds processes 1234, " +
                                std::to_string(::getpid()) +
                                " (a cgroup that holds processes cannot: cgroup v2's "
                                "no-internal-process rule; run dlbench in a delegated cgroup of its own",
                            0),
            0u)
      << p.why_not;
  EXPECT_EQ(Read(own / "cgroup.subtree_control"), "\n") << "plan writes nothing";

  const fs::path parent = Cgroup("dlbench.slice", "cpu memory", "");
  Write(parent / "cgroup.procs", "");
  sources_.parent = parent.string();
  p = FindCgroupParent(sources_, CgroupCheck::kReadOnly);
  EXPECT_EQ(p.why_not, "");
  EXPECT_EQ(p.path, parent.string());
  EXPECT_EQ(p.to_do, "dlbench writes +memory to " + parent.string() + "/cgroup.subtree_control");
  EXPECT_EQ(Read(parent / "cgroup.subtree_control"), "\n") << "plan writes nothing";
}

// DLBENCH_CGROUP_PARENT=self (the opt-in): dlbench's own cgroup serves once dlbench and the
// runner being capped have moved into its leaf dlbench-<pid>; a later cell finds dlbench in the
// leaf (as /proc/self/cgroup then says) and uses the leaf's parent without moving again. `plan`
// predicts it: usable when dlbench is the cgroup's only process, refused with the others' pids.
TEST_F(FakeCgroups, SelfMovesDlbenchAndTheRunnerIntoALeafAndUsesItsOwnCgroup) {
  Mounts(true, false);
  Write(sources_.self_cgroup, "0::/user.slice/run-7.scope\n");
  const fs::path scope = Cgroup("user.slice/run-7.scope", "cpu memory pids", "");
  const std::string me = std::to_string(::getpid());
  const fs::path leaf = scope / ("dlbench-" + me);
  sources_.parent = "self";

  Write(scope / "cgroup.procs", me + "\n4242\n");
  CgroupParent p = FindCgroupParent(sources_, CgroupCheck::kReadOnly);
  EXPECT_TRUE(p.path.empty());
  EXPECT_NE(p.why_not.find("it holds process 4242 (a cgroup that holds processes cannot"), std::string::npos)
      << p.why_not;
  EXPECT_NE(p.why_not.find("DLBENCH_CGROUP_PARENT=self moves only dlbench and the runner"), std::string::npos)
      << p.why_not;
  Write(scope / "cgroup.procs", me + "\n");
  p = FindCgroupParent(sources_, CgroupCheck::kReadOnly);
  EXPECT_EQ(p.why_not, "");
  EXPECT_EQ(p.path, scope.string());
  EXPECT_EQ(p.source, "DLBENCH_CGROUP_PARENT=self");
  EXPECT_EQ(p.to_do, "dlbench moves itself into " + leaf.string() + " and writes +memory to " +
                         scope.string() + "/cgroup.subtree_control");
  EXPECT_FALSE(fs::exists(leaf)) << "plan makes no leaf";

  // A run: the leaf is made, dlbench and then the runner (pid 4343) written to its cgroup.procs
  // (one pid a write, as the kernel takes them), and the scope's children get memory.
  p = FindCgroupParent(sources_, CgroupCheck::kEnable, 4343);
  EXPECT_EQ(p.why_not, "");
  EXPECT_EQ(p.path, scope.string());
  EXPECT_TRUE(fs::is_directory(leaf));
  EXPECT_EQ(Read(leaf / "cgroup.procs"), "4343");
  EXPECT_EQ(Read(scope / "cgroup.subtree_control"), "+memory");

  // The next cell: /proc/self/cgroup names the leaf now; its parent is used, nothing moves again.
  Write(sources_.self_cgroup, "0::/user.slice/run-7.scope/dlbench-" + me + "\n");
  Write(scope / "cgroup.subtree_control", "memory\n");
  fs::remove(leaf / "cgroup.procs");
  p = FindCgroupParent(sources_, CgroupCheck::kEnable, 4444);
  EXPECT_EQ(p.why_not, "");
  EXPECT_EQ(p.path, scope.string());
  EXPECT_FALSE(fs::exists(leaf / "cgroup.procs")) << "no second move";

  // A leaf that cannot be made or entered is the reason, with the opt-in named.
  Write(sources_.self_cgroup, "0::/user.slice/run-8.scope\n");
  Cgroup("user.slice/run-8.scope", "memory", "");
  Write(root_ / ("user.slice/run-8.scope/dlbench-" + me), "a file, not a cgroup");
  p = FindCgroupParent(sources_, CgroupCheck::kEnable, 4343);
  EXPECT_TRUE(p.path.empty());
  EXPECT_EQ(p.why_not.rfind("DLBENCH_CGROUP_PARENT=self: ", 0), 0u) << p.why_not;
}

TEST_F(FakeCgroups, TheProcessCgroupServesWhenItsChildrenHaveMemory) {
  Mounts(true, false);
  Write(sources_.self_cgroup, "0::/\n");
  Cgroup("", "cpuset cpu io memory pids", "memory pids");
  const CgroupParent p = FindCgroupParent(sources_);
  EXPECT_EQ(p.why_not, "");
  EXPECT_EQ(p.path, root_.string());
}

// A configured parent: it must lie on the cgroup2 mount; memory is enabled for its children when
// it is not yet (the write succeeds on a cgroup without processes).
TEST_F(FakeCgroups, AConfiguredParentIsCheckedAndGetsMemoryForItsChildren) {
  Mounts(true, false);
  Write(sources_.self_cgroup, "0::/user.slice\n");
  const fs::path parent = Cgroup("dlbench.slice", "cpu memory", "");
  sources_.parent = "/elsewhere/dlbench";
  CgroupParent p = FindCgroupParent(sources_);
  EXPECT_TRUE(p.path.empty());
  EXPECT_EQ(p.why_not,
            "DLBENCH_CGROUP_PARENT=/elsewhere/dlbench is not under a cgroup2 mount (" + root_.string() + ")");
  sources_.parent = parent.string() + "/";
  p = FindCgroupParent(sources_);
  EXPECT_EQ(p.why_not, "");
  EXPECT_EQ(p.path, parent.string());
  EXPECT_EQ(p.source, "DLBENCH_CGROUP_PARENT");
  EXPECT_EQ(Read(parent / "cgroup.subtree_control"), "+memory");
}

TEST_F(FakeCgroups, ACellsCgroupGetsItsLimitNoSwapAndTheRunnerAndIsRemoved) {
  const fs::path parent = Cgroup("dlbench.slice", "memory", "memory");
  Write(parent / "memory.swap.max", "max\n");
  auto cg = CellCgroup::Create(parent.string(), "cell", 512 << 20);
  ASSERT_TRUE(cg.ok()) << cg.error().message;
  EXPECT_EQ(cg->path(), (parent / "cell").string());
  EXPECT_EQ(Read(parent / "cell/memory.max"), "536870912");
  EXPECT_EQ(Read(parent / "cell/memory.swap.max"), "0");
  ASSERT_TRUE(cg->Add(4242).ok());
  EXPECT_EQ(Read(parent / "cell/cgroup.procs"), "4242");
  EXPECT_EQ(cg->OomKills(), 0) << "no memory.events: nothing known to have been killed";
  EXPECT_EQ(cg->Peak(), std::nullopt);
  Write(parent / "cell/memory.events", "low 0\nhigh 0\nmax 7\noom 2\noom_kill 1\noom_group_kill 0\n");
  Write(parent / "cell/memory.peak", "536866816\n");
  EXPECT_EQ(cg->OomKills(), 1);
  EXPECT_EQ(cg->Peak(), 536866816);
  // The kernel's interface files go with the cgroup; a fake tree's must go first.
  const Status busy = cg->Remove();
  ASSERT_FALSE(busy.ok());
  EXPECT_NE(busy.error().message.find("cannot remove cgroup " + (parent / "cell").string()),
            std::string::npos);
  for (const auto& f : fs::directory_iterator(parent / "cell")) fs::remove(f.path());
  ASSERT_TRUE(cg->Remove().ok());
  EXPECT_FALSE(fs::exists(parent / "cell"));
  EXPECT_TRUE(cg->Remove().ok()) << "removing twice is nothing";
}

TEST_F(FakeCgroups, WithoutSwapAccountingNoSwapLimitIsWrittenAndAFailedCreateLeavesNothing) {
  const fs::path parent = Cgroup("dlbench.slice", "memory", "memory");
  {
    auto cg = CellCgroup::Create(parent.string(), "cell", 1 << 20);
    ASSERT_TRUE(cg.ok()) << cg.error().message;
    EXPECT_FALSE(fs::exists(parent / "cell/memory.swap.max"));
    fs::remove(parent / "cell/memory.max");
  }
  EXPECT_FALSE(fs::exists(parent / "cell")) << "the destructor removes it";
  auto missing = CellCgroup::Create((parent / "absent").string(), "cell", 1 << 20);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("cannot create cgroup " + (parent / "absent/cell").string()),
            std::string::npos);
}

TEST(CgroupKeyedValue, ReadsOneKey) {
  EXPECT_EQ(CgroupKeyedValue("oom 3\noom_kill 2\n", "oom_kill"), 2);
  EXPECT_EQ(CgroupKeyedValue("oom 3\noom_kill 2\n", "oom"), 3);
  EXPECT_EQ(CgroupKeyedValue("oom 3\n", "oom_kill"), std::nullopt);
  EXPECT_EQ(CgroupKeyedValue("", "oom_kill"), std::nullopt);
  EXPECT_EQ(CgroupKeyedValue("oom_kill x\n", "oom_kill"), std::nullopt);
}

plan::Cell CpuCellCappedAt(const std::string& cap) {
  plan::Cell c;
  c.params = {{"memory_cap", config::Value(cap)}, {"device", config::Value("cpu")}};
  return c;
}

// The selection as the cell runner makes it: cgroup v2 where a parent is usable, and the record
// says which cgroup; RLIMIT_DATA otherwise, and the record says why not cgroup v2.
TEST_F(FakeCgroups, ACpuCellsCapSaysWhichMechanismAppliedAndWhy) {
  SpawnOptions o;
  o.argv = {"sleep", "10"};
  auto child = Subprocess::Spawn(o);
  ASSERT_TRUE(child.ok()) << child.error().message;

  Mounts(true, true);
  Write(sources_.self_cgroup, "0::/\n");
  Cgroup("", "hugetlb", "");
  record::CellRecord v1;
  auto none = ApplyMemoryCap(CpuCellCappedAt("512MiB"), child->pid(), v1, sources_);
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_EQ(v1.extras["memory_cap"]["mechanism"], kCapRlimitData);
  EXPECT_EQ(v1.extras["memory_cap"]["cgroup_v2"], "not used: the memory controller is not available in " +
                                                      root_.string() +
                                                      " (cgroup.controllers: 'hugetlb'); it is bound to the "
                                                      "cgroup v1 hierarchy at /sys/fs/cgroup/memory, "
                                                      "and a v1 controller cannot join v2");

  Mounts(true, false);
  const fs::path parent = Cgroup("dlbench.slice", "memory", "memory");
  sources_.parent = parent.string();
  record::CellRecord v2;
  v2.outcome = record::Outcome::kCrashed;
  v2.message = "runner killed by signal 9 (SIGKILL)";
  auto applied = ApplyMemoryCap(CpuCellCappedAt("512MiB"), child->pid(), v2, sources_);
  ASSERT_TRUE(applied.ok()) << applied.error().message;
  const std::string cell =
      (parent / ("dlbench-" + std::to_string(::getpid()) + "-runner-" + std::to_string(child->pid())))
          .string();
  EXPECT_EQ(v2.extras["memory_cap"], nlohmann::json({{"bytes", 512 << 20},
                                                     {"mechanism", kCapCgroupV2},
                                                     {"cgroup", cell},
                                                     {"cgroup_parent_from", "DLBENCH_CGROUP_PARENT"}}));
  EXPECT_EQ(Read(cell + "/memory.max"), "536870912");
  EXPECT_EQ(Read(cell + "/cgroup.procs"), std::to_string(child->pid()));

  // The kernel's OOM killer ended the runner: the crash is the cell's oom, with the numbers.
  Write(cell + "/memory.events", "oom 1\noom_kill 1\n");
  Write(cell + "/memory.peak", "536870912\n");
  applied->Conclude(v2);
  EXPECT_EQ(v2.outcome, record::Outcome::kOom);
  EXPECT_EQ(v2.message,
            "out of memory: the kernel's OOM killer ended 1 process of the cell's cgroup (memory.events "
            "oom_kill); its peak was 536870912 bytes (memory.peak); memory_cap allowed 536870912 bytes "
            "(512 MiB, cgroup_v2_memory_max); runner killed by signal 9 (SIGKILL)");
  EXPECT_EQ(v2.extras["memory_cap"]["oom_kills"], 1);
  EXPECT_EQ(v2.extras["memory_cap"]["peak_bytes"], 536870912);
  // The fake tree's files keep its directory; the failure to remove it is a warning, not lost.
  ASSERT_TRUE(v2.extras["warnings"].is_array());
  EXPECT_NE(v2.extras["warnings"].back().get<std::string>().find("cannot remove cgroup " + cell),
            std::string::npos);
  child->Terminate(0);
}

// What `plan` says a cell's cap will use, from one read-only detection (PlannedMemoryCap).
TEST_F(FakeCgroups, PlanSaysWhichMechanismEachCappedCellWillUse) {
  Mounts(true, true);
  Write(sources_.self_cgroup, "0::/\n");
  Cgroup("", "hugetlb", "");
  const CgroupParent v1 = FindCgroupParent(sources_, CgroupCheck::kReadOnly);
  EXPECT_EQ(
      PlannedMemoryCap(CpuCellCappedAt("512MiB"), v1),
      nlohmann::json(
          {{"bytes", 512 << 20}, {"mechanism", kCapRlimitData}, {"cgroup_v2", "not used: " + v1.why_not}}));
  plan::Cell cuda = CpuCellCappedAt("16GiB");
  cuda.params["device"] = config::Value("cuda:0");
  EXPECT_EQ(PlannedMemoryCap(cuda, v1),
            nlohmann::json({{"bytes", std::int64_t{16} << 30}, {"mechanism", kCapByRunner}}));
  EXPECT_FALSE(CellCapsOnCpu(cuda));
  plan::Cell none;
  none.params = {{"device", config::Value("cpu")}};
  EXPECT_EQ(PlannedMemoryCap(none, v1), std::nullopt);
  EXPECT_FALSE(CellCapsOnCpu(none));
  EXPECT_TRUE(CellCapsOnCpu(CpuCellCappedAt("1GiB")));

  Mounts(true, false);
  const fs::path parent = Cgroup("dlbench.slice", "memory", "memory");
  sources_.parent = parent.string();
  const CgroupParent v2 = FindCgroupParent(sources_, CgroupCheck::kReadOnly);
  EXPECT_EQ(PlannedMemoryCap(CpuCellCappedAt("512MiB"), v2),
            nlohmann::json({{"bytes", 512 << 20},
                            {"mechanism", kCapCgroupV2},
                            {"cgroup_parent", parent.string()},
                            {"cgroup_parent_from", "DLBENCH_CGROUP_PARENT"}}));
}

// A cell that ended ok although a process of its cgroup was OOM-killed (a helper process, say)
// keeps its outcome; the kill is a warning.
TEST_F(FakeCgroups, AnOomKillOfAnotherProcessIsAWarning) {
  const fs::path parent = Cgroup("dlbench.slice", "memory", "memory");
  auto cg = CellCgroup::Create(parent.string(), "cell", 1 << 30);
  ASSERT_TRUE(cg.ok());
  Write(parent / "cell/memory.events", "oom_kill 2\n");
  AppliedMemoryCap applied(std::move(cg).value());
  record::CellRecord rec;
  rec.outcome = record::Outcome::kOk;
  rec.extras["memory_cap"] = {{"bytes", 1 << 30}, {"mechanism", kCapCgroupV2}};
  for (const auto& f : fs::directory_iterator(parent / "cell")) {
    if (f.path().filename() != "memory.events") fs::remove(f.path());
  }
  applied.Conclude(rec);
  EXPECT_EQ(rec.outcome, record::Outcome::kOk);
  ASSERT_TRUE(rec.extras["warnings"].is_array());
  EXPECT_EQ(rec.extras["warnings"][0],
            "the kernel's OOM killer ended 2 processes of the cell's cgroup (memory.events oom_kill); "
            "memory_cap allowed 1073741824 bytes (1024 MiB, cgroup_v2_memory_max)");
}

// The kernel's side of CellCgroup on this host's own cgroup2 mount, where one is mounted and
// writable (as root): a cell's cgroup is made at the mount's root and removed again within the
// test. Without the memory controller there (this development machine: only hugetlb), the kernel
// has no memory.max to write (EACCES: kernfs creates no file), so Create fails and leaves no
// cgroup behind; with it, memory.max holds the cap, a process moves in, its cgroup cannot be removed
// while it runs (EBUSY) and can once it has been reaped.
TEST(RealCgroup2, ACellsCgroupOnThisKernelIsMadeAndRemovedOrRefusedWithoutATrace) {
  CgroupSources sources;
  sources.mounts = "/proc/self/mounts";
  auto mounts = ReadFile(sources.mounts);
  ASSERT_TRUE(mounts.ok());
  std::string point;
  for (const std::string& line : Split(*mounts, '\n')) {
    const std::vector<std::string> f = Split(line, ' ');
    if (f.size() >= 3 && f[2] == "cgroup2" && point.empty()) point = f[1];
  }
  if (point.empty()) GTEST_SKIP() << "no cgroup2 file system is mounted here";
  if (::access(point.c_str(), W_OK) != 0) GTEST_SKIP() << point << " is not writable by this user";
  const std::string name = "dlbench-test-" + std::to_string(::getpid());
  const fs::path path = fs::path(point) / name;
  auto cg = CellCgroup::Create(point, name, 64 << 20);
  if (!cg.ok()) {
    EXPECT_NE(cg.error().message.find("memory.max: Permission denied"), std::string::npos)
        << cg.error().message;
    EXPECT_FALSE(fs::exists(path)) << "a failed Create removes the cgroup it made";
    const std::string controllers = Read(fs::path(point) / "cgroup.subtree_control");
    EXPECT_EQ(controllers.find("memory"), std::string::npos) << "only a root without memory refuses";
    return;
  }
  EXPECT_EQ(Trim(Read(path / "memory.max")), std::to_string(64 << 20));
  SpawnOptions o;
  o.argv = {"sleep", "30"};
  auto child = Subprocess::Spawn(o);
  ASSERT_TRUE(child.ok()) << child.error().message;
  ASSERT_TRUE(cg->Add(child->pid()).ok());
  EXPECT_NE(Read("/proc/" + std::to_string(child->pid()) + "/cgroup").find("0::/" + name), std::string::npos);
  const Status busy = cg->Remove();
  ASSERT_FALSE(busy.ok());
  EXPECT_NE(busy.error().message.find("Device or resource busy"), std::string::npos) << busy.error().message;
  child->Terminate(0);
  EXPECT_EQ(cg->OomKills(), 0);
  ASSERT_TRUE(cg->Remove().ok());
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
}  // namespace dlbench::orchestrator
