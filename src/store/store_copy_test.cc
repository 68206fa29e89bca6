// CopyRuns (`dlbench db copy`): everything of a run arrives (environment, cells with metrics,
// steps and series, status, tags); copying again changes nothing; selected runs only; a run copied
// part-way is completed by the next copy; a tag naming another run in the destination is left
// alone. The same between SQLite and PostgreSQL both ways when the test server is there.
#include "store/store_copy.h"

#include <gtest/gtest.h>

#include "store/spill_store.h"
#include "store/sqlite_store.h"
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

// A store with three runs: a completed tagged one, an interrupted one with an interrupted cell,
// and one on another environment.
void Fill(ResultStore& store) {
  RunRecord a = MakeRun("a");
  a.tags = {"baseline"};
  const std::int64_t ra = *store.BeginRun(a);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store.PutCell(MakeCell(ra, i, 40 + i)).ok());
  ASSERT_TRUE(store.SetRunStatus(ra, record::RunStatus::kCompleted, 1'700'000'500'000'000'000).ok());

  const std::int64_t rb = *store.BeginRun(MakeRun("b"));
  ASSERT_TRUE(store.PutCell(MakeCell(rb, 0, 7)).ok());
  CellRecord cut = MakeCell(rb, 1, 3);
  cut.outcome = record::Outcome::kInterrupted;
  ASSERT_TRUE(store.PutCell(cut).ok());
  ASSERT_TRUE(store.SetRunStatus(rb, record::RunStatus::kInterrupted, 1'700'000'600'000'000'000).ok());

  RunRecord c = MakeRun("c", "env-hash-2");
  c.environment["hostname"] = "node9";
  c.tags = {"candidate"};
  const std::int64_t rc = *store.BeginRun(c);
  ASSERT_TRUE(store.PutCell(MakeCell(rc, 0, 2)).ok());
}

// A store's runs and cells as JSON without the store's own ids: equal for two stores holding the
// same results.
nlohmann::json Contents(ResultStore& store) {
  nlohmann::json out = nlohmann::json::array();
  auto runs = store.ListRuns();
  EXPECT_TRUE(runs.ok());
  if (!runs.ok()) return out;
  for (auto it = runs->rbegin(); it != runs->rend(); ++it) {
    nlohmann::json run = {{"uuid", it->uuid},
                          {"name", it->name},
                          {"status", record::Name(it->status)},
                          {"finished", it->finished_wall_ns ? *it->finished_wall_ns : -1},
                          {"environment", it->environment},
                          {"hash", it->environment_hash},
                          {"tags", it->tags},
                          {"matrix", it->matrix_text},
                          {"selection", record::RunSelectionToJson(it->selection)}};
    auto cells = store.GetCells(it->id, kEverything);
    EXPECT_TRUE(cells.ok());
    nlohmann::json cell_json = nlohmann::json::array();
    for (CellRecord& cell : *cells) {
      cell.run_id = 0;
      cell_json.push_back(CellToJson(cell));
    }
    run["cells"] = cell_json;
    out.push_back(run);
  }
  return out;
}

TEST(StoreCopyTest, EverythingArrivesAndASecondCopyChangesNothing) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  auto from = OpenSqliteStore(dir.File("from.db"));
  auto to = OpenSqliteStore(dir.File("to.db"));
  ASSERT_TRUE(from.ok() && to.ok());
  Fill(**from);
  std::vector<std::string> notes;
  auto note = [&](const std::string& line) { notes.push_back(line); };
  auto first = CopyRuns(**from, **to, {}, note);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->runs_added, 3);
  EXPECT_EQ(first->cells_copied, 6);
  EXPECT_EQ(first->cells_present, 0);
  EXPECT_EQ(Contents(**to), Contents(**from));
  EXPECT_EQ(*(*to)->ResolveRun("baseline"), *(*to)->ResolveRun("1"));
  EXPECT_EQ((*to)->GetRun(3)->name, "c") << "oldest first: the destination's ids keep the order";

  const nlohmann::json before = Contents(**to);
  notes.clear();
  auto second = CopyRuns(**from, **to, {}, note);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(second->runs_added, 0);
  EXPECT_EQ(second->runs_existing, 3);
  EXPECT_EQ(second->cells_copied, 0);
  EXPECT_EQ(second->cells_present, 6);
  EXPECT_EQ(Contents(**to), before);
  EXPECT_EQ((*to)->ListRuns()->size(), 3u);
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_NE(notes[0].find("present as run 1; 0 cells copied, 3 already there"), std::string::npos)
      << notes[0];
}

TEST(StoreCopyTest, SelectedRunsAPartialCopyAndTagsThatNameAnotherRun) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  auto from = OpenSqliteStore(dir.File("from.db"));
  auto to = OpenSqliteStore(dir.File("to.db"));
  ASSERT_TRUE(from.ok() && to.ok());
  Fill(**from);
  // The destination has a run of its own tagged "candidate".
  const std::int64_t own = *(*to)->BeginRun(MakeRun("own"));
  ASSERT_TRUE((*to)->SetTag(own, "candidate").ok());

  std::vector<std::string> notes;
  auto note = [&](const std::string& line) { notes.push_back(line); };
  auto picked = CopyRuns(**from, **to, {"candidate"}, note);
  ASSERT_TRUE(picked.ok()) << picked.error().message;
  EXPECT_EQ(picked->runs_added, 1);
  EXPECT_EQ(picked->cells_copied, 1);
  EXPECT_EQ(*(*to)->ResolveRun("candidate"), own) << "the destination's tag is left alone";
  bool said = false;
  for (const std::string& n : notes)
    said |= n.find("tag 'candidate' already names run 1") != std::string::npos;
  EXPECT_TRUE(said) << "the skipped tag is reported";
  EXPECT_EQ(CopyRuns(**from, **to, {"nosuch"}, note).error().kind, ErrorKind::kNotFound);

  // Run b reached the destination part-way (one cell, still running): the next copy completes it,
  // storing the cell it lacks and the one it holds only as interrupted, and its status.
  auto b = (*from)->GetRun(2);
  RunRecord partial = *b;
  partial.tags.clear();
  partial.status = record::RunStatus::kRunning;
  partial.finished_wall_ns = std::nullopt;
  const std::int64_t to_b = *(*to)->BeginRun(partial);
  CellRecord cut = MakeCell(to_b, 0, 2);
  cut.outcome = record::Outcome::kInterrupted;
  ASSERT_TRUE((*to)->PutCell(cut).ok());
  auto completed = CopyRuns(**from, **to, {"2"}, note);
  ASSERT_TRUE(completed.ok()) << completed.error().message;
  EXPECT_EQ(completed->runs_existing, 1);
  EXPECT_EQ(completed->cells_copied, 2);
  auto cells = (*to)->GetCells(to_b, kEverything);
  ASSERT_EQ(cells->size(), 2u);
  EXPECT_EQ((*cells)[0].outcome, record::Outcome::kOk);
  EXPECT_EQ((*cells)[0].steps.size(), 7u);
  EXPECT_EQ((*cells)[1].outcome, record::Outcome::kInterrupted);
  EXPECT_EQ((*to)->GetRun(to_b)->status, record::RunStatus::kInterrupted);
  EXPECT_EQ((*to)->GetRun(to_b)->finished_wall_ns, b->finished_wall_ns);
}

#ifdef DLBENCH_HAVE_POSTGRES
TEST(StoreCopyTest, SqliteToPostgresAndBackIsExact) {
  DLBENCH_PG_CLUSTER_OR_SKIP(cluster);
  testing::ScratchDatabase db(cluster, "copy");
  ASSERT_TRUE(db.ok()) << db.error();
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  auto lite = OpenSqliteStore(dir.File("from.db"));
  ASSERT_TRUE(lite.ok());
  Fill(**lite);
  auto pg = PostgresStore::Open(db.url());
  ASSERT_TRUE(pg.ok()) << pg.error().message;
  auto note = [](const std::string&) {};
  ASSERT_TRUE(CopyRuns(**lite, **pg, {}, note).ok());
  EXPECT_EQ(Contents(**pg), Contents(**lite));
  auto again = CopyRuns(**lite, **pg, {}, note);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->cells_copied, 0);

  auto back = OpenSqliteStore(dir.File("back.db"));
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(CopyRuns(**pg, **back, {}, note).ok());
  EXPECT_EQ(Contents(**back), Contents(**lite));
}
#endif

}  // namespace
}  // namespace dlbench::store
