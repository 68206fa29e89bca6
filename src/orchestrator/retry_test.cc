// RunWithRetries against a scripted cell runner: which attempts run, which is stored and what the
// stored record says of the others (measure.retry_disturbed, docs/measurement.md "Measuring again").
#include "orchestrator/retry.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plan/estimate.h"
#include "record/metrics.h"

namespace dlbench::orchestrator {
namespace {

using record::Outcome;
using record::Verdict;

struct Scripted {
  Outcome outcome = Outcome::kOk;
  Verdict verdict = Verdict::kValid;
};

// A run_cell that ends attempt k as script[k - 1] says, and remembers the options it was given.
struct Script {
  std::vector<Scripted> ends;
  std::vector<CellRunOptions> seen;
  RunCellFn Fn() {
    return [this](const plan::Cell& cell, const CellRunOptions& o) {
      seen.push_back(o);
      const Scripted& s = ends.at(seen.size() - 1);
      record::CellRecord rec;
      rec.index = cell.index;
      rec.outcome = s.outcome;
      rec.verdict = s.verdict;
      if (record::IsUnreliable(s.verdict))
        rec.verdict_reasons = nlohmann::json::array({std::string(record::Name(s.verdict)) + ": why"});
      rec.stderr_path = o.log_dir + "/cell-0000" + o.log_suffix + ".stderr.log";
      rec.metrics.push_back(
          {std::string(record::metric::kSamplesPerS), 100.0 * static_cast<double>(seen.size()), "1/s"});
      return rec;
    };
  }
};

plan::Cell PlainCell() {
  plan::Cell c;
  c.params["step_ms"] = config::Value(1.0);
  return c;
}

TEST(RetryTest, OnlyTheVerdictsOfADisturbedMachineAreMeasuredAgain) {
  for (const Verdict v : record::kAllVerdicts) {
    const bool expected = v == Verdict::kContended || v == Verdict::kShifted || v == Verdict::kDrifting;
    EXPECT_EQ(IsDisturbed(v), expected) << v;
  }
}

TEST(RetryTest, OnRetryIsToldEachAttemptAfterTheFirstBeforeItRunsWithTheOneBefore) {
  Script s{{{Outcome::kOk, Verdict::kContended},
            {Outcome::kOk, Verdict::kDrifting},
            {Outcome::kOk, Verdict::kValid}}};
  std::vector<std::string> said;
  const auto on_retry = [&](const RetryStart& r) {
    said.push_back(fmt::format("{} of {} after {} ({} ran)", r.attempt, r.allowed,
                               r.before.verdict_reasons[0].get<std::string>(), s.seen.size()));
  };
  (void)RunWithRetries(PlainCell(), CellRunOptions{}, 3, s.Fn(), on_retry);
  EXPECT_EQ(said, (std::vector<std::string>{"2 of 4 after contended: why (1 ran)",
                                            "3 of 4 after drifting: why (2 ran)"}));
  // Not called for a cell measured once.
  said.clear();
  Script once{{{Outcome::kOk, Verdict::kValid}}};
  (void)RunWithRetries(PlainCell(), CellRunOptions{}, 3, once.Fn(), on_retry);
  EXPECT_TRUE(said.empty());
}

TEST(RetryTest, TheFirstAttemptNotDisturbedIsStoredWithTheEarlierOnesRecorded) {
  Script s{{{Outcome::kOk, Verdict::kContended},
            {Outcome::kOk, Verdict::kDrifting},
            {Outcome::kOk, Verdict::kValid}}};
  CellRunOptions o;
  o.log_dir = "/logs";
  const record::CellRecord rec = RunWithRetries(PlainCell(), o, 3, s.Fn());
  ASSERT_EQ(s.seen.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s.seen[i].attempt, i + 1);
  EXPECT_EQ(s.seen[0].log_suffix, "");
  EXPECT_EQ(s.seen[1].log_suffix, ".attempt-2");
  EXPECT_EQ(s.seen[2].log_suffix, ".attempt-3");
  EXPECT_EQ(rec.verdict, Verdict::kValid);
  EXPECT_EQ(rec.stderr_path, "/logs/cell-0000.attempt-3.stderr.log");
  const nlohmann::json& a = rec.extras[record::kAttemptsExtrasKey];
  EXPECT_EQ(a["stored"], 3);
  EXPECT_EQ(a["allowed"], 4);
  EXPECT_EQ(a["every_attempt_disturbed"], false);
  ASSERT_EQ(a["list"].size(), 3u);
  EXPECT_EQ(a["list"][0]["verdict"], "contended");
  EXPECT_EQ(a["list"][0]["verdict_reasons"][0], "contended: why");
  EXPECT_EQ(a["list"][0]["samples_per_s"], 100.0);
  EXPECT_EQ(a["list"][0]["stderr_path"], "/logs/cell-0000.stderr.log");
  EXPECT_EQ(a["list"][1]["verdict"], "drifting");
  EXPECT_EQ(a["list"][1]["stored"], false);
  EXPECT_EQ(a["list"][2]["stored"], true);
}

TEST(RetryTest, EveryAttemptDisturbedStoresTheLastAndSaysSo) {
  Script s{{{Outcome::kOk, Verdict::kShifted}, {Outcome::kOk, Verdict::kShifted}}};
  const record::CellRecord rec = RunWithRetries(PlainCell(), CellRunOptions{}, 1, s.Fn());
  ASSERT_EQ(s.seen.size(), 2u);
  EXPECT_EQ(rec.verdict, Verdict::kShifted);
  const nlohmann::json& a = rec.extras[record::kAttemptsExtrasKey];
  EXPECT_EQ(a["stored"], 2);
  EXPECT_EQ(a["allowed"], 2);
  EXPECT_EQ(a["every_attempt_disturbed"], true);
}

TEST(RetryTest, AnUndisturbedFirstAttemptAndNoRetriesLeaveTheRecordAsItWas) {
  for (const Verdict v :
       {Verdict::kValid, Verdict::kNoisy, Verdict::kTooShort, Verdict::kLeaking, Verdict::kThrottled}) {
    Script s{{{Outcome::kOk, v}}};
    const record::CellRecord rec = RunWithRetries(PlainCell(), CellRunOptions{}, 2, s.Fn());
    EXPECT_EQ(s.seen.size(), 1u) << v;
    EXPECT_FALSE(rec.extras.contains(record::kAttemptsExtrasKey)) << v;
  }
  Script failed{{{Outcome::kCrashed, Verdict::kNotApplicable}}};
  EXPECT_EQ(RunWithRetries(PlainCell(), CellRunOptions{}, 2, failed.Fn()).outcome, Outcome::kCrashed);
  EXPECT_EQ(failed.seen.size(), 1u);
  Script none{{{Outcome::kOk, Verdict::kShifted}}};
  const record::CellRecord rec = RunWithRetries(PlainCell(), CellRunOptions{}, 0, none.Fn());
  EXPECT_EQ(none.seen.size(), 1u);
  EXPECT_EQ(rec.verdict, Verdict::kShifted);
  EXPECT_FALSE(rec.extras.contains(record::kAttemptsExtrasKey));
}

TEST(RetryTest, ARetryThatFailsIsStoredAndCtrlCEndsTheCellAtOnce) {
  Script crash{{{Outcome::kOk, Verdict::kShifted}, {Outcome::kCrashed, Verdict::kNotApplicable}}};
  const record::CellRecord crashed = RunWithRetries(PlainCell(), CellRunOptions{}, 2, crash.Fn());
  EXPECT_EQ(crash.seen.size(), 2u);
  EXPECT_EQ(crashed.outcome, Outcome::kCrashed);
  EXPECT_EQ(crashed.extras[record::kAttemptsExtrasKey]["list"][0]["verdict"], "shifted");
  Script stop{{{Outcome::kOk, Verdict::kShifted}, {Outcome::kInterrupted, Verdict::kNotApplicable}}};
  const record::CellRecord stopped = RunWithRetries(PlainCell(), CellRunOptions{}, 2, stop.Fn());
  EXPECT_EQ(stopped.outcome, Outcome::kInterrupted);
  EXPECT_FALSE(stopped.extras.contains(record::kAttemptsExtrasKey));
}

TEST(RetryTest, CellsTheRuleDoesNotFitRunOnce) {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"batch_size", "max"}, {"load", "server"}, {"scenario", "converge"}, {"strategy", "ddp"}};
  for (const auto& [key, value] : refused) {
    plan::Cell c = PlainCell();
    c.params[key] = config::Value(value);
    EXPECT_TRUE(plan::RetryRefusal(c).has_value()) << key;
    Script s{{{Outcome::kOk, Verdict::kContended}}};
    const record::CellRecord rec = RunWithRetries(c, CellRunOptions{}, 2, s.Fn());
    EXPECT_EQ(s.seen.size(), 1u) << key;
    EXPECT_FALSE(rec.extras.contains(record::kAttemptsExtrasKey)) << key;
  }
  EXPECT_FALSE(plan::RetryRefusal(PlainCell()).has_value());
}

}  // namespace
}  // namespace dlbench::orchestrator
