// A peak search's cell in the orchestrator (peak_cell.h), from hand-made records and a runner's
// report: every probe judged again from its own queries, the bracket, the window and the verdict.
#include "orchestrator/peak_cell.h"

#include <gtest/gtest.h>

#include "record/metrics.h"

namespace dlbench::orchestrator {
namespace {

namespace metric = record::metric;
constexpr std::int64_t kStart = 1'200'000'000'000;

// The search's probes alone (peak_confirm_s: 0, as before it; peak_confirm_test.cc has the
// confirmations).
LoadCellSettings PeakSettings(double resolution) {
  auto s = LoadCellSettingsOf({{"scenario", "infer"},
                               {"load", "server"},
                               {"target_qps", "max"},
                               {"latency_bound_ms", 10},
                               {"peak_resolution", resolution},
                               {"peak_confirm_s", 0}},
                              1);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return *s;
}

// Queries 0..1149 every 10 ms; probe 1 (100/s): warm-up [0, 50), measured [50, 550) at 2 ms;
// probe 2 (200/s): warm-up [550, 650), measured [650, 1150) at 20 ms, over the 10 ms bound. With
// h(0) = 459 at p99, probe 1's 500 queries within the bound pass early stopping.
LoadRecorder Recorded(const LoadCellSettings& settings, std::uint64_t count = 1150,
                      std::uint64_t slow_from = 550) {
  config::MeasureSettings m;
  m.min_time_s = 0;
  LoadRecorder load(m, settings);
  protocol::QueryBatch b;
  for (std::uint64_t i = 0; i < count; ++i) {
    record::QueryRecord r;
    r.query_id = i;
    r.scheduled_ns = kStart + static_cast<std::int64_t>(i) * 10'000'000;
    r.issued_ns = r.scheduled_ns;
    r.completed_ns = r.scheduled_ns + (i >= slow_from ? 20'000'000 : 2'000'000);
    r.samples = 1;
    b.records.push_back(r);
  }
  EXPECT_FALSE(load.Add(b, true));
  return load;
}

nlohmann::json Probe(double rate, std::uint64_t warm_first, std::uint64_t warm, std::uint64_t queries,
                     bool passed) {
  return {{"target_qps", rate},
          {"warmup_first_query", warm_first},
          {"warmup_queries", warm},
          {"first_query", warm_first + warm},
          {"queries", queries},
          {"latency_percentile_ms", passed ? 2.0 : 20.0},
          {"too_many_outstanding", false},
          {"early_stopping_met", passed},
          {"passed", passed}};
}

nlohmann::json Report(const std::string& end, bool second_passed = false) {
  return {{"end", end},
          {"probes",
           nlohmann::json::array({Probe(100, 0, 50, 500, true), Probe(200, 550, 100, 500, second_passed)})}};
}

record::CellRecord WithReport(const nlohmann::json& report) {
  record::CellRecord rec;
  rec.extras["info"]["load"]["peak_search"] = report;
  return rec;
}

TEST(PeakCellTest, EachProbeIsJudgedFromItsQueriesAndTheWindowIsThePeakProbes) {
  const LoadCellSettings s = PeakSettings(1.0);  // 200 / 100 - 1 = 1: converged
  const LoadRecorder load = Recorded(s);
  record::CellRecord rec = WithReport(Report("converged"));
  const LoadConclusion c = ConcludeLoad(load, 1150, "peak_search", "peak_search", rec);
  ASSERT_FALSE(c.invalid) << *c.invalid;
  EXPECT_TRUE(c.reasons.empty()) << c.reasons[0];
  EXPECT_EQ(record::MetricValue(rec, metric::kLoadPeakQps), 100.0);
  EXPECT_EQ(record::MetricValue(rec, metric::kLoadPeakLowestFailingQps), 200.0);
  EXPECT_EQ(record::MetricValue(rec, metric::kLoadPeakProbes), 2.0);
  EXPECT_EQ(record::MetricValue(rec, metric::kLoadPeakResolution), 1.0);
  EXPECT_EQ(rec.window, (record::MeasuredWindow{50, 500}));
  EXPECT_EQ(record::MetricValue(rec, metric::kLoadQueries), 500.0);
  EXPECT_EQ(record::MetricValue(rec, metric::kQueryLatencyP99Ns), 2e6);
  const nlohmann::json& search = rec.extras["load"]["peak_search"];
  EXPECT_EQ(rec.extras["load"]["headline"]["metric"], "load_peak_qps");
  EXPECT_EQ(search["window_probe"], 1);
  EXPECT_EQ(search["converged"], true);
  EXPECT_EQ(search["probes"][0]["valid"], true);
  EXPECT_EQ(search["probes"][0]["p99_ms"], 2.0);
  // 499 completions over the 4.99 s + 2 ms from the first scheduled time to the last completion.
  EXPECT_NEAR(search["probes"][0]["achieved_qps"].get<double>(), 499 / 4.992, 1e-9);
  EXPECT_EQ(search["probes"][1]["valid"], false);
  EXPECT_EQ(search["probes"][1]["reasons"][0],
            "over_bound: p99 20 ms > latency_bound_ms 10 (500 of 500 queries over)");
}

TEST(PeakCellTest, AnOpenBracketIsTooShortAndNoPassingRateIsOverBound) {
  const LoadCellSettings s = PeakSettings(0.5);
  const LoadRecorder load = Recorded(s);
  record::CellRecord rec = WithReport(Report("probe_cap"));
  const LoadConclusion c = ConcludeLoad(load, 1150, "peak_search", "peak_search", rec);
  ASSERT_FALSE(c.invalid) << *c.invalid;
  ASSERT_EQ(c.reasons.size(), 1u);
  EXPECT_EQ(c.reasons[0],
            "too_short: the search ended (probe_cap) with its bracket 100 to 200 queries/s wider than "
            "peak_resolution 0.5");

  // Both probes over the bound: the window is the lower rate's, and its reason says why.
  nlohmann::json report = Report("probe_cap");
  report["probes"][0] = Probe(100, 0, 600, 50, false);  // 50 measured queries at 20 ms: [600, 650)
  report["probes"][1] = Probe(200, 650, 0, 500, false);
  record::CellRecord none = WithReport(report);
  const LoadConclusion n = ConcludeLoad(load, 1150, "peak_search", "peak_search", none);
  ASSERT_FALSE(n.invalid) << *n.invalid;
  ASSERT_EQ(n.reasons.size(), 1u);
  EXPECT_EQ(n.reasons[0],
            "over_bound: p99 20 ms > latency_bound_ms 10 (50 of 50 queries over) (no probed rate passed; the "
            "lowest was 100 queries/s)");
  EXPECT_FALSE(record::MetricValue(none, metric::kLoadPeakQps));
  EXPECT_EQ(none.window, (record::MeasuredWindow{600, 50}));
}

TEST(PeakCellTest, AReportThatDisagreesWithTheRecordsMakesTheCellInvalid) {
  const LoadCellSettings s = PeakSettings(1.0);
  const LoadRecorder load = Recorded(s);
  record::CellRecord lied = WithReport(Report("converged", /*second_passed=*/true));
  const LoadConclusion c = ConcludeLoad(load, 1150, "peak_search", "peak_search", lied);
  ASSERT_TRUE(c.invalid);
  EXPECT_EQ(*c.invalid,
            "probe 2 at 200 queries/s: the runner judged it valid, but its 500 measured queries do not: "
            "over_bound: p99 20 ms > latency_bound_ms 10 (500 of 500 queries over)");

  nlohmann::json gap = Report("converged");
  gap["probes"][1] = Probe(200, 560, 90, 500, false);
  record::CellRecord gapped = WithReport(gap);
  const LoadConclusion g = ConcludeLoad(load, 1150, "peak_search", "peak_search", gapped);
  ASSERT_TRUE(g.invalid);
  EXPECT_NE(g.invalid->find("probe 2 starts its warm-up at query id 560 and its measured queries at 650; the "
                            "previous probe ended at 550"),
            std::string::npos)
      << *g.invalid;

  nlohmann::json short_report = Report("converged");
  short_report["probes"][1]["queries"] = 400;
  record::CellRecord shorter = WithReport(short_report);
  const LoadConclusion sh = ConcludeLoad(load, 1150, "peak_search", "peak_search", shorter);
  ASSERT_TRUE(sh.invalid);
  EXPECT_NE(sh.invalid->find("its probes cover query ids [0, 1050) and 1150 records arrived"),
            std::string::npos)
      << *sh.invalid;

  record::CellRecord malformed = WithReport({{"probes", nlohmann::json::array({{{"target_qps", -1}}})}});
  const LoadConclusion m = ConcludeLoad(load, 1150, "peak_search", "peak_search", malformed);
  ASSERT_TRUE(m.invalid);
  EXPECT_EQ(*m.invalid,
            "the runner's peak search report is malformed: probe 1: target_qps must be a rate in (0, 1e6]");

  record::CellRecord missing;
  const LoadConclusion x = ConcludeLoad(load, 1150, "peak_search", "peak_search", missing);
  ASSERT_TRUE(x.invalid);
  EXPECT_NE(x.invalid->find("sent no peak search report"), std::string::npos);
}

// STOP in the last probe, whose queue the system under test dropped after the STOP drain: the
// report's `dropped` accounts for the issued queries without records, the probe is fell_behind,
// the finished probe is judged as before and the verdict says the search was stopped and how
// many queries were dropped. Queries 1150..1189 were issued and dropped.
TEST(PeakCellTest, DroppedQueriesOfTheLastProbeAreAccountedForAndTheStopIsSaid) {
  const LoadCellSettings s = PeakSettings(0.5);
  const LoadRecorder load = Recorded(s);
  nlohmann::json report = Report("stopped");
  report["probes"][1]["dropped"] = 40;
  record::CellRecord rec = WithReport(report);
  const LoadConclusion c = ConcludeLoad(load, 1190, "max_steps", "stopped", rec);
  ASSERT_FALSE(c.invalid) << *c.invalid;
  ASSERT_EQ(c.reasons.size(), 1u);
  EXPECT_EQ(
      c.reasons[0],
      "too_short: the search ended (stopped by STOP at max_steps, in probe 2 at 200 queries/s, which fell "
      "behind: 40 of its queries were dropped) with its bracket 100 to 200 queries/s wider than "
      "peak_resolution 0.5");
  EXPECT_EQ(record::MetricValue(rec, metric::kLoadPeakQps), 100.0);
  EXPECT_EQ(rec.window, (record::MeasuredWindow{50, 500}));
  const nlohmann::json& search = rec.extras["load"]["peak_search"];
  EXPECT_EQ(search["queries_dropped_after_stop"], 40);
  EXPECT_EQ(search["probes"][0]["valid"], true);
  EXPECT_EQ(search["probes"][0]["dropped"], 0);
  EXPECT_EQ(search["probes"][1]["dropped"], 40);
  ASSERT_EQ(search["probes"][1]["reasons"].size(), 2u);
  EXPECT_EQ(search["probes"][1]["reasons"][0],
            "fell_behind: the runner ended with queries outstanding (dropped_after_stop): the system under "
            "test fell behind the schedule");
  EXPECT_EQ(search["probes"][1]["reasons"][1],
            "over_bound: p99 20 ms > latency_bound_ms 10 (500 of 500 queries over)");

  // STOP in the warm-up: its records are the warm-up's, nothing was measured, the rest dropped.
  nlohmann::json warm = Report("stopped");
  warm["probes"][1] = Probe(200, 550, 600, 0, false);
  warm["probes"][1]["dropped"] = 40;
  record::CellRecord warm_rec = WithReport(warm);
  const LoadConclusion w = ConcludeLoad(load, 1190, "max_steps", "stopped", warm_rec);
  ASSERT_FALSE(w.invalid) << *w.invalid;
  EXPECT_EQ(warm_rec.extras["load"]["peak_search"]["probes"][1]["reasons"][0],
            "fell_behind: STOP came in the probe's warm-up, and its last 40 queries were dropped after the "
            "STOP drain");
  ASSERT_EQ(w.reasons.size(), 1u);
  EXPECT_NE(w.reasons[0].find("40 of its queries were dropped"), std::string::npos) << w.reasons[0];

  // A STOP the runner saw without the orchestrator's decision (its own stop) names no reason.
  record::CellRecord own = WithReport(Report("stopped"));
  const LoadConclusion o = ConcludeLoad(load, 1150, "stopped", "stopped", own);
  ASSERT_FALSE(o.invalid) << *o.invalid;
  EXPECT_EQ(o.reasons[0],
            "too_short: the search ended (stopped) with its bracket 100 to 200 queries/s wider than "
            "peak_resolution 0.5");
}

TEST(PeakCellTest, AReportThatDoesNotAccountForTheIssuedQueriesMakesTheCellInvalid) {
  const LoadCellSettings s = PeakSettings(0.5);
  const LoadRecorder load = Recorded(s);
  // An old report (no `dropped`) of a runner that issued 40 queries more than arrived.
  record::CellRecord old = WithReport(Report("stopped"));
  const LoadConclusion c = ConcludeLoad(load, 1190, "max_steps", "stopped", old);
  ASSERT_TRUE(c.invalid);
  EXPECT_EQ(*c.invalid,
            "the runner's peak search report does not account for its issued queries: its probes cover query "
            "ids [0, 1150) (1150 records, 0 dropped) and its DONE says 1190 were issued");

  // More dropped than DONE's count allows.
  nlohmann::json more = Report("stopped");
  more["probes"][1]["dropped"] = 50;
  record::CellRecord more_rec = WithReport(more);
  const LoadConclusion m = ConcludeLoad(load, 1190, "max_steps", "stopped", more_rec);
  ASSERT_TRUE(m.invalid);
  EXPECT_EQ(*m.invalid,
            "the runner's peak search report does not account for its issued queries: its probes cover query "
            "ids [0, 1200) (1150 records, 50 dropped) and its DONE says 1190 were issued");

  // Dropped queries before the last probe: its records would have to follow them.
  nlohmann::json early = Report("stopped");
  early["probes"][0]["dropped"] = 10;
  early["probes"][1] = Probe(200, 560, 90, 500, false);
  record::CellRecord early_rec = WithReport(early);
  const LoadConclusion e = ConcludeLoad(load, 1160, "max_steps", "stopped", early_rec);
  ASSERT_TRUE(e.invalid);
  EXPECT_EQ(*e.invalid,
            "the runner's peak search report does not account for its query records: probe 1 of 2 says 10 of "
            "its queries were dropped, but only the last probe can end with dropped queries (after STOP)");

  // Dropped queries that are records: the ranges end past the records.
  nlohmann::json overlap = Report("stopped");
  overlap["probes"][1]["queries"] = 460;
  overlap["probes"][1]["dropped"] = 40;
  record::CellRecord overlap_rec = WithReport(overlap);
  const LoadConclusion v = ConcludeLoad(load, 1150, "max_steps", "stopped", overlap_rec);
  ASSERT_TRUE(v.invalid);
  EXPECT_EQ(*v.invalid,
            "the runner's peak search report does not account for its query records: its probes cover query "
            "ids [0, 1150), the last 40 dropped, and 1150 records arrived");

  nlohmann::json negative = Report("stopped");
  negative["probes"][1]["dropped"] = -1;
  record::CellRecord negative_rec = WithReport(negative);
  const LoadConclusion n = ConcludeLoad(load, 1150, "max_steps", "stopped", negative_rec);
  ASSERT_TRUE(n.invalid);
  EXPECT_EQ(
      *n.invalid,
      "the runner's peak search report is malformed: probe 2: dropped must be a query count or id >= 0");
}

// A probe the search's end cut before it passed or failed (the runner's `cut`: too few queries,
// none failing it) is kept and shown but is no failing rate: the bracket is the finished probes'.
// Queries 0..999 all at 2 ms; probe 2 measured 350 of the 459 its claim needs.
TEST(PeakCellTest, AProbeCutByTheSearchsEndIsKeptButNotInTheBracket) {
  const LoadCellSettings s = PeakSettings(0.5);
  const LoadRecorder load = Recorded(s, 1000, /*slow_from=*/1000);
  nlohmann::json report = Report("stopped");
  report["probes"][1] = Probe(200, 550, 100, 350, false);
  report["probes"][1]["cut"] = true;
  record::CellRecord rec = WithReport(report);
  const LoadConclusion c = ConcludeLoad(load, 1000, "max_steps", "stopped", rec);
  ASSERT_FALSE(c.invalid) << *c.invalid;
  ASSERT_EQ(c.reasons.size(), 1u);
  EXPECT_EQ(
      c.reasons[0],
      "too_short: every probed rate passed, up to 100 queries/s (the search ended: stopped by STOP at "
      "max_steps, in probe 2 at 200 queries/s, before it could pass or fail); the peak is at least that");
  EXPECT_EQ(record::MetricValue(rec, metric::kLoadPeakQps), 100.0);
  EXPECT_FALSE(record::MetricValue(rec, metric::kLoadPeakLowestFailingQps));
  const nlohmann::json& probe = rec.extras["load"]["peak_search"]["probes"][1];
  EXPECT_EQ(probe["cut"], true);
  EXPECT_EQ(probe["valid"], false);
  ASSERT_EQ(probe["reasons"].size(), 2u);
  EXPECT_EQ(probe["reasons"][0],
            "cut: the search ended before the probe could pass or fail; not in the bracket");
  EXPECT_EQ(
      probe["reasons"][1],
      "too_short: early stopping needs 459 queries with 0 over the bound; 350 were measured (stopped: its "
      "probe's end)");
  EXPECT_EQ(rec.extras["load"]["peak_search"]["probes"][0]["cut"], false);

  // The search's only probe cut: nothing is known.
  nlohmann::json only = {{"end", "stopped"},
                         {"probes", nlohmann::json::array({Probe(100, 0, 50, 300, false)})}};
  only["probes"][0]["cut"] = true;
  record::CellRecord only_rec = WithReport(only);
  const LoadRecorder short_load = Recorded(s, 350, /*slow_from=*/350);
  const LoadConclusion o = ConcludeLoad(short_load, 350, "max_time", "stopped", only_rec);
  ASSERT_FALSE(o.invalid) << *o.invalid;
  ASSERT_EQ(o.reasons.size(), 1u);
  EXPECT_EQ(
      o.reasons[0],
      "too_short: the search ended (stopped by STOP at max_time, in probe 1 at 100 queries/s, before it "
      "could pass or fail) before any probe passed or failed");
  EXPECT_EQ(only_rec.window, (record::MeasuredWindow{50, 300}));
  EXPECT_FALSE(record::MetricValue(only_rec, metric::kLoadPeakQps));
}

TEST(PeakCellTest, ACutThatTheRecordsDoNotBearOutMakesTheCellInvalid) {
  const LoadCellSettings s = PeakSettings(0.5);
  const LoadRecorder load = Recorded(s);
  // Probe 2's 500 queries at 20 ms fail it: the search's end did not cut it short of a failure.
  nlohmann::json failed = Report("stopped");
  failed["probes"][1]["cut"] = true;
  record::CellRecord failed_rec = WithReport(failed);
  const LoadConclusion f = ConcludeLoad(load, 1150, "max_steps", "stopped", failed_rec);
  ASSERT_TRUE(f.invalid);
  EXPECT_EQ(
      *f.invalid,
      "probe 2 at 200 queries/s: the runner says the search's end cut it before it passed or failed, but "
      "its 500 measured queries fail: over_bound: p99 20 ms > latency_bound_ms 10 (500 of 500 queries "
      "over)");

  nlohmann::json early = Report("stopped");
  early["probes"][0]["cut"] = true;
  early["probes"][0]["passed"] = false;
  record::CellRecord early_rec = WithReport(early);
  const LoadConclusion e = ConcludeLoad(load, 1150, "max_steps", "stopped", early_rec);
  ASSERT_TRUE(e.invalid);
  EXPECT_EQ(
      *e.invalid,
      "probe 1 at 100 queries/s: the runner says the search's end cut it before it passed or failed, but "
      "probe 2 came after it");

  nlohmann::json typed = Report("stopped");
  typed["probes"][1]["cut"] = 1;
  record::CellRecord typed_rec = WithReport(typed);
  const LoadConclusion t = ConcludeLoad(load, 1150, "max_steps", "stopped", typed_rec);
  ASSERT_TRUE(t.invalid);
  EXPECT_EQ(*t.invalid, "the runner's peak search report is malformed: probe 2: cut must be true or false");
}

}  // namespace
}  // namespace dlbench::orchestrator
