// SpillingStore with an inner store that is told when to be unreachable (deterministic: no server,
// no timing): a cell it cannot take is kept whole in a spill file and the error says where and how
// to store it; spilled cells are stored first, oldest first, by the next PutCell, FinishedCellIds
// or SetRunStatus once it is back; other failures are not spilled; a damaged spill file stays.
#include "store/spill_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <limits>

#include "common/files.h"
#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace dlbench::store {
namespace {

using testing::MakeCell;
using testing::MakeRun;
using testing::ScratchDir;

// A SQLite store whose PutCell answers kUnavailable while `down` is set.
class FlakyStore final : public ResultStore {
 public:
  FlakyStore(std::unique_ptr<ResultStore> inner, bool* down) : inner_(std::move(inner)), down_(down) {}
  Result<std::int64_t> BeginRun(const RunRecord& run) override { return inner_->BeginRun(run); }
  Status PutCell(const CellRecord& cell) override {
    ++puts;
    if (*down_) return MakeError(ErrorKind::kUnavailable, "the server is away");
    return inner_->PutCell(cell);
  }
  Status SetRunStatus(std::int64_t id, record::RunStatus s, std::optional<std::int64_t> t) override {
    return inner_->SetRunStatus(id, s, t);
  }
  Result<std::vector<RunRecord>> ListRuns() override { return inner_->ListRuns(); }
  Result<RunRecord> GetRun(std::int64_t id) override { return inner_->GetRun(id); }
  Result<std::vector<CellRecord>> GetCells(std::int64_t id, const CellQuery& q) override {
    return inner_->GetCells(id, q);
  }
  Result<std::set<std::string>> FinishedCellIds(std::int64_t id) override {
    return inner_->FinishedCellIds(id);
  }
  Status SetTag(std::int64_t id, const std::string& tag) override { return inner_->SetTag(id, tag); }
  Status DeleteTag(const std::string& tag) override { return inner_->DeleteTag(tag); }
  Status DeleteRun(std::int64_t id) override { return inner_->DeleteRun(id); }
  Result<std::int64_t> ResolveRunName(const std::string& name) override {
    return inner_->ResolveRunName(name);
  }
  Result<std::vector<std::pair<RunRecord, CellRecord>>> CellHistory(const std::string& key) override {
    return inner_->CellHistory(key);
  }
  std::string Describe() const override { return "flaky:" + inner_->Describe(); }
  Result<std::optional<RunLockOwner>> TryLockRun(std::int64_t run_id, const RunLockOwner& owner) override {
    return inner_->TryLockRun(run_id, owner);
  }
  Status UnlockRun(std::int64_t run_id) override { return inner_->UnlockRun(run_id); }
  int puts = 0;

 private:
  std::unique_ptr<ResultStore> inner_;
  bool* down_;
};

class SpillStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    auto sqlite = OpenSqliteStore(dir_.File("inner.db"));
    ASSERT_TRUE(sqlite.ok()) << sqlite.error().message;
    auto flaky = std::make_unique<FlakyStore>(std::move(*sqlite), &down_);
    flaky_ = flaky.get();
    store_ = std::make_unique<SpillingStore>(std::move(flaky), dir_.File("spill"));
    run_id_ = *store_->BeginRun(MakeRun("spill"));
  }
  std::set<std::string> StoredIds() {
    auto reader = OpenSqliteStore(dir_.File("inner.db"));
    return *(*reader)->FinishedCellIds(run_id_);
  }

  ScratchDir dir_;
  bool down_ = false;
  FlakyStore* flaky_ = nullptr;
  std::unique_ptr<SpillingStore> store_;
  std::int64_t run_id_ = 0;
};

TEST(SpillFormatTest, ACellRoundTripsExactly) {
  CellRecord cell = MakeCell(7, 3, 12);
  cell.cell_id = "resnet50/bs64/cuda:0/fp16#r0";
  cell.seed = std::numeric_limits<std::uint64_t>::max();
  cell.params["big"] = std::numeric_limits<std::uint64_t>::max();
  cell.params["text"] = "\xE6\x97\xA5\xE6\x9C\xAC \"q\"\n";
  cell.metrics.push_back({"energy_j", std::numeric_limits<double>::quiet_NaN(), "J"});
  cell.metrics.push_back({"headroom", -std::numeric_limits<double>::infinity(), "ratio"});
  cell.metrics.push_back({"third", 1.0 / 3.0, "ratio"});
  cell.series.push_back({5, "gpu0.power_w", std::numeric_limits<double>::infinity()});
  cell.steps[4].record.present |= 1u << 9;
  cell.outcome = record::Outcome::kTimeout;
  cell.verdict = record::Verdict::kNoisy;
  const nlohmann::json json = CellToJson(cell);
  auto back = CellFromJson(nlohmann::json::parse(json.dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(CellToJson(*back).dump(), json.dump());
  EXPECT_TRUE(std::isnan(back->metrics[2].value));
  EXPECT_EQ(back->metrics[3].value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(back->metrics[4].value, 1.0 / 3.0);
  EXPECT_EQ(back->seed, cell.seed);
  EXPECT_EQ(back->steps[4].record.present, cell.steps[4].record.present);
  EXPECT_EQ(back->window, cell.window);

  CellRecord no_window = MakeCell(1, 0, 0);
  no_window.window = std::nullopt;
  EXPECT_EQ(CellFromJson(CellToJson(no_window))->window, std::nullopt);
  for (const char* bad : {"{}", "[]", R"({"run_id": "x"})"}) {
    auto refused = CellFromJson(nlohmann::json::parse(bad));
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.error().kind, ErrorKind::kStore);
  }
}

TEST_F(SpillStoreTest, ACellTheStoreCannotTakeIsSpilledAndStoredFirstOnceItIsBack) {
  ASSERT_TRUE(store_->PutCell(MakeCell(run_id_, 0, 5)).ok());
  down_ = true;
  // A cell_id is its key: it names every parameter, far longer than a file name may be.
  CellRecord second = MakeCell(run_id_, 1, 8);
  second.cell_id = std::string(400, 'k') + "/bs=64,device=cuda:0#r0";
  Status put = store_->PutCell(second);
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.error().kind, ErrorKind::kUnavailable);
  auto files = store_->SpilledFiles(run_id_);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(put.error().message.find("the server is away"), std::string::npos) << put.error().message;
  EXPECT_NE(put.error().message.find(files[0]), std::string::npos) << put.error().message;
  EXPECT_NE(put.error().message.find("dlbench run MATRIX --resume " + std::to_string(run_id_)),
            std::string::npos)
      << put.error().message;
  EXPECT_EQ(put.error().message.find('\n'), std::string::npos);
  ASSERT_FALSE(store_->PutCell(MakeCell(run_id_, 2, 3)).ok());
  EXPECT_EQ(store_->SpilledFiles(run_id_).size(), 2u);
  EXPECT_EQ(StoredIds(), (std::set<std::string>{"c0"}));
  EXPECT_FALSE(store_->FinishedCellIds(run_id_).ok())
      << "still away: the spilled cells cannot be counted yet";

  down_ = false;
  const int puts_before = flaky_->puts;
  ASSERT_TRUE(store_->PutCell(MakeCell(run_id_, 3, 4)).ok());
  EXPECT_EQ(flaky_->puts - puts_before, 3) << "two spilled cells, then the new one";
  EXPECT_TRUE(store_->SpilledFiles(run_id_).empty());
  EXPECT_FALSE(std::filesystem::exists(dir_.File("spill/run-" + std::to_string(run_id_))));
  EXPECT_EQ(StoredIds(), (std::set<std::string>{"c0", second.cell_id, "c2", "c3"}));
  auto cells = store_->GetCells(run_id_, CellQuery{true, true, 1});
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ(cells->size(), 1u);
  EXPECT_EQ(CellToJson((*cells)[0]), CellToJson(second));
}

TEST_F(SpillStoreTest, ResumeAndTheRunStatusStoreSpilledCells) {
  down_ = true;
  ASSERT_FALSE(store_->PutCell(MakeCell(run_id_, 0, 5)).ok());
  down_ = false;
  // A new SpillingStore on the same folder: what `dlbench run --resume` opens.
  auto sqlite = OpenSqliteStore(dir_.File("inner.db"));
  ASSERT_TRUE(sqlite.ok());
  SpillingStore resumed(std::move(*sqlite), dir_.File("spill"));
  EXPECT_EQ(*resumed.FinishedCellIds(run_id_), (std::set<std::string>{"c0"}));
  EXPECT_TRUE(resumed.SpilledFiles(run_id_).empty());

  down_ = true;
  ASSERT_FALSE(store_->PutCell(MakeCell(run_id_, 1, 5)).ok());
  down_ = false;
  ASSERT_TRUE(store_->SetRunStatus(run_id_, record::RunStatus::kCompleted, 99).ok());
  EXPECT_EQ(StoredIds(), (std::set<std::string>{"c0", "c1"}));
}

TEST_F(SpillStoreTest, OtherFailuresAreNotSpilledAndADamagedFileStays) {
  Status no_run = store_->PutCell(MakeCell(run_id_ + 1, 0));
  ASSERT_FALSE(no_run.ok());
  EXPECT_EQ(no_run.error().kind, ErrorKind::kNotFound);
  CellRecord twice = MakeCell(run_id_, 0);
  twice.metrics.push_back(twice.metrics[0]);
  EXPECT_EQ(store_->PutCell(twice).error().kind, ErrorKind::kInvalidInput);
  EXPECT_TRUE(store_->SpilledFiles(run_id_).empty());
  EXPECT_TRUE(store_->SpilledFiles(run_id_ + 1).empty());

  const std::string damaged = dir_.File("spill/run-" + std::to_string(run_id_) + "/c9.cell.json");
  ASSERT_TRUE(MakeDirs(dir_.File("spill/run-" + std::to_string(run_id_))).ok());
  ASSERT_TRUE(
      WriteFileAtomic(damaged, "{\"format\": \"dlbench-spilled-cell\", \"version\": 1, \"cell\"").ok());
  Status put = store_->PutCell(MakeCell(run_id_, 1));
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.error().kind, ErrorKind::kStore);
  EXPECT_NE(put.error().message.find(damaged), std::string::npos) << put.error().message;
  EXPECT_TRUE(std::filesystem::exists(damaged));
}

TEST(SpillDirTest, OneFolderPerStoreNamedWithoutPasswordOrQuery) {
  const char* old = std::getenv("DLBENCH_SPILL_DIR");
  const std::string saved = old != nullptr ? old : "";
  setenv("DLBENCH_SPILL_DIR", "/var/tmp/spill", 1);
  EXPECT_EQ(DefaultSpillDir("postgresql://alice:s3cret@db.example:5432/bench?sslmode=require"),
            "/var/tmp/spill/postgresql_alice_db.example_5432_bench");
  EXPECT_EQ(DefaultSpillDir("postgresql://alice@db.example:5432/bench"),
            "/var/tmp/spill/postgresql_alice_db.example_5432_bench");
  EXPECT_EQ(DefaultSpillDir("postgres://db/x"), "/var/tmp/spill/postgres_db_x");
  unsetenv("DLBENCH_SPILL_DIR");
  setenv("XDG_STATE_HOME", "/state", 1);
  EXPECT_EQ(DefaultSpillDir("postgres://db/x"), "/state/dlbench/spill/postgres_db_x");
  unsetenv("XDG_STATE_HOME");
  if (!saved.empty()) setenv("DLBENCH_SPILL_DIR", saved.c_str(), 1);
}

}  // namespace
}  // namespace dlbench::store
