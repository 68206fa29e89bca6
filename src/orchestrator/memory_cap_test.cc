#include "orchestrator/memory_cap.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

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

TEST(MemoryCapTest, AGoneProcessIsAnError) {
  const Status st = LimitProcessData(999999999, 1 << 20);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("prlimit(RLIMIT_DATA"), std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace dlbench::orchestrator
