// The command line as a newcomer meets it (issue 18), through the real binary: `--db` before or
// after the subcommand, every error line starting with the subcommand, options whose unit changed
// refused with what to write instead, and `run --fail-on-invalid` for CI. Step times are virtual
// (virtual_time: true), so verdicts do not depend on this machine's speed.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "e2e_sqlite.h"
#include "e2e_util.h"

namespace dlbench::e2e {
namespace {

// One valid cell (no jitter) and one that cannot reach its confidence target (lognormal jitter
// of 100% against a 1% target in one simulated second).
constexpr char kTwoVerdicts[] = R"(name: verdicts
runner: null
matrix:
  jitter_pct: [0, 100]
  jitter_dist: lognormal
  step_ms: 1
  virtual_time: true
measure:
  min_steps: 20
  min_time_s: 0.5
  max_time_s: 1.0
  target_rel_ci: 0.01
)";

CommandResult Raw(const std::vector<std::string>& args, const TempDir& dir) {
  std::vector<std::string> argv = {Bin("dlbench")};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, dir);
}

TEST(CliE2E, TheDbOptionGoesBeforeOrAfterTheSubcommand) {
  TempDir dir("cli_db");
  const std::string matrix = dir / "m.yaml", db = dir / "after.db";
  WriteText(matrix,
            "runner: null\nmatrix:\n  step_ms: 1\n  virtual_time: true\n"
            "measure: {min_steps: 20, min_time_s: 0.1, max_time_s: 0.5}\n");
  auto run = Raw({"run", matrix, "--db", db, "--out", dir / "out", "--no-monitor"}, dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(Cells(db, 1).size(), 1u);
  auto after = Raw({"runs", "--db", db}, dir);
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_NE(after.out.find("completed"), std::string::npos) << after.out;
  auto before = Raw({"--db", db, "show", "1"}, dir);
  EXPECT_EQ(before.exit_code, 0) << before.err;
  EXPECT_NE(before.out.find("run 1"), std::string::npos) << before.out;
}

TEST(CliE2E, EveryErrorLineStartsWithTheSubcommand) {
  TempDir dir("cli_errors");
  const std::string db = dir / "r.db";
  auto unknown_option = Raw({"--db", db, "show", "--colour"}, dir);
  EXPECT_EQ(unknown_option.exit_code, 2);
  EXPECT_EQ(unknown_option.err.rfind("dlbench show: ", 0), 0u) << unknown_option.err;
  // A reading command on a store that does not exist: exit 3, and nothing is created (issue 18).
  auto no_store = Raw({"--db", db, "show", "7"}, dir);
  EXPECT_EQ(no_store.exit_code, 3);
  EXPECT_EQ(no_store.err.rfind("dlbench show: store error: no dlbench store at ", 0), 0u) << no_store.err;
  EXPECT_FALSE(std::filesystem::exists(db));
  auto bad_shard = Raw({"--db", db, "plan", dir / "m.yaml", "--shard", "3/2"}, dir);
  EXPECT_EQ(bad_shard.exit_code, 2);
  EXPECT_EQ(bad_shard.err.rfind("dlbench plan: ", 0), 0u) << bad_shard.err;
  // What is wrong in a matrix file is a compiler-style diagnostic that starts with the file (an
  // editor jumps to it), not with the subcommand.
  auto missing_file = Raw({"--db", db, "run", dir / "absent.yaml"}, dir);
  EXPECT_EQ(missing_file.exit_code, 2);
  EXPECT_EQ(missing_file.err.rfind(dir / "absent.yaml" + ": error: ", 0), 0u) << missing_file.err;
  auto no_subcommand = Raw({"--db", db}, dir);
  EXPECT_EQ(no_subcommand.exit_code, 2);
  EXPECT_EQ(no_subcommand.err.rfind("dlbench: ", 0), 0u) << no_subcommand.err;
}

// report's and serve's thresholds were fractions where compare's and trend's are percent; the
// old spellings fail with the new one instead of reading 0.05 as 0.05%.
TEST(CliE2E, ThresholdsArePercentEverywhereAndTheOldFractionOptionsSaySo) {
  TempDir dir("cli_thresholds");
  const std::string db = dir / "r.db";
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"report", "--baseline-threshold", "0.05"}, "write --threshold in percent (0.05 is --threshold 5)"},
      {{"report", "--saturation-gain", "0.05"}, "write --min-gain in percent (0.05 is --min-gain 5)"},
      {{"serve", "--regression-threshold", "0.05"}, "write --threshold in percent (0.05 is --threshold 5)"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"--db", db};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = Raw(args, dir);
    EXPECT_EQ(r.exit_code, 2) << c.args[1];
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(r.err.rfind("dlbench " + c.args[0] + ": ", 0), 0u) << r.err;
  }
  for (const std::string sub : {"report", "serve"}) {
    auto help = Raw({sub, "--help"}, dir);
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_NE(help.out.find("--threshold"), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("percent"), std::string::npos) << help.out;
    EXPECT_EQ(help.out.find("-threshold FLOAT [0.05]"), std::string::npos) << help.out;
  }
}

TEST(CliE2E, FailOnInvalidTurnsANotValidVerdictIntoExitOne) {
  TempDir dir("cli_fail_on_invalid");
  const std::string matrix = dir / "m.yaml";
  WriteText(matrix, kTwoVerdicts);
  auto plain = Dlbench({"run", matrix, "--out", dir / "out", "--no-monitor"}, dir, dir / "a.db");
  ASSERT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  const auto cells = Cells(dir / "a.db", 1);
  ASSERT_EQ(cells.size(), 2u);
  int valid = 0;
  for (const auto& c : cells) {
    ASSERT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
    valid += c.verdict == record::Verdict::kValid ? 1 : 0;
  }
  ASSERT_EQ(valid, 1) << "the matrix should give one valid and one not-valid cell";
  // The summary counts the ok cells by verdict.
  EXPECT_NE(plain.err.find("2 ok (1 valid, 1 "), std::string::npos) << plain.err;

  auto strict =
      Dlbench({"run", matrix, "--out", dir / "out", "--no-monitor", "--fail-on-invalid"}, dir, dir / "b.db");
  EXPECT_EQ(strict.exit_code, 1) << strict.err;
  EXPECT_NE(strict.err.find("dlbench run: 1 ok cell is not valid (--fail-on-invalid)"), std::string::npos)
      << strict.err;
}

// Run references count back (latest~1, previous, TAG~N), and `compare RUN` compares RUN with the
// run before it.
TEST(CliE2E, CompareWithOneRunComparesItWithTheRunBefore) {
  TempDir dir("cli_refs");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix,
            "runner: null\nmatrix:\n  step_ms: [1, 2]\n  jitter_pct: 5\n  virtual_time: true\n"
            "measure: {min_steps: 20, min_time_s: 0.2, max_time_s: 0.5}\n");
  for (int i = 0; i < 3; ++i) {
    auto run = Dlbench({"run", matrix, "--out", dir / "out", "--no-monitor"}, dir, db);
    ASSERT_EQ(run.exit_code, 0) << run.err;
  }
  auto one = Dlbench({"compare", "latest", "--format", "json"}, dir, db);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  auto two = Dlbench({"compare", "2", "3", "--format", "json"}, dir, db);
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(one.out, two.out) << "compare latest is compare latest~1 latest";
  auto previous = Dlbench({"compare", "previous", "latest", "--format", "json"}, dir, db);
  EXPECT_EQ(previous.out, two.out);
  auto back_two = Dlbench({"show", "latest~2"}, dir, db);
  EXPECT_EQ(back_two.exit_code, 0) << back_two.err;
  EXPECT_NE(back_two.out.find("run 1"), std::string::npos) << back_two.out;
  auto too_far = Dlbench({"compare", "1"}, dir, db);
  EXPECT_EQ(too_far.exit_code, 2) << too_far.err;
  EXPECT_NE(too_far.err.find("dlbench compare: not found: run reference '1~1': 0 runs come before run 1"),
            std::string::npos)
      << too_far.err;
}
}  // namespace
}  // namespace dlbench::e2e

namespace dlbench::e2e {
namespace {

// --set measure.KEY=VALUE overrides the matrix's measure section for plan and run, is stored with
// the run (show prints it), must match on --resume, and is checked as the YAML would be.
TEST(CliE2E, SetOverridesAMeasureSettingAndIsStoredWithTheRun) {
  TempDir dir("cli_set");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix,
            "runner: null\nmatrix:\n  step_ms: 1\n  jitter_pct: 100\n  jitter_dist: lognormal\n  "
            "virtual_time: true\n"
            "measure: {min_steps: 20, min_time_s: 0.01, max_time_s: 1.0, target_rel_ci: 0.0001}\n");
  auto run = Dlbench({"run", matrix, "--out", dir / "out", "--no-monitor", "--set", "measure.max_steps=60"},
                     dir, db);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto store = store::OpenSqliteStore(db);
  ASSERT_TRUE(store.ok());
  store::CellQuery q;
  q.with_steps = true;
  auto cells = (*store)->GetCells(1, q);
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ(cells->size(), 1u);
  // Without the override, 1 ms virtual steps that never reach the CI target run until max_time_s
  // (about 1000 steps).
  // The policy checks the ceiling per batch of records, so the window ends within a batch of it.
  ASSERT_TRUE((*cells)[0].window.has_value());
  EXPECT_LE((*cells)[0].window->first_step + (*cells)[0].window->steps, 200) << (*cells)[0].stop_reason;
  EXPECT_NE((*cells)[0].stop_reason.find("max_steps"), std::string::npos) << (*cells)[0].stop_reason;
  auto stored = (*store)->GetRun(1);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->selection.set, (std::vector<std::string>{"measure.max_steps=60"}));
  auto show = Dlbench({"show", "1"}, dir, db);
  EXPECT_NE(show.out.find("selection: --set measure.max_steps=60"), std::string::npos) << show.out;

  auto other = Dlbench({"run", matrix, "--resume", "1", "--set", "measure.max_steps=70"}, dir, db);
  EXPECT_EQ(other.exit_code, 2) << other.err;
  EXPECT_NE(other.err.find("was started with --set measure.max_steps=60"), std::string::npos) << other.err;

  for (const auto& bad : {std::pair{"measure.max_stepz=5", "unknown key 'measure.max_stepz'"},
                          std::pair{"measure.max_steps=-1", "--set measure.max_steps=-1: "},
                          std::pair{"measure.max_time_s=0.001", "expected min_time_s <= max_time_s"},
                          std::pair{"timeout_s=5", "expected measure.KEY=VALUE"}}) {
    auto refused = Dlbench({"plan", matrix, "--set", bad.first}, dir, db);
    EXPECT_EQ(refused.exit_code, 2) << bad.first << refused.err;
    EXPECT_NE(refused.err.find(bad.second), std::string::npos) << bad.first << ": " << refused.err;
  }
}

// `params` cuts meanings to a line and says how to see one whole; `params KEY` prints it whole,
// with the models where `model` takes any name; an unknown key suggests the nearest.
TEST(CliE2E, ParamsPrintsAKeyWholeAndNamesTheModels) {
  TempDir dir("params");
  auto table = Dlbench({"params"}, dir, dir / "p.db");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("dlbench params KEY prints a key in full"), std::string::npos) << table.out;
  auto model = Dlbench({"params", "model", "target_qps"}, dir, dir / "p.db");
  ASSERT_EQ(model.exit_code, 0) << model.err;
  EXPECT_NE(model.out.find("model: a cell parameter"), std::string::npos) << model.out;
  EXPECT_NE(model.out.find("the torch runner: resnet50, mobilenet_v2, bert_base"), std::string::npos)
      << model.out;
  EXPECT_NE(model.out.find("required: with runner: torch"), std::string::npos) << model.out;
  // target_qps's whole help, past its first sentence, which the table cuts.
  EXPECT_NE(model.out.find("so that a typo is caught here"), std::string::npos) << model.out;
  EXPECT_EQ(table.out.find("so that a typo is caught here"), std::string::npos);
  auto typo = Dlbench({"params", "modle"}, dir, dir / "p.db");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("dlbench params: invalid input: no key 'modle'; did you mean 'model'?"),
            std::string::npos)
      << typo.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "p.db")) << "params opens no store";
}

// A check that could not run is said, not silently left out: a 30-step virtual-time cell is too
// short for the drift/shift test, and its virtual clock leaves the monitor nothing to judge.
TEST(CliE2E, ShowSaysWhichChecksWereSkippedAndWhy) {
  TempDir dir("skipped");
  const std::string matrix = dir / "m.yaml";
  WriteText(matrix,
            "name: skipped\nrunner: null\nmatrix:\n  model: a\n  step_ms: 2\n  virtual_time: true\n"
            "measure:\n  min_steps: 20\n  max_steps: 30\n  min_time_s: 0\n");
  auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, dir / "s.db");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto show = Dlbench({"show", "latest"}, dir, dir / "s.db");
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("skipped: the drift/shift check: fewer than 10 batches of 5 measured steps"),
            std::string::npos)
      << show.out;
  EXPECT_NE(
      show.out.find("skipped: the monitor's checks (energy, throttling, leaks): the runner reported virtual "
                    "step times (virtual_time)"),
      std::string::npos)
      << show.out;
}

// plan bounds each cell's time and names the cells whose max_time_s cannot hold an interval's
// steps at their declared step time; the run then ends exactly those too_short. Virtual time, so
// the steps are what step_ms says whatever the machine's load.
TEST(CliE2E, PlanBoundsTheTimeAndNamesTheCellsTooSlowForAnInterval) {
  TempDir dir("cli_plan_bounds");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(
      matrix,
      "runner: null\nmatrix:\n  step_ms: [10, 250, 500]\n  virtual_time: true\ntimeout_s: 30\nmeasure:\n  "
      "min_time_s: 1\n  max_time_s: 4\n");
  auto plan = Dlbench({"plan", matrix}, dir, db);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  // 1 s (min_time_s) + 3 s (12 steps of 250 ms) + 4 s (max_time_s caps 6 s of 500 ms steps).
  EXPECT_NE(
      plan.out.find("\n3 cells (runner null, grouped order); estimated 8.0 s, between 8.0 s and 1:30\n"),
      std::string::npos)
      << plan.out;
  EXPECT_NE(plan.out.find("* no history for 3 cells"), std::string::npos) << plan.out;
  EXPECT_NE(
      plan.out.find("2 cells cannot reach the measured steps a confidence interval needs within "
                    "max_time_s:\n  #1 step_ms=250.0: 250 ms per step (declared), so max_time_s 4 holds "
                    "about 16 steps; an interval needs 25 (warm-up cut included): raise max_time_s to about "
                    "8 s\n  #2 step_ms=500.0: 500 ms per step (declared), so max_time_s 4 holds about 8 "
                    "steps, fewer than min_steps 10 (it ends invalid: too little data); an interval needs 25 "
                    "(warm-up cut included): raise max_time_s to about 14 s\n"),
      std::string::npos)
      << plan.out;
  EXPECT_EQ(plan.out.find("#0 step_ms=10.0:"), std::string::npos) << "400 steps fit in 4 s: " << plan.out;
  auto json = Dlbench({"plan", matrix, "--json"}, dir, db);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto cells = nlohmann::json::parse(json.out);
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0]["reachable_steps"], 400);
  EXPECT_EQ(cells[1]["reachable_steps"], 16);
  EXPECT_EQ(cells[2]["estimate_high_s"], 30);

  // The run ends them as plan said: the 250 ms cell too_short, the 500 ms one invalid.
  auto run = Dlbench({"run", matrix, "--out", dir / "out", "--no-monitor"}, dir, db);
  EXPECT_EQ(run.exit_code, 1) << run.err;
  const auto stored = Cells(db, 1);
  ASSERT_EQ(stored.size(), 3u);
  EXPECT_EQ(stored[0].outcome, record::Outcome::kOk);
  EXPECT_NE(stored[0].verdict, record::Verdict::kTooShort);
  EXPECT_EQ(stored[1].outcome, record::Outcome::kOk);
  EXPECT_EQ(stored[1].verdict, record::Verdict::kTooShort);
  EXPECT_EQ(stored[2].outcome, record::Outcome::kInvalid);
  // With history the estimate is the stored durations' and the footnote is gone.
  auto again = Dlbench({"plan", matrix}, dir, db);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out.find("* no history"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("2 cells cannot reach"), std::string::npos) << again.out;
}

}  // namespace
}  // namespace dlbench::e2e
