#include "orchestrator/memory_cap.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>

#include "common/subprocess.h"

namespace dlbench::orchestrator {
namespace {

plan::Cell CellWith(std::map<std::string, config::Value> params) {
  plan::Cell c;
  c.params = std::move(params);
  return c;
}

// The limit lands on the child, soft and hard, so the runner cannot raise it again.
TEST(MemoryCapTest, LimitsTheChildsDataSegment) {
  SpawnOptions o;
  o.argv = {"sleep", "10"};
  auto child = Subprocess::Spawn(o);
  ASSERT_TRUE(child.ok()) << child.error().message;
  record::CellRecord rec;
  // No cgroup2 mount, so RLIMIT_DATA whatever this host offers (cgroup_v2_test.cc has the choice).
  CgroupSources no_cgroup2;
  no_cgroup2.mounts = "/dev/null";
  ASSERT_TRUE(
      ApplyMemoryCap(CellWith({{"memory_cap", config::Value("512MiB")}}), child->pid(), rec, no_cgroup2)
          .ok());
  struct rlimit now {};
  ASSERT_EQ(::prlimit(child->pid(), RLIMIT_DATA, nullptr, &now), 0);
  EXPECT_EQ(now.rlim_cur, rlim_t{512} << 20);
  EXPECT_EQ(now.rlim_max, rlim_t{512} << 20);
  EXPECT_EQ(rec.extras["memory_cap"]["mechanism"], kCapRlimitData);
  EXPECT_EQ(rec.extras["memory_cap"]["bytes"], std::int64_t{512} << 20);
  EXPECT_EQ(rec.extras["memory_cap"]["cgroup_v2"], "not used: no cgroup2 file system is mounted (/dev/null)");
  EXPECT_EQ(MemoryCapNote(rec), "; memory_cap allowed 536870912 bytes (512 MiB, RLIMIT_DATA)");
  child->Terminate(0);
}

// A cuda cell's cap is the runner's (the allocator's fraction): no host limit, and the record says
// who applies it. No cap: nothing at all.
TEST(MemoryCapTest, CudaCellsAndUncappedCellsGetNoHostLimit) {
  SpawnOptions o;
  o.argv = {"sleep", "10"};
  auto child = Subprocess::Spawn(o);
  ASSERT_TRUE(child.ok());
  struct rlimit before {};
  ASSERT_EQ(::prlimit(child->pid(), RLIMIT_DATA, nullptr, &before), 0);
  record::CellRecord cuda;
  ASSERT_TRUE(
      ApplyMemoryCap(CellWith({{"memory_cap", config::Value("16GiB")}, {"device", config::Value("cuda:1")}}),
                     child->pid(), cuda)
          .ok());
  EXPECT_EQ(cuda.extras["memory_cap"]["mechanism"], kCapByRunner);
  record::CellRecord none;
  ASSERT_TRUE(ApplyMemoryCap(CellWith({{"device", config::Value("cpu")}}), child->pid(), none).ok());
  EXPECT_FALSE(none.extras.contains("memory_cap"));
  EXPECT_EQ(MemoryCapNote(none), "");
  struct rlimit after {};
  ASSERT_EQ(::prlimit(child->pid(), RLIMIT_DATA, nullptr, &after), 0);
  EXPECT_EQ(after.rlim_cur, before.rlim_cur);
  child->Terminate(0);
}

// SIGSEGV and SIGABRT under an RLIMIT_DATA cap are read as out of memory (a library may crash on a
// refused allocation); any other signal, another mechanism or no cap leave the crash alone and
// record nothing.
TEST(MemoryCapTest, OnlyASegfaultOrAbortUnderRlimitDataIsTakenAsOom) {
  auto with = [](const char* mechanism) {
    record::CellRecord rec;
    rec.extras["memory_cap"] = {{"bytes", std::int64_t{1} << 30}, {"mechanism", mechanism}};
    return rec;
  };
  record::CellRecord segv = with(kCapRlimitData);
  EXPECT_EQ(CrashTakenAsOom(segv, SIGSEGV),
            "out of memory (taken from a crash): the runner died by SIGSEGV under a 1024 MiB memory_cap "
            "(RLIMIT_DATA): taken as out of memory, since a library whose allocation the limit refuses may "
            "crash instead of reporting it; memory_cap allowed 1073741824 bytes (1024 MiB, RLIMIT_DATA)");
  EXPECT_EQ(segv.extras["memory_cap"]["crash_taken_as_oom"], "SIGSEGV");
  record::CellRecord abort = with(kCapRlimitData);
  ASSERT_TRUE(CrashTakenAsOom(abort, SIGABRT).has_value());
  EXPECT_EQ(abort.extras["memory_cap"]["crash_taken_as_oom"], "SIGABRT");

  record::CellRecord term = with(kCapRlimitData);
  EXPECT_FALSE(CrashTakenAsOom(term, SIGTERM).has_value());
  EXPECT_FALSE(CrashTakenAsOom(term, SIGKILL).has_value());
  EXPECT_FALSE(term.extras["memory_cap"].contains("crash_taken_as_oom"));
  for (const char* mechanism : {kCapCgroupV2, kCapByRunner}) {
    record::CellRecord other = with(mechanism);
    EXPECT_FALSE(CrashTakenAsOom(other, SIGSEGV).has_value()) << mechanism;
    EXPECT_FALSE(other.extras["memory_cap"].contains("crash_taken_as_oom")) << mechanism;
  }
  record::CellRecord uncapped;
  EXPECT_FALSE(CrashTakenAsOom(uncapped, SIGSEGV).has_value());
  EXPECT_FALSE(uncapped.extras.contains("memory_cap"));
}

TEST(MemoryCapTest, AGoneProcessIsAnError) {
  const Status st = LimitProcessData(999999999, 1 << 20);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("prlimit(RLIMIT_DATA"), std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace dlbench::orchestrator
