// store/sweep.h on a SQLite store: grouping by sweep, a shard run twice, a missing and an empty
// shard, the sweep's status and times, and a name reused for another plan.
#include "store/sweep.h"

#include <gtest/gtest.h>

#include "store/store_test_util.h"

namespace dlbench::store {
namespace {

using testing::MakeCell;
using testing::MakeRun;
using testing::ScratchDir;

class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    auto opened = OpenSqliteStore(dir_.File("s.db"));
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    store_ = std::move(opened).value();
  }

  // A shard run of `sweep` holding the cells at `indices`, ended with `status` at `end_ns`.
  std::int64_t Shard(const std::string& sweep, const std::string& shard, const std::vector<int>& indices,
                     record::RunStatus status, std::int64_t start_ns, std::int64_t end_ns,
                     int sweep_cells = 5) {
    RunRecord run = MakeRun("m");
    run.selection.shard = shard;
    run.sweep = sweep;
    run.sweep_cells = sweep_cells;
    run.total_cells = static_cast<int>(indices.size());
    run.started_wall_ns = start_ns;
    auto id = store_->BeginRun(run);
    EXPECT_TRUE(id.ok()) << id.error().message;
    for (int i : indices) EXPECT_TRUE(store_->PutCell(MakeCell(*id, i)).ok());
    EXPECT_TRUE(store_->SetRunStatus(*id, status, end_ns).ok());
    return *id;
  }

  ScratchDir dir_;
  std::unique_ptr<ResultStore> store_;
};

TEST_F(SweepTest, ReadsItsShardsAsOneRunInPlanOrder) {
  using record::RunStatus;
  const std::int64_t a = Shard("s", "1/2", {0, 2, 4}, RunStatus::kCompleted, 100, 900);
  const std::int64_t b = Shard("s", "2/2", {1, 3}, RunStatus::kCompleted, 50, 700);
  Shard("other", "1/3", {0}, RunStatus::kCompleted, 10, 20);
  ASSERT_TRUE(store_->BeginRun(MakeRun("no sweep")).ok());

  auto sweeps = ListSweeps(*store_);
  ASSERT_TRUE(sweeps.ok()) << sweeps.error().message;
  ASSERT_EQ(sweeps->size(), 2u);
  EXPECT_EQ((*sweeps)[0].name, "other") << "the sweep with the newest run first";
  EXPECT_EQ((*sweeps)[1].name, "s");
  EXPECT_TRUE((*sweeps)[1].Complete());
  EXPECT_EQ((*sweeps)[0].Missing(), (std::vector<int>{2, 3}));

  auto loaded = LoadRun(*store_, "sweep:s", CellQuery{});
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  ASSERT_EQ(loaded->cells.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(loaded->cells[i].index, i);
  EXPECT_EQ(loaded->run.id, a) << "the first shard's run";
  EXPECT_EQ(loaded->run.total_cells, 5);
  EXPECT_EQ(loaded->run.status, RunStatus::kCompleted);
  EXPECT_EQ(loaded->run.started_wall_ns, 50) << "the first shard's start";
  EXPECT_EQ(loaded->run.finished_wall_ns, std::optional<std::int64_t>(900)) << "the last shard's end";
  EXPECT_TRUE(loaded->run.selection.shard.empty());
  EXPECT_TRUE(loaded->notes.empty());
  (void)b;

  auto plain = LoadRun(*store_, std::to_string(a), CellQuery{});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->cells.size(), 3u) << "a run reference reads one shard";
  EXPECT_FALSE(plain->sweep.has_value());
}

TEST_F(SweepTest, AShardRunAgainIsReadFromItsNewerRunAndAMissingOneIsSaid) {
  using record::RunStatus;
  const std::int64_t old = Shard("s", "1/3", {0, 3}, RunStatus::kFailed, 1, 2);
  const std::int64_t again = Shard("s", "1/3", {0, 3}, RunStatus::kInterrupted, 3, 4);
  Shard("s", "3/3", {2}, RunStatus::kCompleted, 5, 6);
  auto loaded = LoadRun(*store_, "sweep:s", CellQuery{});
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  ASSERT_TRUE(loaded->sweep.has_value());
  EXPECT_EQ(loaded->sweep->shards.at(1).id, again);
  EXPECT_EQ(loaded->sweep->repeated, (std::vector<std::int64_t>{old}));
  EXPECT_EQ(loaded->cells.size(), 3u) << "each cell once";
  EXPECT_EQ(loaded->run.status, RunStatus::kInterrupted);
  EXPECT_EQ(loaded->run.finished_wall_ns, std::nullopt) << "a shard is missing";
  EXPECT_EQ(loaded->notes,
            (std::vector<std::string>{
                "shard 2/3 has not stored a run",
                "shard 1/3 (run " + std::to_string(again) + ") is interrupted",
                "run " + std::to_string(old) + " ran a shard again later: the newer run is read instead",
            }));
}

TEST_F(SweepTest, AShardPastThePlansCellsIsNeverMissing) {
  Shard("s", "1/4", {0}, record::RunStatus::kCompleted, 1, 2, /*sweep_cells=*/2);
  Shard("s", "2/4", {1}, record::RunStatus::kCompleted, 1, 2, /*sweep_cells=*/2);
  auto sweep = FindSweep(*store_, "s");
  ASSERT_TRUE(sweep.ok());
  EXPECT_TRUE(sweep->Missing().empty()) << "shards 3/4 and 4/4 of two cells hold none";
  EXPECT_TRUE(sweep->Complete());
}

TEST_F(SweepTest, ANameUsedForTwoPlansIsAConflictAndAnUnknownOneIsNotFound) {
  Shard("s", "1/2", {0}, record::RunStatus::kCompleted, 1, 2);
  RunRecord other = MakeRun("m");
  other.matrix_text += "# changed\n";
  other.selection.shard = "2/2";
  other.sweep = "s";
  ASSERT_TRUE(store_->BeginRun(other).ok());
  auto sweeps = ListSweeps(*store_);
  ASSERT_TRUE(sweeps.ok()) << "one bad sweep does not hide the others";
  EXPECT_EQ((*sweeps)[0].conflict, "runs 2 and 1 ran different matrices");
  auto refused = LoadRun(*store_, "sweep:s", CellQuery{});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(refused.error().message.find("sweep s holds runs of different plans (runs 2 and 1 ran different "
                                         "matrices)"),
            std::string::npos)
      << refused.error().message;
  auto unknown = LoadRun(*store_, "sweep:t", CellQuery{});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(unknown.error().message.find("its sweeps: s"), std::string::npos) << unknown.error().message;
  EXPECT_EQ(SweepOfRef("sweep:"), std::optional<std::string>(""));
  EXPECT_EQ(SweepOfRef("latest"), std::nullopt);
}

}  // namespace
}  // namespace dlbench::store
