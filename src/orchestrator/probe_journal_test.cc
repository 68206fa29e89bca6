// A boundary search cut short keeps its finished probes (probe_journal.h): `--resume` runs the
// search again and the kept probes answer without new runner processes; a journal written for
// other settings, or a search that asks another value, runs its probes again.
#include "orchestrator/probe_journal.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "orchestrator/boundary_cell.h"
#include "record/metrics.h"

namespace dlbench::orchestrator {
namespace {

namespace fs = std::filesystem;
namespace metric = record::metric;

class ProbeJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "dlbench-journal-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  CellRunOptions Options() const {
    CellRunOptions o;
    o.log_dir = dir_;
    return o;
  }
  std::string dir_;
};

plan::Cell SearchCell(int max_probes = 20) {
  plan::Cell cell;
  cell.index = 3;
  cell.id = "bs-max#r0";
  cell.params = {{"batch_size", "max"},
                 {"boundary_min", 8},
                 {"boundary_max", 4096},
                 {"boundary_max_probes", max_probes},
                 {"boundary_probe_steps", 2}};
  return cell;
}

// Probes and measured runs fit up to `limit`; the call numbered `interrupt_at` (0-based, when set)
// ends `interrupted`, as Ctrl-C does. It remembers each call's batch size and whether it was a probe.
struct FakeRunner {
  std::int64_t limit;
  int interrupt_at = -1;
  std::vector<std::pair<std::int64_t, bool>> calls;

  record::CellRecord operator()(const plan::Cell& cell, const CellRunOptions& options) {
    const std::int64_t batch = cell.params.at("batch_size").get<std::int64_t>();
    calls.emplace_back(batch, !options.log_suffix.empty());
    record::CellRecord rec;
    rec.index = cell.index;
    rec.cell_id = cell.id;
    rec.effective["memory_model_bytes"] = batch * 1000;
    rec.started_wall_ns = static_cast<std::int64_t>(calls.size()) * 10'000'000'000;
    rec.finished_wall_ns = rec.started_wall_ns + 2'000'000'000;
    record::SetMetric(rec, metric::kSetupS, 0.25);
    if (static_cast<int>(calls.size()) - 1 == interrupt_at) {
      rec.outcome = record::Outcome::kInterrupted;
      rec.message = "interrupted";
      return rec;
    }
    const bool fits = batch <= limit;
    rec.outcome = fits ? record::Outcome::kOk : record::Outcome::kOom;
    if (!fits) rec.message = "out of memory at batch " + std::to_string(batch);
    return rec;
  }
  std::vector<std::int64_t> Probes() const {
    std::vector<std::int64_t> out;
    for (const auto& [batch, probe] : calls)
      if (probe) out.push_back(batch);
    return out;
  }
};

RunCellFn Bind(FakeRunner& runner) {
  return [&runner](const plan::Cell& c, const CellRunOptions& o) { return runner(c, o); };
}

std::vector<std::int64_t> ListedValues(const record::CellRecord& rec) {
  std::vector<std::int64_t> out;
  for (const nlohmann::json& p : rec.extras.at("boundary_search").at("probes"))
    if (!p.value("measured", false)) out.push_back(p.at("batch_size").get<std::int64_t>());
  return out;
}

TEST_F(ProbeJournalTest, AnInterruptedSearchResumesFromItsKeptProbes) {
  // The whole search, uninterrupted and without a journal: what the resumed one must equal.
  FakeRunner whole{373};
  const record::CellRecord expected = RunBoundarySearch(SearchCell(), CellRunOptions{}, Bind(whole));
  ASSERT_EQ(expected.outcome, record::Outcome::kOk);
  const std::vector<std::int64_t> sequence = whole.Probes();
  ASSERT_GT(sequence.size(), 6U);

  // Ctrl-C during the sixth probe: five are kept.
  FakeRunner cut{373, 5};
  const record::CellRecord first = RunBoundarySearch(SearchCell(), Options(), Bind(cut));
  EXPECT_EQ(first.outcome, record::Outcome::kInterrupted);
  const std::string journal = dir_ + "/cell-0003.probes.json";
  ASSERT_TRUE(fs::exists(journal));

  FakeRunner resumed{373};
  const record::CellRecord rec = RunBoundarySearch(SearchCell(), Options(), Bind(resumed));
  EXPECT_EQ(rec.outcome, record::Outcome::kOk);
  // Only the probes after the kept five ran.
  EXPECT_EQ(resumed.Probes(), std::vector<std::int64_t>(sequence.begin() + 5, sequence.end()));
  EXPECT_EQ(ListedValues(rec), sequence);
  const nlohmann::json& search = rec.extras.at("boundary_search");
  EXPECT_EQ(search.at("found"), 373);
  EXPECT_EQ(search.at("first_failing"), 374);
  EXPECT_EQ(search.at("resumed_probes"), 5);
  const nlohmann::json& probes = search.at("probes");
  for (std::size_t i = 0; i < sequence.size(); ++i) EXPECT_EQ(probes[i].at("resumed"), i < 5) << i;
  // The kept probes carry their first run's times.
  EXPECT_DOUBLE_EQ(probes[0].at("times").at("wall_s").get<double>(), 2.0);
  EXPECT_EQ(record::MetricValue(rec, metric::kBoundaryBatchSize), 373);
  // The search has its result: the journal is gone.
  EXPECT_FALSE(fs::exists(journal));
}

TEST_F(ProbeJournalTest, AJournalForOtherSettingsIsNotUsed) {
  FakeRunner cut{373, 4};
  (void)RunBoundarySearch(SearchCell(), Options(), Bind(cut));
  ASSERT_TRUE(fs::exists(dir_ + "/cell-0003.probes.json"));
  FakeRunner again{373};
  const record::CellRecord rec = RunBoundarySearch(SearchCell(/*max_probes=*/19), Options(), Bind(again));
  EXPECT_EQ(rec.outcome, record::Outcome::kOk);
  EXPECT_EQ(again.Probes(), ListedValues(rec)) << "every probe ran again";
  EXPECT_FALSE(rec.extras.at("boundary_search").contains("resumed_probes"));
}

TEST_F(ProbeJournalTest, KeepsOkAndOomProbesAndDropsWhatFollowsAnotherValue) {
  const nlohmann::json fingerprint = {{"cell_id", "c#r0"}, {"limit", 1.5e9}};
  record::CellRecord ok;
  ok.outcome = record::Outcome::kOk;
  ok.message = "fit";
  record::CellRecord oom;
  oom.outcome = record::Outcome::kOom;
  record::CellRecord error;
  error.outcome = record::Outcome::kError;
  {
    ProbeJournal journal(dir_, 7, fingerprint);
    EXPECT_EQ(journal.kept_at_start(), 0U);
    EXPECT_FALSE(journal.Next(8).has_value());
    journal.Add(8, ok);
    journal.Add(16, oom);
    journal.Add(12, error);  // says nothing about memory: not kept
  }
  {
    ProbeJournal journal(dir_, 7, fingerprint);
    EXPECT_EQ(journal.kept_at_start(), 2U);
    const auto first = journal.Next(8);
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->outcome, record::Outcome::kOk);
    EXPECT_EQ(first->message, "fit");
    EXPECT_FALSE(journal.Next(12).has_value()) << "another value than the journal's next";
    EXPECT_FALSE(journal.Next(16).has_value()) << "what followed it is dropped";
  }
  // Another fingerprint: nothing is used.
  ProbeJournal other(dir_, 7, {{"cell_id", "c#r0"}, {"limit", 2e9}});
  EXPECT_EQ(other.kept_at_start(), 0U);
  EXPECT_FALSE(other.Next(8).has_value());
  other.Remove();
  EXPECT_FALSE(fs::exists(other.path()));
}

TEST_F(ProbeJournalTest, AJournalThatCannotBeWrittenIsAWarningAndTheSearchGoesOn) {
  CellRunOptions options;
  options.log_dir = dir_ + "/missing/folder";
  FakeRunner runner{373};
  const record::CellRecord rec = RunBoundarySearch(SearchCell(), options, Bind(runner));
  EXPECT_EQ(rec.outcome, record::Outcome::kOk);
  EXPECT_EQ(rec.extras.at("boundary_search").at("found"), 373);
  ASSERT_TRUE(rec.extras.contains("warnings"));
  EXPECT_NE(rec.extras["warnings"].dump().find("could not be kept for a resumed run"), std::string::npos)
      << rec.extras["warnings"].dump();
}

}  // namespace
}  // namespace dlbench::orchestrator
