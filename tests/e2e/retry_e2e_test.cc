// measure.retry_disturbed end to end (docs/measurement.md "Measuring again"): a cell whose verdict
// says the machine disturbed it runs again in a fresh runner process (or the kept one under
// --runner-reuse), and the stored cell is the first attempt not disturbed, else the last, with
// every attempt in extras.attempts and in `show`. The null runner's steps are on a virtual clock
// and its level shift (shift_at_step, shift_attempts) is the disturbance, so every verdict here is
// exact on a loaded machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "e2e_sqlite.h"
#include "e2e_util.h"
#include "record/metrics.h"
#include "record/records.h"

namespace dlbench::e2e {
namespace {

// 2 ms steps with 1% jitter; from step 1400 (about 2.8 virtual seconds, three quarters into a
// window that ends at min_time_s 4 s, so past the warm-up cut's reach) 30% longer, above the
// stability floor of 2 x target_rel_ci = 20%. A cell that does not shift is valid.
constexpr char kCell[] = R"(runner: null
matrix:
  step_ms: [2]
  jitter_pct: [1]
  virtual_time: [true]
  shift_at_step: [1400]
  shift_factor: [1.3]
)";

std::string Measure(int retries) {
  std::string m = R"(measure:
  min_steps: 50
  min_time_s: 4
  max_time_s: 8
  target_rel_ci: 0.1
)";
  if (retries > 0) m += "  retry_disturbed: " + std::to_string(retries) + "\n";
  return m;
}

struct Ran {
  std::vector<record::CellRecord> cells;
  std::string show;
  std::string err;  // run's console on stderr
};

// The lines of `text` that contain `what`.
std::vector<std::string> LinesWith(const std::string& text, const std::string& what) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    if (line.find(what) != std::string::npos) out.push_back(line);
    at = end + 1;
  }
  return out;
}

Ran RunMatrix(const TempDir& dir, const std::string& name, const std::string& text, bool reuse = false) {
  const std::string matrix = dir / (name + ".yaml"), db = dir / (name + ".db");
  WriteText(matrix, text);
  std::vector<std::string> args = {"run", matrix, "--out", dir / (name + "-out"), "--no-monitor"};
  if (reuse) args.push_back("--runner-reuse");
  const CommandResult run = Dlbench(args, dir, db);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  const CommandResult show = Dlbench({"show", "latest"}, dir, db);
  EXPECT_EQ(show.exit_code, 0) << show.err;
  return {Cells(db, 1), show.out, run.err};
}

const nlohmann::json& Attempts(const record::CellRecord& c) {
  static const nlohmann::json none;
  return c.extras.contains(record::kAttemptsExtrasKey) ? c.extras[record::kAttemptsExtrasKey] : none;
}

TEST(RetryE2E, ACellShiftedOnlyAtItsFirstAttemptIsStoredValidAtItsSecondWithTheFirstRecorded) {
  TempDir dir("retry_once");
  for (const bool reuse : {false, true}) {
    SCOPED_TRACE(reuse ? "--runner-reuse" : "a process per attempt");
    const std::string name = reuse ? "reuse" : "fresh";
    const Ran ran = RunMatrix(dir, name, std::string(kCell) + "  shift_attempts: [1]\n" + Measure(2), reuse);
    ASSERT_EQ(ran.cells.size(), 1u);
    const record::CellRecord& c = ran.cells[0];
    EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.message;
    EXPECT_EQ(c.verdict, record::Verdict::kValid) << c.verdict_reasons.dump();
    const nlohmann::json& a = Attempts(c);
    ASSERT_TRUE(a.is_object()) << c.extras.dump();
    EXPECT_EQ(a["stored"], 2);
    EXPECT_EQ(a["allowed"], 3);
    EXPECT_EQ(a["every_attempt_disturbed"], false);
    ASSERT_EQ(a["list"].size(), 2u);
    const nlohmann::json& first = a["list"][0];
    EXPECT_EQ(first["attempt"], 1);
    EXPECT_EQ(first["outcome"], "ok");
    EXPECT_EQ(first["verdict"], "shifted");
    ASSERT_FALSE(first["verdict_reasons"].empty());
    EXPECT_EQ(first["verdict_reasons"][0].get<std::string>().rfind("shifted: ", 0), 0u) << first.dump();
    EXPECT_EQ(first["stored"], false);
    // The first attempt's headline figures are kept: it ran slower after its shift.
    ASSERT_TRUE(first.contains(std::string(record::metric::kSamplesPerS))) << first.dump();
    const double first_rate = first[std::string(record::metric::kSamplesPerS)].get<double>();
    EXPECT_LT(first_rate, *record::MetricValue(c, record::metric::kSamplesPerS));
    EXPECT_EQ(a["list"][1]["verdict"], "valid");
    EXPECT_EQ(a["list"][1]["stored"], true);
    // Each attempt has its own logs; the stored cell points at its own.
    EXPECT_NE(c.stderr_path.find("cell-0000.attempt-2.stderr.log"), std::string::npos) << c.stderr_path;
    EXPECT_TRUE(std::filesystem::exists(first["stderr_path"].get<std::string>())) << first.dump();
    EXPECT_EQ(first["stderr_path"].get<std::string>().find(".attempt-"), std::string::npos);
    if (reuse) {
      // The kept process measured the cell again: CONFIGURE told it which attempt it was.
      EXPECT_EQ(c.extras["runner_process"]["cell_of_process"], 2) << c.extras.dump();
    }
    EXPECT_NE(ran.show.find("measured again (measure.retry_disturbed): valid at attempt 2 of 3"),
              std::string::npos)
        << ran.show;
    // Each attempt's line ends with the reason that names its verdict.
    const auto line = ran.show.find("attempt 1: ok shifted, ");
    ASSERT_NE(line, std::string::npos) << ran.show;
    EXPECT_NE(ran.show.substr(line, ran.show.find('\n', line) - line).find("; shifted: step time changed at"),
              std::string::npos)
        << ran.show;
    EXPECT_NE(ran.show.find("attempt 2: ok valid, "), std::string::npos) << ran.show;
    // run's live console said so when it started the second attempt, with the first's reason.
    const auto retries = LinesWith(ran.err, "measuring again");
    ASSERT_EQ(retries.size(), 1u) << ran.err;
    EXPECT_EQ(retries[0].rfind(
                  "[1/1] " + c.label +
                      "  measuring again: attempt 2 of 3, attempt 1 was shifted: " + "step time changed at",
                  0),
              0u)
        << retries[0];
  }
}

TEST(RetryE2E, ACellShiftedAtEveryAttemptIsStoredWithItsLastAndSaysSo) {
  TempDir dir("retry_every");
  const Ran ran = RunMatrix(dir, "every", std::string(kCell) + Measure(2));
  ASSERT_EQ(ran.cells.size(), 1u);
  const record::CellRecord& c = ran.cells[0];
  EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.message;
  EXPECT_EQ(c.verdict, record::Verdict::kShifted) << c.verdict_reasons.dump();
  const nlohmann::json& a = Attempts(c);
  ASSERT_TRUE(a.is_object()) << c.extras.dump();
  EXPECT_EQ(a["stored"], 3);
  EXPECT_EQ(a["allowed"], 3);
  EXPECT_EQ(a["every_attempt_disturbed"], true);
  ASSERT_EQ(a["list"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(a["list"][i]["attempt"], i + 1);
    EXPECT_EQ(a["list"][i]["verdict"], "shifted");
    EXPECT_EQ(a["list"][i]["stored"], i == 2);
  }
  EXPECT_NE(c.stderr_path.find("cell-0000.attempt-3.stderr.log"), std::string::npos) << c.stderr_path;
  EXPECT_NE(ran.show.find("shifted at attempt 3 of 3, disturbed at every attempt"), std::string::npos)
      << ran.show;
  const auto retries = LinesWith(ran.err, "measuring again");
  ASSERT_EQ(retries.size(), 2u) << ran.err;
  EXPECT_NE(retries[0].find("measuring again: attempt 2 of 3, attempt 1 was shifted: "), std::string::npos);
  EXPECT_NE(retries[1].find("measuring again: attempt 3 of 3, attempt 2 was shifted: "), std::string::npos);
}

TEST(RetryE2E, WithoutRetryDisturbedAShiftedCellIsMeasuredOnceAsBefore) {
  TempDir dir("retry_none");
  const Ran ran = RunMatrix(dir, "none", std::string(kCell) + "  shift_attempts: [1]\n" + Measure(0));
  ASSERT_EQ(ran.cells.size(), 1u);
  const record::CellRecord& c = ran.cells[0];
  EXPECT_EQ(c.verdict, record::Verdict::kShifted) << c.verdict_reasons.dump();
  EXPECT_FALSE(c.extras.contains(record::kAttemptsExtrasKey)) << c.extras.dump();
  EXPECT_EQ(c.stderr_path.find(".attempt-"), std::string::npos) << c.stderr_path;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir / "none-out")) {
    EXPECT_EQ(entry.path().filename().string().find(".attempt-"), std::string::npos) << entry.path();
  }
  EXPECT_EQ(ran.show.find("measured again"), std::string::npos) << ran.show;
  EXPECT_EQ(ran.err.find("measuring again"), std::string::npos) << ran.err;
}

TEST(RetryE2E, PlanCountsEveryAttemptInTheUpperBoundAndNamesTheCellsNotMeasuredAgain) {
  TempDir dir("retry_plan");
  const std::string matrix = dir / "plan.yaml";
  WriteText(matrix, R"(runner: null
matrix:
  step_ms: [2]
  virtual_time: [true]
include:
  - {step_ms: 3, scenario: infer, load: single_stream}
timeout_s: 10
measure:
  retry_disturbed: 2
)");
  const CommandResult json = Dlbench({"plan", matrix, "--json"}, dir, dir / "none.db");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto cells = nlohmann::json::parse(json.out);
  ASSERT_EQ(cells.size(), 2u) << json.out;
  EXPECT_EQ(cells[0]["attempts_allowed"], 3) << cells[0].dump();
  EXPECT_DOUBLE_EQ(cells[0]["estimate_high_s"].get<double>(), 30.0) << cells[0].dump();
  EXPECT_EQ(cells[1]["attempts_allowed"], 1) << cells[1].dump();
  EXPECT_EQ(cells[1]["retry_refused"].get<std::string>().rfind("a load cell", 0), 0u) << cells[1].dump();
  EXPECT_DOUBLE_EQ(cells[1]["estimate_high_s"].get<double>(), 10.0) << cells[1].dump();
  const CommandResult text = Dlbench({"plan", matrix}, dir, dir / "none.db");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("measure.retry_disturbed 2: a cell whose verdict says the machine disturbed it"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  not measured again: #1: a load cell"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace dlbench::e2e
