// Run locks in lock files: a second holder is refused and told who holds the run; a released or
// dead holder (SIGKILL) leaves nothing that blocks; a stale file of a dead holder is taken over.
#include "store/run_lock_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "store/sqlite_store.h"

namespace dlbench::store {
namespace {

class RunLockFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("dlbench_run_lock_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    db_ = (dir_ / "r.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string db_;
};

TEST_F(RunLockFileTest, ASecondHolderIsRefusedWithTheFirstOnesName) {
  RunLockFiles first(db_), second(db_);
  auto taken = first.TryLock(7, {4242, "host-a", 123});
  ASSERT_TRUE(taken.ok()) << taken.error().message;
  EXPECT_FALSE(taken->has_value());
  EXPECT_TRUE(std::filesystem::exists(first.PathOf(7)));
  EXPECT_EQ(first.PathOf(7), db_ + ".run-7.lock");

  auto refused = second.TryLock(7, {1, "host-b", 456});
  ASSERT_TRUE(refused.ok()) << refused.error().message;
  ASSERT_TRUE(refused->has_value());
  EXPECT_EQ((*refused)->pid, 4242);
  EXPECT_EQ((*refused)->host, "host-a");
  EXPECT_EQ((*refused)->since_wall_ns, 123);

  auto other_run = second.TryLock(8, {1, "host-b", 456});  // locks are per run
  ASSERT_TRUE(other_run.ok());
  EXPECT_FALSE(other_run->has_value());

  auto again = first.TryLock(7, {4242, "host-a", 123});  // its own lock: taken already
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->has_value());

  ASSERT_TRUE(first.Unlock(7).ok());
  EXPECT_FALSE(std::filesystem::exists(first.PathOf(7)));
  EXPECT_TRUE(first.Unlock(7).ok());  // not held: nothing to do
  auto after = second.TryLock(7, {1, "host-b", 456});
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->has_value());
}

TEST_F(RunLockFileTest, AHolderKilledBySigkillHoldsNothing) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    RunLockFiles mine(db_);
    auto taken = mine.TryLock(3, {static_cast<std::int64_t>(::getpid()), "child", 1});
    const char ok = taken.ok() && !taken->has_value() ? 'y' : 'n';
    (void)!::write(ready[1], &ok, 1);
    for (;;) pause();
  }
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  RunLockFiles mine(db_);
  auto refused = mine.TryLock(3, {1, "parent", 2});
  ASSERT_TRUE(refused.ok());
  ASSERT_TRUE(refused->has_value());
  EXPECT_EQ((*refused)->pid, child);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  // The file is still there (nobody removed it), but it locks nothing: it is taken over.
  EXPECT_TRUE(std::filesystem::exists(mine.PathOf(3)));
  auto taken = mine.TryLock(3, {1, "parent", 2});
  ASSERT_TRUE(taken.ok()) << taken.error().message;
  EXPECT_FALSE(taken->has_value());
  RunLockFiles other(db_);
  auto holder = other.TryLock(3, {9, "x", 9});
  ASSERT_TRUE(holder.ok());
  ASSERT_TRUE(holder->has_value());
  EXPECT_EQ((*holder)->host, "parent");
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST_F(RunLockFileTest, AnUnreadableHolderIsStillAHolder) {
  RunLockFiles first(db_);
  ASSERT_TRUE(first.TryLock(5, {10, "h", 1}).ok());
  std::ofstream(first.PathOf(5), std::ios::trunc) << "not json";  // what a half-written file reads as
  RunLockFiles second(db_);
  auto refused = second.TryLock(5, {11, "h", 2});
  ASSERT_TRUE(refused.ok());
  ASSERT_TRUE(refused->has_value());
  EXPECT_EQ((*refused)->pid, 0);
  EXPECT_EQ((*refused)->host, "");
}

TEST_F(RunLockFileTest, DestroyingTheHolderReleasesItsLocks) {
  {
    RunLockFiles first(db_);
    ASSERT_TRUE(first.TryLock(1, {10, "h", 1}).ok());
    ASSERT_TRUE(first.TryLock(2, {10, "h", 1}).ok());
  }
  RunLockFiles second(db_);
  for (std::int64_t run : {1, 2}) {
    auto taken = second.TryLock(run, {11, "h", 2});
    ASSERT_TRUE(taken.ok());
    EXPECT_FALSE(taken->has_value()) << run;
  }
}

TEST_F(RunLockFileTest, TheSqliteStoreLocksThroughItsFile) {
  auto a = SqliteStore::Open(db_);
  auto b = SqliteStore::Open(db_);
  ASSERT_TRUE(a.ok() && b.ok());
  auto taken = (*a)->TryLockRun(1, {20, "h", 1});
  ASSERT_TRUE(taken.ok());
  EXPECT_FALSE(taken->has_value());
  auto refused = (*b)->TryLockRun(1, {21, "h", 2});
  ASSERT_TRUE(refused.ok());
  ASSERT_TRUE(refused->has_value());
  EXPECT_EQ((*refused)->pid, 20);
  ASSERT_TRUE((*a)->UnlockRun(1).ok());
  auto after = (*b)->TryLockRun(1, {21, "h", 2});
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->has_value());
}

TEST(RunLockMemoryTest, AnInMemoryDatabaseLocksInTheObject) {
  RunLockFiles locks(":memory:");
  auto taken = locks.TryLock(1, {1, "h", 1});
  ASSERT_TRUE(taken.ok());
  EXPECT_FALSE(taken->has_value());
  EXPECT_TRUE(locks.Unlock(1).ok());
}

}  // namespace
}  // namespace dlbench::store
