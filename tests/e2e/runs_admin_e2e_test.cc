// Removing what a store holds, end to end with the real binary: `tag --list`/`--delete`,
// `runs --delete`, `prune --keep N` (tagged runs kept, --dry-run deletes nothing), and the rule
// that a run a live process holds is never deleted. The runs are the null runner's in virtual
// time, so every run stores exactly its cells whatever the machine's load.
#include <gtest/gtest.h>

#include <string>

#include "e2e_sqlite.h"
#include "e2e_util.h"
#include "store/result_store.h"

namespace dlbench::e2e {
namespace {

constexpr const char* kMatrix =
    "name: admin\n"
    "runner: null\n"
    "matrix:\n"
    "  model: [a, b]\n"
    "  step_ms: 2\n"
    "  virtual_time: true\n"
    "measure:\n"
    "  min_steps: 20\n"
    "  min_time_s: 0.1\n"
    "  max_time_s: 0.5\n";

std::string Context(const CommandResult& r) { return "stdout:\n" + r.out + "\nstderr:\n" + r.err; }

std::int64_t Count(const std::string& db, const std::string& table) {
  return QueryInt(db, "SELECT count(*) FROM " + table);
}

TEST(RunsAdminE2E, TagsAreListedAndDeletedRunsAreDeletedWholeAndPruneKeepsTheNewestAndTagged) {
  TempDir dir("runs-admin");
  const std::string db = dir / "a.db";
  const std::string matrix = dir / "m.yaml";
  WriteText(matrix, kMatrix);
  for (int i = 1; i <= 4; ++i) {
    auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
    ASSERT_EQ(run.exit_code, 0) << Context(run);
  }
  ASSERT_EQ(Count(db, "runs"), 4);
  ASSERT_EQ(Count(db, "cells"), 8);

  auto none = Dlbench({"tag", "--list"}, dir, db);
  EXPECT_EQ(none.exit_code, 0) << Context(none);
  EXPECT_NE(none.out.find("no tags in"), std::string::npos) << none.out;
  ASSERT_EQ(Dlbench({"tag", "1", "baseline"}, dir, db).exit_code, 0);
  ASSERT_EQ(Dlbench({"tag", "2", "old"}, dir, db).exit_code, 0);
  auto listed = Dlbench({"tag", "--list"}, dir, db);
  EXPECT_EQ(listed.exit_code, 0) << Context(listed);
  EXPECT_NE(listed.out.find("baseline"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("old"), std::string::npos) << listed.out;

  // Deleting a tag keeps its run; an unknown tag or a run id is refused with what there is.
  auto removed = Dlbench({"tag", "--delete", "old"}, dir, db);
  EXPECT_EQ(removed.exit_code, 0) << Context(removed);
  EXPECT_NE(removed.out.find("removed tag 'old' (run 2 stays)"), std::string::npos) << removed.out;
  EXPECT_EQ(Count(db, "runs"), 4);
  auto unknown = Dlbench({"tag", "--delete", "old"}, dir, db);
  EXPECT_EQ(unknown.exit_code, 2) << Context(unknown);
  EXPECT_NE(unknown.err.find("known tags: baseline"), std::string::npos) << unknown.err;
  auto an_id = Dlbench({"tag", "--delete", "2"}, dir, db);
  EXPECT_EQ(an_id.exit_code, 2) << Context(an_id);
  EXPECT_NE(an_id.err.find("'2' is not a tag: it names run 2"), std::string::npos) << an_id.err;
  auto both = Dlbench({"tag", "--list", "--delete", "baseline"}, dir, db);
  EXPECT_EQ(both.exit_code, 2) << Context(both);
  EXPECT_NE(both.err.find("expected one of"), std::string::npos) << both.err;

  // prune --keep 1: run 4 (newest) and run 1 (tagged) stay; a dry run deletes nothing.
  auto dry = Dlbench({"prune", "--keep", "1", "--dry-run"}, dir, db);
  EXPECT_EQ(dry.exit_code, 0) << Context(dry);
  EXPECT_NE(dry.out.find("would delete run 3"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("would delete run 2"), std::string::npos) << dry.out;
  EXPECT_EQ(dry.out.find("would delete run 1 "), std::string::npos) << dry.out;
  EXPECT_EQ(dry.out.find("would delete run 4"), std::string::npos) << dry.out;
  EXPECT_EQ(Count(db, "runs"), 4);

  // A run another live process holds (its lock, as a running `dlbench run` holds it) is refused,
  // and nothing of the prune's earlier deletions is undone.
  {
    auto holder = store::OpenSqliteStore(db);
    ASSERT_TRUE(holder.ok()) << holder.error().message;
    auto held = (*holder)->TryLockRun(2, store::RunLockOwner{4242, "other-host", 0});
    ASSERT_TRUE(held.ok() && !held->has_value());
    auto refused = Dlbench({"runs", "--delete", "2"}, dir, db);
    EXPECT_EQ(refused.exit_code, 2) << Context(refused);
    EXPECT_NE(refused.err.find("run 2 is being run by"), std::string::npos) << refused.err;
    EXPECT_EQ(Count(db, "runs"), 4);
  }

  auto pruned = Dlbench({"prune", "--keep", "1"}, dir, db);
  EXPECT_EQ(pruned.exit_code, 0) << Context(pruned);
  EXPECT_NE(pruned.out.find("deleted 2 of 4 runs"), std::string::npos) << pruned.out;
  EXPECT_EQ(Count(db, "runs"), 2);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM runs WHERE id IN (1, 4)"), 2);

  // runs --delete takes references; every row of the run goes, the rest stays sound.
  auto deleted = Dlbench({"runs", "--delete", "baseline"}, dir, db);
  EXPECT_EQ(deleted.exit_code, 0) << Context(deleted);
  EXPECT_NE(deleted.out.find("deleted run 1 (admin"), std::string::npos) << deleted.out;
  EXPECT_EQ(Count(db, "runs"), 1);
  EXPECT_EQ(Count(db, "cells"), 2);
  EXPECT_EQ(Count(db, "tags"), 0);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM steps WHERE cell_id NOT IN (SELECT id FROM cells)"), 0);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM metrics WHERE cell_id NOT IN (SELECT id FROM cells)"), 0);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM series WHERE cell_id NOT IN (SELECT id FROM cells)"), 0);
  EXPECT_GT(QueryInt(db, "SELECT count(*) FROM steps"), 0);
  EXPECT_EQ(IntegrityCheck(db), "ok");
  auto gone = Dlbench({"show", "1"}, dir, db);
  EXPECT_NE(gone.exit_code, 0) << Context(gone);
  auto missing = Dlbench({"runs", "--delete", "9"}, dir, db);
  EXPECT_EQ(missing.exit_code, 2) << Context(missing);
  EXPECT_NE(missing.err.find("no run with id 9"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace dlbench::e2e
