// The backends of the shared ResultStore suite (store_suite_test_util.h), the comparison of a cell
// as it reads back, and the suite's instantiation for both backends.
#include <cmath>

#include "store/sqlite_store.h"
#include "store/store_suite_test_util.h"
#include "store/store_test_util.h"
#ifdef DLBENCH_HAVE_POSTGRES
#include "store/postgres/pg_store.h"
#include "store/postgres/pg_test_util.h"
#endif

namespace dlbench::store::testing {
namespace {

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
}  // namespace

std::unique_ptr<Backend> MakeBackend(const std::string& name) {
#ifdef DLBENCH_HAVE_POSTGRES
  if (name == "postgres") return std::make_unique<PostgresBackend>();
#endif
  if (name == "sqlite") return std::make_unique<SqliteBackend>();
  return nullptr;
}

namespace {

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

}  // namespace

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

void StoreTest::SetUp() {
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

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::Values("sqlite", "postgres"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace dlbench::store::testing
