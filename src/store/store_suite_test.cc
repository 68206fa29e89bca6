// Every ResultStore backend, one suite (StoreTest, instantiated for "sqlite" and "postgres"):
// every field round-trips (NULLs, present bits, JSON with unicode and 64-bit integers, uint64
// seeds, NaN), PutCell replaces atomically, runs resolve by id/tag/latest and keep their uuid,
// history is oldest first, a reader works while a writer holds its transaction open, and a million
// steps fit in one transaction. The PostgreSQL instances run against the test cluster
// (store/postgres/pg_test_util.h) and skip without one.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>

#include "store/sqlite_store.h"
#include "store/store_codec.h"
#include "store/store_test_util.h"
#ifdef DLBENCH_HAVE_POSTGRES
#include "store/postgres/pg_store.h"
#include "store/postgres/pg_test_util.h"
#endif

namespace dlbench::store {
namespace {

using testing::MakeCell;
using testing::MakeRun;
using testing::ScratchDir;

constexpr CellQuery kEverything{true, true, std::nullopt};

// What the suite needs of a backend besides the ResultStore: opening the test's store again (a
// second connection), raw SQL for what a user sees in the database's own shell, and a write
// transaction held open.
class Backend {
 public:
  virtual ~Backend() = default;
  // Empty when ready; else why not (the test is skipped, or fails when it must run).
  virtual std::string Prepare() = 0;
  virtual Result<std::unique_ptr<ResultStore>> Open() = 0;
  // The first column of the first row of `sql` as text ("" for NULL); a failure fails the test.
  virtual std::string Query(const std::string& sql) = 0;
  virtual Status Execute(const std::string& sql) = 0;
  // Runs `sql` in a write transaction that stays open (uncommitted) until the handle dies.
  virtual std::shared_ptr<void> HoldUncommitted(const std::string& sql) = 0;
  // Child rows whose cell row is gone (the foreign keys should make this 0).
  virtual std::string OrphanRows() = 0;
  // The SQL that reads params.model of a cell, in this backend's JSON functions.
  virtual std::string ModelOfParams() const = 0;
  virtual bool keeps_invalid_utf8() const = 0;
};

class SqliteBackend final : public Backend {
 public:
  std::string Prepare() override { return dir_.ok() ? "" : "cannot make a scratch directory"; }
  Result<std::unique_ptr<ResultStore>> Open() override { return OpenSqliteStore(dir_.File("results.db")); }
  std::string Query(const std::string& sql) override {
    auto text = Db().QueryText(sql);
    EXPECT_TRUE(text.ok()) << sql << ": " << text.error().message;
    return text.ok() ? *text : "";
  }
  Status Execute(const std::string& sql) override { return Db().Execute(sql); }
  std::shared_ptr<void> HoldUncommitted(const std::string& sql) override {
    struct Held {
      sqlite::Database db;
      std::optional<sqlite::Transaction> tx;
    };
    auto held = std::make_shared<Held>();
    auto db = sqlite::Database::Open(dir_.File("results.db"));
    EXPECT_TRUE(db.ok());
    held->db = std::move(*db);
    auto tx = sqlite::Transaction::Begin(held->db, sqlite::Transaction::Mode::kImmediate);
    EXPECT_TRUE(tx.ok());
    held->tx.emplace(std::move(*tx));
    EXPECT_TRUE(held->db.Execute(sql).ok()) << sql;
    return held;
  }
  std::string OrphanRows() override { return Query("SELECT count(*) FROM pragma_foreign_key_check"); }
  std::string ModelOfParams() const override { return "json_extract(params, '$.model')"; }
  bool keeps_invalid_utf8() const override { return true; }

 private:
  sqlite::Database& Db() {
    if (!db_) {
      auto db = sqlite::Database::Open(dir_.File("results.db"));
      EXPECT_TRUE(db.ok()) << db.error().message;
      db_.emplace(std::move(*db));
    }
    return *db_;
  }
  ScratchDir dir_;
  std::optional<sqlite::Database> db_;
};

#ifdef DLBENCH_HAVE_POSTGRES
class PostgresBackend final : public Backend {
 public:
  std::string Prepare() override {
    auto cluster = testing::TestCluster();
    if (std::holds_alternative<std::string>(cluster)) return std::get<std::string>(cluster);
    database_.emplace(std::get<testing::PgCluster>(cluster), "suite");
    return database_->ok() ? "" : "cannot create a test database: " + database_->error();
  }
  Result<std::unique_ptr<ResultStore>> Open() override {
    auto store = PostgresStore::Open(database_->url());
    if (!store.ok()) return store.error();
    return std::unique_ptr<ResultStore>(std::move(*store));
  }
  std::string Query(const std::string& sql) override {
    auto rows = Connection().Query(sql);
    EXPECT_TRUE(rows.ok()) << sql << ": " << rows.error().message;
    if (!rows.ok() || rows->size() == 0) return "";
    return rows->Text(0, 0);
  }
  Status Execute(const std::string& sql) override { return Connection().Execute(sql); }
  std::shared_ptr<void> HoldUncommitted(const std::string& sql) override {
    auto held = std::make_shared<pg::Connection>();
    auto connection = pg::Connection::Open(database_->url());
    EXPECT_TRUE(connection.ok());
    *held = std::move(*connection);
    EXPECT_TRUE(held->Execute("BEGIN").ok());
    EXPECT_TRUE(held->Execute(sql).ok()) << sql;
    return held;
  }
  std::string OrphanRows() override {
    return Query(
        "SELECT (SELECT count(*) FROM steps s WHERE NOT EXISTS (SELECT 1 FROM cells c WHERE c.id = "
        "s.cell_id)) + "
        "(SELECT count(*) FROM metrics m WHERE NOT EXISTS (SELECT 1 FROM cells c WHERE c.id = m.cell_id)) + "
        "(SELECT count(*) FROM series x WHERE NOT EXISTS (SELECT 1 FROM cells c WHERE c.id = x.cell_id))");
  }
  std::string ModelOfParams() const override { return "params::jsonb ->> 'model'"; }
  bool keeps_invalid_utf8() const override { return false; }

 private:
  pg::Connection& Connection() {
    if (!connection_) {
      auto connection = pg::Connection::Open(database_->url());
      EXPECT_TRUE(connection.ok()) << connection.error().message;
      connection_.emplace(std::move(*connection));
    }
    return *connection_;
  }
  std::optional<testing::ScratchDatabase> database_;
  std::optional<pg::Connection> connection_;
};
#endif

std::unique_ptr<Backend> MakeBackend(const std::string& name) {
#ifdef DLBENCH_HAVE_POSTGRES
  if (name == "postgres") return std::make_unique<PostgresBackend>();
#endif
  if (name == "sqlite") return std::make_unique<SqliteBackend>();
  return nullptr;
}

class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = MakeBackend(GetParam());
    if (!backend_) {
      if (GetParam() == "postgres" && !RequirePostgres()) {
        GTEST_SKIP() << "this build has no PostgreSQL store (libpq was not found)";
      }
      FAIL() << "no backend " << GetParam();
    }
    const std::string why = backend_->Prepare();
    if (!why.empty()) {
      if (!RequirePostgres()) GTEST_SKIP() << why;
      FAIL() << why << " (DLBENCH_REQUIRE_POSTGRES=1)";
    }
    auto store = backend_->Open();
    ASSERT_TRUE(store.ok()) << store.error().message;
    store_ = std::move(*store);
  }
  static bool RequirePostgres() {
    const char* required = std::getenv("DLBENCH_REQUIRE_POSTGRES");
    return required != nullptr && std::string(required) == "1";
  }
  std::int64_t Begin(const RunRecord& run) {
    auto id = store_->BeginRun(run);
    EXPECT_TRUE(id.ok()) << id.error().message;
    return id.ok() ? *id : -1;
  }
  std::string Count(const std::string& table) {
    // Table names come from the test's own constants, never from data.
    return backend_->Query("SELECT count(*) FROM " + table);
  }
  std::string Query(const std::string& sql) { return backend_->Query(sql); }
  Status Exec(const std::string& sql) { return backend_->Execute(sql); }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<ResultStore> store_;
};

// A step as it reads back: absent phases are 0 and `present` keeps only the known bits.
record::StepRecord Normalised(record::StepRecord r) {
  r.present &= record::kHasDataWait | record::kHasCompute | record::kHasComm;
  if (!(r.present & record::kHasDataWait)) r.data_wait_ns = 0;
  if (!(r.present & record::kHasCompute)) r.compute_ns = 0;
  if (!(r.present & record::kHasComm)) r.comm_ns = 0;
  return r;
}

void ExpectSameDouble(double a, double b, const std::string& what) {
  if (std::isnan(a)) {
    EXPECT_TRUE(std::isnan(b)) << what;
  } else {
    EXPECT_EQ(a, b) << what;
  }
}

void ExpectSameCell(const CellRecord& want, const CellRecord& got, bool with_children) {
  EXPECT_EQ(got.run_id, want.run_id);
  EXPECT_EQ(got.index, want.index);
  EXPECT_EQ(got.cell_id, want.cell_id);
  EXPECT_EQ(got.key, want.key);
  EXPECT_EQ(got.label, want.label);
  EXPECT_EQ(got.params, want.params);
  EXPECT_EQ(got.params.dump(), want.params.dump());
  EXPECT_EQ(got.effective, want.effective);
  EXPECT_EQ(got.hello, want.hello);
  EXPECT_EQ(got.repetition, want.repetition);
  EXPECT_EQ(got.seed, want.seed);
  EXPECT_EQ(got.outcome, want.outcome);
  EXPECT_EQ(got.message, want.message);
  EXPECT_EQ(got.verdict, want.verdict);
  EXPECT_EQ(got.verdict_reasons, want.verdict_reasons);
  EXPECT_EQ(got.window, want.window);
  EXPECT_EQ(got.warmup_rule, want.warmup_rule);
  EXPECT_EQ(got.stop_reason, want.stop_reason);
  EXPECT_EQ(got.stdout_path, want.stdout_path);
  EXPECT_EQ(got.stderr_path, want.stderr_path);
  EXPECT_EQ(got.started_wall_ns, want.started_wall_ns);
  EXPECT_EQ(got.finished_wall_ns, want.finished_wall_ns);
  EXPECT_EQ(got.extras, want.extras);
  ASSERT_EQ(got.metrics.size(), want.metrics.size());
  for (std::size_t i = 0; i < want.metrics.size(); ++i) {
    EXPECT_EQ(got.metrics[i].name, want.metrics[i].name);
    ExpectSameDouble(want.metrics[i].value, got.metrics[i].value, want.metrics[i].name);
    EXPECT_EQ(got.metrics[i].unit, want.metrics[i].unit);
  }
  if (!with_children) {
    EXPECT_TRUE(got.steps.empty());
    EXPECT_TRUE(got.series.empty());
    return;
  }
  ASSERT_EQ(got.steps.size(), want.steps.size());
  for (std::size_t i = 0; i < want.steps.size(); ++i) {
    const record::StepRecord w = Normalised(want.steps[i].record);
    const record::StepRecord& g = got.steps[i].record;
    EXPECT_EQ(got.steps[i].rank, want.steps[i].rank) << "step " << i;
    EXPECT_EQ(g.start_ns, w.start_ns) << "step " << i;
    EXPECT_EQ(g.end_ns, w.end_ns) << "step " << i;
    EXPECT_EQ(g.samples, w.samples) << "step " << i;
    EXPECT_EQ(g.present, w.present) << "step " << i;
    EXPECT_EQ(g.data_wait_ns, w.data_wait_ns) << "step " << i;
    EXPECT_EQ(g.compute_ns, w.compute_ns) << "step " << i;
    EXPECT_EQ(g.comm_ns, w.comm_ns) << "step " << i;
  }
  ASSERT_EQ(got.series.size(), want.series.size());
  for (std::size_t i = 0; i < want.series.size(); ++i) {
    EXPECT_EQ(got.series[i].t_ns, want.series[i].t_ns);
    EXPECT_EQ(got.series[i].series, want.series[i].series);
    ExpectSameDouble(want.series[i].value, got.series[i].value, want.series[i].series);
  }
}

TEST_P(StoreTest, RunRoundTripsEveryField) {
  RunRecord run = MakeRun("nightly \xE2\x80\x94 \xE6\x97\xA5\xE6\x9C\xAC");
  run.environment["driver"] = "550.54.15";
  run.environment["gpu_uuid_bits"] = std::numeric_limits<std::uint64_t>::max();
  run.environment["nested"] = {{"cudnn", {9, 1, 0}}, {"note", "\xF0\x9F\x9A\x80 \"quoted\"\n"}};
  run.tags = {"baseline", "amd"};
  run.selection.only = {"model=resnet50,batch_size!=64", "\xE6\x97\xA5 'quoted' \"both\""};
  run.selection.shard = "2/3";
  run.sweep = "slurm-4242.0";
  run.sweep_cells = 9;
  const std::int64_t id = Begin(run);

  auto got = store_->GetRun(id);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->id, id);
  EXPECT_EQ(got->name, run.name);
  EXPECT_EQ(got->matrix_path, run.matrix_path);
  EXPECT_EQ(got->matrix_text, run.matrix_text);
  EXPECT_EQ(got->started_wall_ns, run.started_wall_ns);
  EXPECT_EQ(got->finished_wall_ns, std::nullopt);
  EXPECT_EQ(got->status, record::RunStatus::kRunning);
  EXPECT_EQ(got->environment_hash, run.environment_hash);
  EXPECT_EQ(got->environment, run.environment);
  EXPECT_EQ(got->environment["gpu_uuid_bits"].get<std::uint64_t>(),
            std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(got->tool_version, run.tool_version);
  EXPECT_EQ(got->git_commit, run.git_commit);
  EXPECT_EQ(got->total_cells, run.total_cells);
  EXPECT_EQ(got->selection.only, run.selection.only);
  EXPECT_EQ(got->selection.shard, "2/3");
  EXPECT_EQ(got->sweep, "slurm-4242.0");
  EXPECT_EQ(got->sweep_cells, 9);
  EXPECT_EQ(got->tags, (std::vector<std::string>{"amd", "baseline"}));

  ASSERT_TRUE(store_->SetRunStatus(id, record::RunStatus::kCompleted, 1'700'000'100'000'000'000).ok());
  got = store_->GetRun(id);
  EXPECT_EQ(got->status, record::RunStatus::kCompleted);
  EXPECT_EQ(Query("SELECT status FROM runs WHERE id = " + std::to_string(id)), "completed");
  EXPECT_EQ(got->finished_wall_ns, 1'700'000'100'000'000'000);

  // A status only a foreign writer could store is refused on reading, naming it.
  ASSERT_TRUE(Exec("UPDATE runs SET status = 'done' WHERE id = " + std::to_string(id)).ok());
  auto bad = store_->GetRun(id);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::kStore);
  EXPECT_NE(bad.error().message.find("'done'"), std::string::npos) << bad.error().message;
  EXPECT_EQ(store_->SetRunStatus(id + 7, record::RunStatus::kFailed, std::nullopt).error().kind,
            ErrorKind::kNotFound);
  EXPECT_EQ(store_->GetRun(id + 7).error().kind, ErrorKind::kNotFound);
}

TEST_P(StoreTest, RunSelectionIsStoredAsJsonAndAnEmptyOneAsAnEmptyObject) {
  const std::int64_t whole = Begin(MakeRun("whole"));
  RunRecord sharded = MakeRun("sharded");
  sharded.selection.shard = "1/2";
  const std::int64_t shard = Begin(sharded);
  RunRecord filtered = MakeRun("filtered");
  filtered.selection.only = {"model=a", "model=b"};
  const std::int64_t only = Begin(filtered);

  // The column is what the docs promise to `json_extract`: keys only when set.
  auto selection_of = [&](std::int64_t id) {
    return Query("SELECT selection FROM runs WHERE id = " + std::to_string(id));
  };
  EXPECT_EQ(selection_of(whole), "{}");
  EXPECT_EQ(selection_of(shard), R"({"shard":"1/2"})");
  EXPECT_EQ(selection_of(only), R"({"only":["model=a","model=b"]})");
  EXPECT_TRUE(store_->GetRun(whole)->selection.empty());
  EXPECT_EQ(store_->GetRun(shard)->selection, sharded.selection);
  auto listed = store_->ListRuns();
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_EQ((*listed)[0].selection, filtered.selection) << "newest first";

  // A value no dlbench writes is a store error naming the run, not a silently empty selection.
  ASSERT_TRUE(Exec("UPDATE runs SET selection = '{\"shard\": 2}' WHERE id = " + std::to_string(shard)).ok());
  auto bad = store_->GetRun(shard);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::kStore);
  EXPECT_NE(bad.error().message.find("selection of run " + std::to_string(shard)), std::string::npos)
      << bad.error().message;
}

TEST(RunSelectionJsonTest, ReadsWhatItWritesAndRefusesOtherShapes) {
  const RunSelection cases[] = {{},
                                {{}, "3/4"},
                                {{"a", "b=1,c!=2"}, ""},
                                {{"x"}, "1/1"},
                                {{}, "", {"measure.max_time_s=10", "measure.min_steps=5"}}};
  for (const RunSelection& selection : cases) {
    auto back = record::RunSelectionFromJson(record::RunSelectionToJson(selection));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, selection) << record::RunSelectionToJson(selection).dump();
  }
  for (const char* bad : {"[]", "\"2/2\"", "null", R"({"only": "a"})", R"({"only": [1]})", R"({"shard": 2})",
                          R"({"set": "measure.x=1"})", R"({"set": [2]})", R"({"exclude": ["a"]})"}) {
    auto read = record::RunSelectionFromJson(nlohmann::json::parse(bad));
    ASSERT_FALSE(read.ok()) << bad;
    EXPECT_EQ(read.error().kind, ErrorKind::kStore) << bad;
  }
}

TEST_P(StoreTest, EnvironmentsAreSharedOnlyWhenTheWholeFingerprintMatches) {
  Begin(MakeRun("a"));
  Begin(MakeRun("b"));
  EXPECT_EQ(Count("environments"), "1");
  RunRecord other_host = MakeRun("c");
  other_host.environment["hostname"] = "node7";  // same comparability hash, different record
  const std::int64_t c = Begin(other_host);
  Begin(MakeRun("d", "env-hash-2"));
  EXPECT_EQ(Count("environments"), "3");
  EXPECT_EQ(store_->GetRun(c)->environment["hostname"], "node7");
}

TEST_P(StoreTest, CellRoundTripsEveryFieldIncludingNullsAndPresentBits) {
  const std::int64_t run_id = Begin(MakeRun("r"));
  CellRecord full = MakeCell(run_id, 0, 16);
  full.seed = std::numeric_limits<std::uint64_t>::max();
  full.params["comment"] = "\xC2\xB5s \xE2\x80\x93 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x9A\x80 tab\t nul\\0";
  full.params["big"] = std::numeric_limits<std::uint64_t>::max();
  full.params["neg"] = std::numeric_limits<std::int64_t>::min();
  full.params["third"] = 1.0 / 3.0;
  full.extras["tiny"] = 4.9406564584124654e-324;
  full.metrics.push_back({"energy_j", std::numeric_limits<double>::quiet_NaN(), "J"});
  full.metrics.push_back({"headroom", -std::numeric_limits<double>::infinity(), "ratio"});
  full.series.push_back({12'200'000'000LL, "gpu0.power_w", std::numeric_limits<double>::quiet_NaN()});
  full.steps[3].record.present |= 1u << 7;  // an unknown bit: not kept (sqlite_store.h)
  full.steps[2].record.data_wait_ns = 999;  // absent (bit clear): stored as NULL, reads back 0

  CellRecord sparse = MakeCell(run_id, 1, 0);
  sparse.window = std::nullopt;
  sparse.seed = 0;
  sparse.params = nlohmann::json::object();
  sparse.verdict_reasons = nlohmann::json::array();
  sparse.metrics.clear();
  sparse.series.clear();
  sparse.outcome = record::Outcome::kCrashed;
  sparse.message = "runner died with SIGSEGV";
  sparse.verdict = record::Verdict::kNotApplicable;

  ASSERT_TRUE(store_->PutCell(full).ok());
  ASSERT_TRUE(store_->PutCell(sparse).ok());
  auto cells = store_->GetCells(run_id, kEverything);
  ASSERT_TRUE(cells.ok()) << cells.error().message;
  ASSERT_EQ(cells->size(), 2u);
  ExpectSameCell(full, (*cells)[0], true);
  ExpectSameCell(sparse, (*cells)[1], true);

  // The encodings a user sees in the database's own shell (docs/storage.md).
  EXPECT_EQ(Query("SELECT seed FROM cells WHERE cell_id = 'c0'"), "18446744073709551615");
  EXPECT_EQ(Query("SELECT count(*) FROM cells WHERE cell_id = 'c1' AND warmup_steps IS NULL AND "
                  "measured_steps IS NULL"),
            "1");
  EXPECT_EQ(Query("SELECT warmup_steps || '+' || measured_steps FROM cells WHERE cell_id = 'c0'"),
            std::to_string(full.window->first_step) + "+" + std::to_string(full.window->steps));
  EXPECT_EQ(Query("SELECT count(*) FROM metrics WHERE name = 'energy_j' AND value IS NULL"), "1");
  // MakeCell cycles present through 0..7, so of 16 steps exactly 8 lack each phase.
  EXPECT_EQ(Query("SELECT count(*) FROM steps WHERE data_wait_ns IS NULL"), "8");
  EXPECT_EQ(Query("SELECT count(*) FROM steps WHERE comm_ns IS NULL"), "8");
  EXPECT_EQ(Query("SELECT " + backend_->ModelOfParams() + " FROM cells WHERE cell_id = 'c0'"), "resnet50");

  auto only_second = store_->GetCells(run_id, CellQuery{false, false, 1});
  ASSERT_TRUE(only_second.ok());
  ASSERT_EQ(only_second->size(), 1u);
  ExpectSameCell(sparse, (*only_second)[0], false);
  auto without_children = store_->GetCells(run_id, CellQuery{});
  ASSERT_TRUE(without_children.ok());
  ExpectSameCell(full, (*without_children)[0], false);
}

// A load cell (docs/load.md, ADR 0008): its query records are series points at their scheduled
// times, its measured queries the window, its verdict one of the load verdicts; all read back.
TEST_P(StoreTest, ALoadCellsQueryRecordsAndVerdictRoundTrip) {
  const std::int64_t run_id = Begin(MakeRun("load"));
  CellRecord cell = MakeCell(run_id, 0, 0);
  cell.steps.clear();
  cell.series.clear();
  cell.window = record::MeasuredWindow{0, 459};
  cell.verdict = record::Verdict::kOverBound;
  cell.verdict_reasons = {"over_bound: p99 12.4 ms > latency_bound_ms 10 (12 of 459 queries over)"};
  cell.metrics = {{"query_latency_p99_ns", 12.4e6, "ns"}, {"load_queries", 459, "queries"}};
  constexpr int kQueries = 5000;
  for (int i = 0; i < kQueries; ++i) {
    const std::int64_t scheduled = 1'200'000'000'000 + std::int64_t{i} * 1'000'000;
    cell.series.push_back({scheduled, "load.latency_ns", 2e6 + i});
    cell.series.push_back({scheduled, "load.delay_ns", 0});
  }
  ASSERT_TRUE(store_->PutCell(cell).ok());
  auto cells = store_->GetCells(run_id, kEverything);
  ASSERT_TRUE(cells.ok()) << cells.error().message;
  ASSERT_EQ(cells->size(), 1u);
  ExpectSameCell(cell, (*cells)[0], true);
  EXPECT_EQ((*cells)[0].verdict, record::Verdict::kOverBound);
  EXPECT_EQ(Query("SELECT verdict FROM cells WHERE cell_id = 'c0'"), "over_bound");
  EXPECT_EQ(Query("SELECT count(*) FROM series WHERE series = 'load.latency_ns'"), std::to_string(kQueries));
}

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

TEST_P(StoreTest, ResolveRunCountsBackWithTildeAndPrevious) {
  const std::int64_t a = Begin(MakeRun("a"));
  const std::int64_t b = Begin(MakeRun("b"));
  const std::int64_t c = Begin(MakeRun("c"));
  ASSERT_TRUE(store_->SetTag(b, "nightly").ok());
  EXPECT_EQ(*store_->ResolveRun("latest~1"), b);
  EXPECT_EQ(*store_->ResolveRun("previous"), b);
  EXPECT_EQ(*store_->ResolveRun("latest~2"), a);
  EXPECT_EQ(*store_->ResolveRun("nightly~1"), a);
  EXPECT_EQ(*store_->ResolveRun(std::to_string(c) + "~2"), a);
  struct Miss {
    std::string ref;
    ErrorKind kind;
    std::string message_part;
  };
  const Miss misses[] = {
      {"latest~3", ErrorKind::kNotFound, "2 runs come before run 3"},
      {"nightly~2", ErrorKind::kNotFound, "1 run comes before run 2"},
      {"latest~0", ErrorKind::kInvalidInput, "expected RUN~N"},
      {"latest~", ErrorKind::kInvalidInput, "expected RUN~N"},
      {"latest~x", ErrorKind::kInvalidInput, "expected RUN~N"},
      {"latest~-1", ErrorKind::kInvalidInput, "expected RUN~N"},
      {"latest~99999999999", ErrorKind::kInvalidInput, "expected RUN~N"},
      {"~1", ErrorKind::kInvalidInput, "expected RUN~N"},
      {"previous~1", ErrorKind::kInvalidInput, "write latest~N"},
      {"ghost~1", ErrorKind::kNotFound, "known tags: nightly"},
  };
  for (const Miss& m : misses) {
    auto r = store_->ResolveRun(m.ref);
    ASSERT_FALSE(r.ok()) << m.ref;
    EXPECT_EQ(r.error().kind, m.kind) << m.ref;
    EXPECT_NE(r.error().message.find(m.message_part), std::string::npos)
        << m.ref << ": " << r.error().message;
  }
}

TEST_P(StoreTest, ResolveRunByIdTagAndLatest) {
  auto none = store_->ResolveRun("latest");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().kind, ErrorKind::kNotFound);

  const std::int64_t a = Begin(MakeRun("a"));
  const std::int64_t b = Begin(MakeRun("b"));
  auto untagged = store_->ResolveRun("baseline");
  ASSERT_FALSE(untagged.ok());
  EXPECT_NE(untagged.error().message.find("no tags yet"), std::string::npos) << untagged.error().message;

  ASSERT_TRUE(store_->SetTag(a, "baseline").ok());
  ASSERT_TRUE(store_->SetTag(a, "v1.0").ok());
  EXPECT_EQ(*store_->ResolveRun("latest"), b);
  EXPECT_EQ(*store_->ResolveRun(std::to_string(a)), a);
  EXPECT_EQ(*store_->ResolveRun("baseline"), a);
  ASSERT_TRUE(store_->SetTag(b, "baseline").ok()) << "setting a tag again moves it";
  EXPECT_EQ(*store_->ResolveRun("baseline"), b);

  struct Miss {
    std::string ref;
    ErrorKind kind;
    std::string message_part;
  };
  const Miss misses[] = {
      {"nightly", ErrorKind::kNotFound, "known tags: baseline, v1.0"},
      {std::to_string(b + 1), ErrorKind::kNotFound, "no run with id"},
      {"99999999999999999999999", ErrorKind::kNotFound, "no run with id"},
      {"", ErrorKind::kInvalidInput, "empty"},
  };
  for (const Miss& m : misses) {
    auto r = store_->ResolveRun(m.ref);
    ASSERT_FALSE(r.ok()) << m.ref;
    EXPECT_EQ(r.error().kind, m.kind) << m.ref;
    EXPECT_NE(r.error().message.find(m.message_part), std::string::npos) << r.error().message;
  }
  for (const char* bad_tag : {"", "42", "latest", "previous", "v1~2", "sweep:nightly"}) {
    Status s = store_->SetTag(a, bad_tag);
    ASSERT_FALSE(s.ok()) << bad_tag;
    EXPECT_EQ(s.error().kind, ErrorKind::kInvalidInput) << bad_tag;
  }
  EXPECT_EQ(store_->SetTag(b + 1, "ghost").error().kind, ErrorKind::kNotFound);
}

TEST_P(StoreTest, ListRunsNewestFirstWithTags) {
  const std::int64_t a = Begin(MakeRun("a"));
  const std::int64_t b = Begin(MakeRun("b"));
  const std::int64_t c = Begin(MakeRun("c"));
  ASSERT_TRUE(store_->SetTag(a, "old").ok());
  ASSERT_TRUE(store_->SetTag(c, "new").ok());
  ASSERT_TRUE(store_->SetTag(c, "candidate").ok());
  auto runs = store_->ListRuns();
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[0].id, c);
  EXPECT_EQ((*runs)[1].id, b);
  EXPECT_EQ((*runs)[2].id, a);
  EXPECT_EQ((*runs)[0].tags, (std::vector<std::string>{"candidate", "new"}));
  EXPECT_TRUE((*runs)[1].tags.empty());
  EXPECT_EQ((*runs)[2].tags, (std::vector<std::string>{"old"}));
}

TEST_P(StoreTest, CellHistoryIsOldestRunFirstAndOnlyThatKey) {
  std::vector<std::int64_t> runs;
  for (int i = 0; i < 3; ++i) {
    RunRecord run = MakeRun("run" + std::to_string(i));
    // Wall clocks go backwards here on purpose: history follows creation order, not clocks.
    run.started_wall_ns -= i * 1'000'000'000LL;
    runs.push_back(Begin(run));
    for (int index = 0; index < 2; ++index) {
      CellRecord cell = MakeCell(runs.back(), index);
      cell.metrics = {{"samples_per_s", 1000.0 + i, "1/s"}};
      ASSERT_TRUE(store_->PutCell(cell).ok());
    }
  }
  const std::string key = MakeCell(0, 1).key;
  auto history = store_->CellHistory(key);
  ASSERT_TRUE(history.ok()) << history.error().message;
  ASSERT_EQ(history->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const auto& [run, cell] = (*history)[i];
    EXPECT_EQ(run.id, runs[i]);
    EXPECT_EQ(run.name, "run" + std::to_string(i));
    EXPECT_EQ(cell.run_id, runs[i]);
    EXPECT_EQ(cell.key, key);
    ASSERT_EQ(cell.metrics.size(), 1u);
    EXPECT_EQ(cell.metrics[0].value, 1000.0 + i);
    EXPECT_TRUE(cell.steps.empty());
  }
  EXPECT_TRUE(store_->CellHistory("no/such/key")->empty());
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

TEST_P(StoreTest, PlainTextThatIsNotUtf8IsStoredAsTheBackendDocuments) {
  const std::int64_t run_id = Begin(MakeRun("r"));
  CellRecord cell = MakeCell(run_id, 0);
  static constexpr char kMessage[] = "runner wrote \xFF and a NUL \0 on stderr";
  cell.message = std::string(kMessage, sizeof kMessage - 1);
  cell.series.push_back({12'300'000'000LL, "odd\tname\\x", 1.0});
  ASSERT_TRUE(store_->PutCell(cell).ok());
  auto cells = store_->GetCells(run_id, kEverything);
  ASSERT_TRUE(cells.ok()) << cells.error().message;
  ASSERT_EQ(cells->size(), 1u);
  // SQLite keeps the bytes; PostgreSQL's TEXT cannot, and each bad byte or NUL reads as U+FFFD.
  const std::string expected =
      backend_->keeps_invalid_utf8()
          ? cell.message
          : std::string("runner wrote \xEF\xBF\xBD and a NUL \xEF\xBF\xBD on stderr");
  EXPECT_EQ((*cells)[0].message, expected);
  EXPECT_EQ((*cells)[0].series.back().series, "odd\tname\\x") << "tabs and backslashes survive COPY";
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

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::Values("sqlite", "postgres"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace dlbench::store
