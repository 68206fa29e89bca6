// StoreTest (store_suite_test_util.h), on both backends: PutCell replaces a cell atomically and a
// rejected one leaves nothing, a reader works while a writer holds its transaction open, a
// million steps fit in one transaction, runs keep their uuid, run locks, and deleting runs and
// tags.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>

#include "store/store_codec.h"
#include "store/store_suite_test_util.h"
#include "store/store_test_util.h"

namespace dlbench::store::testing {
namespace {

TEST_P(StoreTest, PutCellReplacesTheSameCellAndItsChildren) {
  const std::int64_t run_id = Begin(MakeRun("r"));
  CellRecord first = MakeCell(run_id, 0, 50);
  first.outcome = record::Outcome::kInterrupted;
  ASSERT_TRUE(store_->PutCell(first).ok());
  ASSERT_TRUE(store_->PutCell(MakeCell(run_id, 1, 5)).ok());
  EXPECT_EQ(*store_->FinishedCellIds(run_id), (std::set<std::string>{"c1"}));

  CellRecord again = MakeCell(run_id, 0, 7);
  again.metrics = {{"samples_per_s", 100.0, "1/s"}};
  again.series = {{1, "host.cpu_util_pct", 12.5}};
  ASSERT_TRUE(store_->PutCell(again).ok());

  EXPECT_EQ(Count("cells"), "2");
  EXPECT_EQ(Count("steps"), "12");   // 7 + 5: the 50 old rows are gone
  EXPECT_EQ(Count("metrics"), "3");  // 1 + 2
  EXPECT_EQ(Count("series"), "3");   // 1 + 2
  auto cells = store_->GetCells(run_id, kEverything);
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ(cells->size(), 2u);
  ExpectSameCell(again, (*cells)[0], true);
  EXPECT_EQ(*store_->FinishedCellIds(run_id), (std::set<std::string>{"c0", "c1"}));
  EXPECT_EQ(backend_->OrphanRows(), "0") << "no orphan rows";
}

TEST_P(StoreTest, RejectedCellsLeaveNothingBehind) {
  const std::int64_t run_id = Begin(MakeRun("r"));
  CellRecord duplicate_metric = MakeCell(run_id, 0);
  duplicate_metric.metrics.push_back({"samples_per_s", 1.0, "1/s"});
  Status s = store_->PutCell(duplicate_metric);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(s.error().message.find("samples_per_s"), std::string::npos);

  CellRecord bad_utf8 = MakeCell(run_id, 0);
  bad_utf8.extras["raw"] = std::string("\xFF\xFE", 2);
  s = store_->PutCell(bad_utf8);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(s.error().message.find("extras"), std::string::npos) << s.error().message;

  s = store_->PutCell(MakeCell(run_id + 1, 0));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::kNotFound);

  for (const char* table : {"cells", "metrics", "steps", "series"}) EXPECT_EQ(Count(table), "0") << table;
  EXPECT_EQ(store_->GetCells(run_id + 1, CellQuery{}).error().kind, ErrorKind::kNotFound);
}

TEST_P(StoreTest, ReaderSeesCommittedDataWhileAWriterHoldsTheLock) {
  const std::int64_t run_id = Begin(MakeRun("r"));
  ASSERT_TRUE(store_->PutCell(MakeCell(run_id, 0)).ok());
  auto reader = backend_->Open();
  ASSERT_TRUE(reader.ok()) << reader.error().message;

  auto held = backend_->HoldUncommitted("DELETE FROM metrics");
  auto runs = (*reader)->ListRuns();
  ASSERT_TRUE(runs.ok()) << "a reader does not wait for the writer: " << runs.error().message;
  auto cells = (*reader)->GetCells(run_id, CellQuery{});
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ(cells->size(), 1u);
  EXPECT_EQ((*cells)[0].metrics.size(), 2u) << "the uncommitted delete is invisible";
}

TEST_P(StoreTest, AMillionStepsInOneCell) {
  constexpr int kSteps = 1'000'000;
  const std::int64_t run_id = Begin(MakeRun("big"));
  CellRecord cell = MakeCell(run_id, 0, 0);
  cell.steps.resize(kSteps);
  for (int i = 0; i < kSteps; ++i) {
    record::StepRecord& r = cell.steps[i].record;
    r.start_ns = 5'000'000'000LL + i * 2000LL;
    r.end_ns = r.start_ns + 1500;
    r.samples = 64;
    r.compute_ns = 1400;
    r.present = record::kHasCompute;
  }
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  Status put = store_->PutCell(cell);
  const double put_cpu_s = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  const double put_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(put.ok()) << put.error().message;
  const auto read_start = std::chrono::steady_clock::now();
  auto cells = store_->GetCells(run_id, kEverything);
  const double get_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - read_start).count();
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ((*cells)[0].steps.size(), static_cast<std::size_t>(kSteps));
  EXPECT_EQ((*cells)[0].steps.back().record.end_ns, 5'000'000'000LL + (kSteps - 1) * 2000LL + 1500);
  EXPECT_EQ((*cells)[0].steps.back().record.present, record::kHasCompute);
  // Reported, not asserted: machines are noisy (docs/storage.md quotes a measurement).
  std::printf("[ info ] PutCell with %d steps: %.2f s wall, %.2f s CPU; GetCells with steps: %.2f s wall\n",
              kSteps, put_s, put_cpu_s, get_s);
}

TEST_P(StoreTest, RunsKeepTheirUuidAndAStoredUuidIsNotStoredTwice) {
  const std::int64_t fresh = Begin(MakeRun("fresh"));
  auto got = store_->GetRun(fresh);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_TRUE(codec::IsRunUuid(got->uuid)) << got->uuid;

  RunRecord copied = MakeRun("copied");
  copied.uuid = "0f8fad5b-d9cb-469f-a165-70867728950e";
  const std::int64_t first = Begin(copied);
  EXPECT_EQ(store_->GetRun(first)->uuid, copied.uuid);
  // The same uuid again (a retried BeginRun, a second `db copy`) names the stored run.
  copied.name = "copied again";
  EXPECT_EQ(Begin(copied), first);
  EXPECT_EQ(Count("runs"), "2");
  EXPECT_EQ(store_->GetRun(first)->name, "copied");
  EXPECT_NE(store_->GetRun(fresh)->uuid, copied.uuid);

  RunRecord bad = MakeRun("bad");
  for (const char* uuid : {"not-a-uuid", "0F8FAD5B-D9CB-469F-A165-70867728950E"}) {
    bad.uuid = uuid;
    auto refused = store_->BeginRun(bad);
    ASSERT_FALSE(refused.ok()) << uuid;
    EXPECT_EQ(refused.error().kind, ErrorKind::kInvalidInput) << uuid;
  }
  EXPECT_EQ(Count("runs"), "2");
}

TEST_P(StoreTest, ARunLockRefusesASecondStoreObjectNamingItsHolderUntilTheFirstLetsGo) {
  const std::int64_t run_id = Begin(MakeRun("locked"));
  const std::int64_t other_run = Begin(MakeRun("other"));
  const RunLockOwner first_owner{4242, "host-a", 1'700'000'000'000'000'000LL};
  const RunLockOwner second_owner{4343, "host-b", 1'700'000'000'000'000'001LL};
  auto taken = store_->TryLockRun(run_id, first_owner);
  ASSERT_TRUE(taken.ok()) << taken.error().message;
  EXPECT_FALSE(taken->has_value());
  auto again = store_->TryLockRun(run_id, first_owner);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_FALSE(again->has_value()) << "a lock this store object holds is taken again";

  auto second = backend_->Open();
  ASSERT_TRUE(second.ok()) << second.error().message;
  auto refused = (*second)->TryLockRun(run_id, second_owner);
  ASSERT_TRUE(refused.ok()) << refused.error().message;
  ASSERT_TRUE(refused->has_value()) << "a second store object took a held lock";
  EXPECT_EQ((*refused)->pid, first_owner.pid);
  EXPECT_EQ((*refused)->host, first_owner.host);
  EXPECT_EQ((*refused)->since_wall_ns, first_owner.since_wall_ns);
  auto other = (*second)->TryLockRun(other_run, second_owner);
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_FALSE(other->has_value()) << "another run's lock is free";

  ASSERT_TRUE(store_->UnlockRun(run_id).ok());
  ASSERT_TRUE(store_->UnlockRun(run_id).ok()) << "unlocking a lock not held is Ok";
  auto now_free = (*second)->TryLockRun(run_id, second_owner);
  ASSERT_TRUE(now_free.ok()) << now_free.error().message;
  EXPECT_FALSE(now_free->has_value()) << "UnlockRun released it";

  // Destroying the holder releases its locks too.
  second->reset();
  auto after_close = store_->TryLockRun(run_id, first_owner);
  ASSERT_TRUE(after_close.ok()) << after_close.error().message;
  EXPECT_FALSE(after_close->has_value()) << "the lock of a destroyed store object is free";
  ASSERT_TRUE(store_->UnlockRun(run_id).ok());
}

// `runs --delete` and `prune`: a run goes with every row that hangs off it, and nothing else.
TEST_P(StoreTest, DeleteRunRemovesTheRunWithEveryChildAndLeavesTheOthers) {
  const std::int64_t a = Begin(MakeRun("a", "env-a"));
  const std::int64_t b = Begin(MakeRun("b", "env-b"));
  ASSERT_TRUE(store_->PutCell(MakeCell(a, 0, 4)).ok());
  ASSERT_TRUE(store_->PutCell(MakeCell(a, 1, 4)).ok());
  ASSERT_TRUE(store_->PutCell(MakeCell(b, 0, 3)).ok());
  ASSERT_TRUE(store_->SetTag(a, "base").ok());
  ASSERT_TRUE(store_->SetTag(b, "cand").ok());
  ASSERT_EQ(Count("series"), "6");

  ASSERT_TRUE(store_->DeleteRun(a).ok());
  EXPECT_EQ(Count("runs"), "1");
  EXPECT_EQ(Count("cells"), "1");
  EXPECT_EQ(Count("steps"), "3");
  EXPECT_EQ(Count("metrics"), "2");
  EXPECT_EQ(Count("tags"), "1");
  EXPECT_EQ(Count("environments"), "1") << "env-a is used by no run any more";
  EXPECT_EQ(Count("series"), "2");
  EXPECT_EQ(store_->GetRun(a).error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(store_->ResolveRunName("base").error().kind, ErrorKind::kNotFound);
  auto kept = store_->GetCells(b, CellQuery{true, true, std::nullopt});
  ASSERT_TRUE(kept.ok());
  ASSERT_EQ(kept->size(), 1u);
  ExpectSameCell(MakeCell(b, 0, 3), (*kept)[0], /*with_children=*/true);

  const Status again = store_->DeleteRun(a);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(again.error().message.find("no run with id " + std::to_string(a)), std::string::npos);
}

TEST_P(StoreTest, DeleteTagRemovesOnlyTheTagAndRefusesWhatIsNoTag) {
  const std::int64_t run = Begin(MakeRun("a"));
  ASSERT_TRUE(store_->SetTag(run, "base").ok());
  ASSERT_TRUE(store_->SetTag(run, "nightly").ok());
  ASSERT_TRUE(store_->DeleteTag("base").ok());
  EXPECT_EQ(Count("tags"), "1");
  EXPECT_EQ(Count("runs"), "1");
  const Status unknown = store_->DeleteTag("base");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(unknown.error().message.find("known tags: nightly"), std::string::npos)
      << unknown.error().message;
  const Status an_id = store_->DeleteTag(std::to_string(run));
  ASSERT_FALSE(an_id.ok());
  EXPECT_EQ(an_id.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(an_id.error().message.find("is not a tag: it names run"), std::string::npos);
  EXPECT_EQ(Count("tags"), "1");
}

}  // namespace
}  // namespace dlbench::store::testing
