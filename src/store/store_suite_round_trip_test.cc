// StoreTest (store_suite_test_util.h), on both backends: every field of a run and a cell
// round-trips (NULLs, present bits, JSON with unicode and 64-bit integers, uint64 seeds, NaN, a
// load cell's records), environments are shared only by equal fingerprints, and text that is not
// UTF-8 is kept or replaced as the backend documents.
#include <gtest/gtest.h>

#include <limits>

#include "store/store_suite_test_util.h"
#include "store/store_test_util.h"

namespace dlbench::store::testing {
namespace {

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

}  // namespace
}  // namespace dlbench::store::testing
