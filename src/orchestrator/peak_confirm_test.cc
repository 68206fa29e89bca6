// A peak search's confirmations in the orchestrator (peak_cell.h; docs/load.md "Confirmation"):
// from hand-made records and a runner's report, what the cell's peak, window, verdict and
// extras say when the peak holds, steps down (the confirmations' bisection), is not confirmed, or is
// unconfirmed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "orchestrator/peak_cell.h"
#include "record/metrics.h"

namespace dlbench::orchestrator {
namespace {

namespace metric = record::metric;
constexpr std::int64_t kStart = 1'200'000'000'000;
constexpr std::int64_t kProbe = 550;  // queries a hand-made probe covers: 50 warm-up, 500 measured

LoadCellSettings ConfirmSettings(double confirm_s, double resolution = 1.0) {
  auto s = LoadCellSettingsOf({{"scenario", "infer"},
                               {"load", "server"},
                               {"target_qps", "max"},
                               {"latency_bound_ms", 10},
                               {"peak_resolution", resolution},
                               {"peak_confirm_s", confirm_s}},
                              1);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return *s;
}

// Queries 0..count-1 every 10 ms, each 20 ms late (over the 10 ms bound) where `slow` says, else 2 ms.
LoadRecorder Recorded(const LoadCellSettings& settings, std::uint64_t count,
                      const std::function<bool(std::uint64_t)>& slow) {
  config::MeasureSettings m;
  m.min_time_s = 0;
  LoadRecorder load(m, settings);
  protocol::QueryBatch b;
  for (std::uint64_t i = 0; i < count; ++i) {
    record::QueryRecord r;
    r.query_id = i;
    r.scheduled_ns = kStart + static_cast<std::int64_t>(i) * 10'000'000;
    r.issued_ns = r.scheduled_ns;
    r.completed_ns = r.scheduled_ns + (slow(i) ? 20'000'000 : 2'000'000);
    r.samples = 1;
    b.records.push_back(r);
  }
  EXPECT_FALSE(load.Add(b, true));
  return load;
}

// A probe of 50 warm-up and 500 measured queries from `first` (h(0) = 459 at p99: 500 within the
// bound pass).
nlohmann::json Probe(double rate, std::uint64_t first, bool passed, bool confirmation) {
  return {{"target_qps", rate},
          {"warmup_first_query", first},
          {"warmup_queries", 50},
          {"first_query", first + 50},
          {"queries", 500},
          {"latency_percentile_ms", passed ? 2.0 : 20.0},
          {"too_many_outstanding", false},
          {"early_stopping_met", passed},
          {"confirmation", confirmation},
          {"passed", passed}};
}

record::CellRecord WithProbes(const nlohmann::json& probes) {
  record::CellRecord rec;
  rec.extras["info"]["load"]["peak_search"] = {{"end", "converged"}, {"probes", probes}};
  return rec;
}

// Probes of 550 queries each: probe k (0-based) covers [550 k, 550 (k + 1)); `slow_probes` are over
// the bound.
std::function<bool(std::uint64_t)> SlowProbes(const std::vector<std::uint64_t>& slow_probes) {
  return [slow_probes](std::uint64_t id) {
    return std::find(slow_probes.begin(), slow_probes.end(), id / kProbe) != slow_probes.end();
  };
}

// The search: 100/s and 150/s pass, 200/s fails (converged at resolution 1). The confirmation at
// 150/s fails; the bracket [100, 150] is within the resolution, so 100/s is confirmed itself and
// passes: the cell's peak is 100/s with 150/s the
// lowest failing rate, and the cell is valid; its bracket (100 to 150) is the confirmation's doing,
// not a short search, and its window the passing confirmation's.
TEST(PeakConfirmTest, AFailedConfirmationStepsTheValidPeakDownToTheNextPassingRate) {
  const LoadCellSettings s = ConfirmSettings(15);
  const LoadRecorder load = Recorded(s, 5 * kProbe, SlowProbes({2, 3}));
  record::CellRecord rec =
      WithProbes({Probe(100, 0, true, false), Probe(150, 550, true, false), Probe(200, 1100, false, false),
                  Probe(150, 1650, false, true), Probe(100, 2200, true, true)});
  const LoadConclusion c = ConcludeLoad(load, 5 * kProbe, "peak_search", "peak_search", rec);
  ASSERT_FALSE(c.invalid) << *c.invalid;
  EXPECT_TRUE(c.reasons.empty()) << c.reasons[0];
  EXPECT_EQ(record::MetricValue(rec, metric::kLoadPeakQps), 100.0);
  EXPECT_EQ(record::MetricValue(rec, metric::kLoadPeakLowestFailingQps), 150.0);
  EXPECT_EQ(record::MetricValue(rec, metric::kLoadPeakProbes), 5.0);
  EXPECT_EQ(rec.window, (record::MeasuredWindow{2250, 500}));
  const nlohmann::json& search = rec.extras["load"]["peak_search"];
  EXPECT_EQ(search["window_probe"], 5);
  EXPECT_EQ(search["converged"], true);
  EXPECT_EQ(search["search_peak_qps"], 150.0);
  EXPECT_EQ(search["peak_qps"], 100.0);
  EXPECT_EQ(search["confirmation"], "stepped_down");
  EXPECT_EQ(search["confirmation_note"],
            "stepped down from 150 to 100 queries/s: 150 queries/s failed its confirmation, 100 queries/s "
            "passed");
  EXPECT_EQ(search["probes"][3]["confirmation"], true);
  EXPECT_EQ(search["probes"][3]["valid"], false);
  EXPECT_EQ(search["probes"][2]["confirmation"], false);
}

// At resolution 0.5 the search converges at 200/s (100 and 200/s pass, 400 and 282.8/s fail). 200/s
// fails its confirmation, and [100, 200] is wider than 0.5, so the next confirmation is its
// geometric mean, 141.4/s, not the search's 100/s. When 141.4/s passes, [141.4, 200] is within 0.5:
// the peak is 141.4/s, confirmed, with 200/s the lowest failing rate. When it fails, [100, 141.4] is
// narrow and 100/s is confirmed itself: the peak is 100/s with 141.4/s the lowest failing rate.
TEST(PeakConfirmTest, ConfirmationsBisectBelowAFailedPeakAndTheHighestPassedIsThePeak) {
  const LoadCellSettings s = ConfirmSettings(15, 0.5);
  const double mid = std::sqrt(100.0 * 200.0);
  const nlohmann::json search = {
      Probe(100, 0, true, false), Probe(200, 550, true, false), Probe(400, 1100, false, false),
      Probe(std::sqrt(200.0 * 400.0), 1650, false, false), Probe(200, 2200, false, true)};

  nlohmann::json raised = search;
  raised.push_back(Probe(mid, 2750, true, true));
  const LoadRecorder six = Recorded(s, 6 * kProbe, SlowProbes({2, 3, 4}));
  record::CellRecord up = WithProbes(raised);
  const LoadConclusion u = ConcludeLoad(six, 6 * kProbe, "peak_search", "peak_search", up);
  ASSERT_FALSE(u.invalid) << *u.invalid;
  EXPECT_TRUE(u.reasons.empty()) << u.reasons[0];
  EXPECT_EQ(record::MetricValue(up, metric::kLoadPeakQps), mid);
  EXPECT_EQ(record::MetricValue(up, metric::kLoadPeakLowestFailingQps), 200.0);
  EXPECT_EQ(up.window, (record::MeasuredWindow{2800, 500}));
  EXPECT_EQ(up.extras["load"]["peak_search"]["confirmation"], "stepped_down");
  EXPECT_EQ(up.extras["load"]["peak_search"]["confirmation_note"],
            "stepped down from 200 to 141.421 queries/s: 200 queries/s failed its confirmation, 141.421 "
            "queries/s passed");
  EXPECT_EQ(up.extras["load"]["peak_search"]["search_peak_qps"], 200.0);
  EXPECT_EQ(up.extras["load"]["peak_search"]["window_probe"], 6);

  nlohmann::json lowered = search;
  lowered.push_back(Probe(mid, 2750, false, true));
  lowered.push_back(Probe(100, 3300, true, true));
  const LoadRecorder seven = Recorded(s, 7 * kProbe, SlowProbes({2, 3, 4, 5}));
  record::CellRecord down = WithProbes(lowered);
  const LoadConclusion d = ConcludeLoad(seven, 7 * kProbe, "peak_search", "peak_search", down);
  ASSERT_FALSE(d.invalid) << *d.invalid;
  EXPECT_TRUE(d.reasons.empty()) << d.reasons[0];
  EXPECT_EQ(record::MetricValue(down, metric::kLoadPeakQps), 100.0);
  EXPECT_EQ(record::MetricValue(down, metric::kLoadPeakLowestFailingQps), mid);
  EXPECT_EQ(down.window, (record::MeasuredWindow{3350, 500}));
  EXPECT_EQ(down.extras["load"]["peak_search"]["confirmation_note"],
            "stepped down from 200 to 100 queries/s: 200 and 141.421 queries/s failed their confirmation, "
            "100 queries/s passed");

  // The time budget ends it after the mean failed: the runner had 100/s to confirm next.
  lowered.erase(lowered.end() - 1);
  const LoadRecorder cut_short = Recorded(s, 6 * kProbe, SlowProbes({2, 3, 4, 5}));
  record::CellRecord unconfirmed = WithProbes(lowered);
  const LoadConclusion c = ConcludeLoad(cut_short, 6 * kProbe, "max_time", "max_time", unconfirmed);
  ASSERT_FALSE(c.invalid) << *c.invalid;
  ASSERT_EQ(c.reasons.size(), 1u);
  EXPECT_EQ(
      c.reasons[0],
      "too_short: the peak 200 queries/s failed its confirmation (200 and 141.421 queries/s failed) and "
      "the search ended before 100 queries/s was confirmed (the runner's run ended: max_time)");
  EXPECT_FALSE(record::MetricValue(unconfirmed, metric::kLoadPeakQps));
  EXPECT_EQ(unconfirmed.extras["load"]["peak_search"]["confirmation"], "unconfirmed");
}

// The confirmation at the search's peak passes: the peak stands and the window is the
// confirmation's, not the shorter search probe's at the same rate.
TEST(PeakConfirmTest, APassingConfirmationKeepsThePeakAndIsTheWindow) {
  const LoadCellSettings s = ConfirmSettings(15);
  const LoadRecorder load = Recorded(s, 3 * kProbe, SlowProbes({1}));
  record::CellRecord rec =
      WithProbes({Probe(100, 0, true, false), Probe(200, 550, false, false), Probe(100, 1100, true, true)});
  const LoadConclusion c = ConcludeLoad(load, 3 * kProbe, "peak_search", "peak_search", rec);
  ASSERT_FALSE(c.invalid) << *c.invalid;
  EXPECT_TRUE(c.reasons.empty()) << c.reasons[0];
  EXPECT_EQ(record::MetricValue(rec, metric::kLoadPeakQps), 100.0);
  EXPECT_EQ(record::MetricValue(rec, metric::kLoadPeakLowestFailingQps), 200.0);
  EXPECT_EQ(rec.window, (record::MeasuredWindow{1150, 500}));
  const nlohmann::json& search = rec.extras["load"]["peak_search"];
  EXPECT_EQ(search["confirmation"], "confirmed");
  EXPECT_EQ(search["confirmation_note"], "the peak 100 queries/s passed its confirmation");
  EXPECT_EQ(search["window_probe"], 3);
}

// Every confirmation fails (the peak's, and no lower rate passed): no rate is confirmed, the cell
// has no peak, and its verdict is the last confirmation's failure, saying so; its window that
// confirmation's.
TEST(PeakConfirmTest, EveryConfirmationFailingLeavesNoPeakAndTheCellInvalid) {
  const LoadCellSettings s = ConfirmSettings(15);
  const LoadRecorder load = Recorded(s, 3 * kProbe, SlowProbes({1, 2}));
  record::CellRecord rec =
      WithProbes({Probe(100, 0, true, false), Probe(200, 550, false, false), Probe(100, 1100, false, true)});
  const LoadConclusion c = ConcludeLoad(load, 3 * kProbe, "peak_search", "peak_search", rec);
  ASSERT_FALSE(c.invalid) << *c.invalid;
  ASSERT_EQ(c.reasons.size(), 1u);
  EXPECT_EQ(
      c.reasons[0],
      "over_bound: p99 20 ms > latency_bound_ms 10 (500 of 500 queries over) (every confirmation failed "
      "(100 queries/s; no lower rate passed): the search's peak 100 queries/s is not confirmed, nor any "
      "rate below it)");
  EXPECT_FALSE(record::MetricValue(rec, metric::kLoadPeakQps));
  EXPECT_EQ(record::MetricValue(rec, metric::kLoadPeakLowestFailingQps), 100.0);
  EXPECT_EQ(rec.window, (record::MeasuredWindow{1150, 500}));
  EXPECT_EQ(rec.extras["load"]["peak_search"]["confirmation"], "not_confirmed");
  EXPECT_EQ(rec.extras["load"]["peak_search"]["search_peak_qps"], 100.0);
}

// The search's end came before a confirmation (none in the report), or after a failed one before the
// next lower passing rate's: the peak is unconfirmed, and the cell too_short.
TEST(PeakConfirmTest, ABudgetThatEndsBeforeAConfirmationLeavesThePeakUnconfirmed) {
  const LoadCellSettings s = ConfirmSettings(15);
  const LoadRecorder two = Recorded(s, 2 * kProbe, SlowProbes({1}));
  record::CellRecord none = WithProbes({Probe(100, 0, true, false), Probe(200, 550, false, false)});
  const LoadConclusion n = ConcludeLoad(two, 2 * kProbe, "max_time", "max_time", none);
  ASSERT_FALSE(n.invalid) << *n.invalid;
  ASSERT_EQ(n.reasons.size(), 1u);
  EXPECT_EQ(n.reasons[0],
            "too_short: the peak 100 queries/s is unconfirmed: the search ended before its confirmation "
            "(peak_confirm_s) could pass or fail (the runner's run ended: max_time)");
  EXPECT_EQ(record::MetricValue(none, metric::kLoadPeakQps), 100.0);
  EXPECT_EQ(none.extras["load"]["peak_search"]["confirmation"], "unconfirmed");

  const LoadRecorder four = Recorded(s, 4 * kProbe, SlowProbes({2, 3}));
  record::CellRecord failed = WithProbes({Probe(100, 0, true, false), Probe(150, 550, true, false),
                                          Probe(200, 1100, false, false), Probe(150, 1650, false, true)});
  const LoadConclusion f = ConcludeLoad(four, 4 * kProbe, "max_time", "max_time", failed);
  ASSERT_FALSE(f.invalid) << *f.invalid;
  ASSERT_EQ(f.reasons.size(), 1u);
  EXPECT_EQ(f.reasons[0],
            "too_short: the peak 150 queries/s failed its confirmation (150 queries/s failed) and the search "
            "ended before 100 queries/s was confirmed (the runner's run ended: max_time)");
  EXPECT_FALSE(record::MetricValue(failed, metric::kLoadPeakQps));
  EXPECT_EQ(failed.window, (record::MeasuredWindow{1700, 500}));
}

// Confirmations come after the search's probes, only in a cell that asks for them, and each at the
// rate the rule gives (load::NextConfirmationRate), bisected ones too (ConfirmationsBisect... above).
TEST(PeakConfirmTest, AConfirmationOutOfPlaceMakesTheCellInvalid) {
  const LoadCellSettings s = ConfirmSettings(15);
  const LoadRecorder load = Recorded(s, 3 * kProbe, SlowProbes({1}));
  record::CellRecord early =
      WithProbes({Probe(100, 0, true, true), Probe(200, 550, false, false), Probe(100, 1100, true, false)});
  const LoadConclusion e = ConcludeLoad(load, 3 * kProbe, "peak_search", "peak_search", early);
  ASSERT_TRUE(e.invalid);
  EXPECT_EQ(
      *e.invalid,
      "the runner's peak search report has search probe 2 after a confirmation: confirmations come last");
  const LoadCellSettings off = ConfirmSettings(0);
  const LoadRecorder off_load = Recorded(off, 3 * kProbe, SlowProbes({1}));
  record::CellRecord unasked =
      WithProbes({Probe(100, 0, true, false), Probe(200, 550, false, false), Probe(100, 1100, true, true)});
  const LoadConclusion u = ConcludeLoad(off_load, 3 * kProbe, "peak_search", "peak_search", unasked);
  ASSERT_TRUE(u.invalid);
  EXPECT_EQ(*u.invalid,
            "the runner's peak search report has 1 confirmation probe, but the cell's peak_confirm_s is 0");
  // A confirmation at a rate the rule does not give: after 200/s fails, [100, 200] is narrow at
  // resolution 1, so 100/s, not 150/s; after 100/s passes, nothing.
  const LoadRecorder four = Recorded(s, 4 * kProbe, SlowProbes({2}));
  record::CellRecord elsewhere = WithProbes({Probe(100, 0, true, false), Probe(200, 550, true, false),
                                             Probe(200, 1100, false, true), Probe(150, 1650, true, true)});
  const LoadConclusion w = ConcludeLoad(four, 4 * kProbe, "peak_search", "peak_search", elsewhere);
  ASSERT_TRUE(w.invalid);
  EXPECT_EQ(*w.invalid,
            "the runner's peak search report has confirmation 4 at 150 queries/s, where the rule after the "
            "probes before it confirms 100 queries/s");
  record::CellRecord extra = WithProbes({Probe(100, 0, true, false), Probe(200, 550, false, false),
                                         Probe(100, 1100, true, true), Probe(100, 1650, true, true)});
  const LoadRecorder extra_load = Recorded(s, 4 * kProbe, SlowProbes({1}));
  const LoadConclusion x = ConcludeLoad(extra_load, 4 * kProbe, "peak_search", "peak_search", extra);
  ASSERT_TRUE(x.invalid);
  EXPECT_EQ(*x.invalid,
            "the runner's peak search report has confirmation 4 at 100 queries/s, where the rule after the "
            "probes before it confirms nothing");
}

}  // namespace
}  // namespace dlbench::orchestrator
