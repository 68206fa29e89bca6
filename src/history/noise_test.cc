#include "history/noise.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "history/test_runs.h"

namespace dlbench::history {
namespace {

using testing::CellSpec;
using ::testing::HasSubstr;
using testing::TempStore;

// The throughput a CellSpec without jitter stores: samples over the window, first start to last
// end, with MakeCell's 1000 ns between steps.
double Throughput(double step_ms, int steps, std::uint32_t samples) {
  const auto d = static_cast<std::int64_t>(step_ms * 1e6);
  const double window_ns = static_cast<double>(steps) * static_cast<double>(d) + (steps - 1) * 1000.0;
  return static_cast<double>(samples) * steps / (window_ns * 1e-9);
}

std::vector<CellSpec> Repetitions(const std::string& model, std::vector<double> step_ms) {
  std::vector<CellSpec> out;
  for (std::size_t r = 0; r < step_ms.size(); ++r) {
    CellSpec c;
    c.model = model;
    c.step_ms = step_ms[r];
    c.jitter_pct = 0;
    c.repetition = static_cast<int>(r);
    c.seed = 100 + r;
    out.push_back(c);
  }
  return out;
}

TEST(HistoryNoise, BetweenProcessSpreadIsTheRepetitionsFigures) {
  TempStore db;
  std::vector<CellSpec> cells = Repetitions("three", {1.96, 2.0, 2.04});
  for (const CellSpec& c : Repetitions("single", {2.0})) cells.push_back(c);
  const auto run = db.AddRun(cells);
  auto report = MeasureNoise(db.store(), std::to_string(run), Metric::kThroughput);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_EQ(report->cells.size(), 1u);
  const CellNoise& n = report->cells[0];
  EXPECT_EQ(n.label, "three");
  EXPECT_EQ(n.repetitions, 3);
  // By hand: mean, sample stddev (n - 1) and t(0.975, 2) = 4.302652729749464 of the three figures.
  const double f[] = {Throughput(1.96, 300, 8), Throughput(2.0, 300, 8), Throughput(2.04, 300, 8)};
  const double mean = (f[0] + f[1] + f[2]) / 3;
  const double sd = std::sqrt(
      ((f[0] - mean) * (f[0] - mean) + (f[1] - mean) * (f[1] - mean) + (f[2] - mean) * (f[2] - mean)) / 2);
  EXPECT_NEAR(n.mean, mean, 1e-9 * mean);
  EXPECT_NEAR(n.between_cv, sd / mean, 1e-12);
  EXPECT_NEAR(n.between_rel_halfwidth, 4.302652729749464 * sd / std::sqrt(3.0) / mean, 1e-9);
  // No repetition stored its own interval: nothing to set the between spread against.
  EXPECT_FALSE(n.within_rel_halfwidth.has_value());
  EXPECT_FALSE(n.between_over_within.has_value());
  // The single-repetition cell is named, not silently dropped.
  ASSERT_EQ(report->skipped.size(), 1u);
  EXPECT_EQ(report->skipped[0], "single");

  const std::string table = FormatNoiseTable(*report);
  EXPECT_THAT(table, HasSubstr("three"));
  EXPECT_THAT(table, HasSubstr("1 cell with fewer than 2 ok repetitions left out"));
  const nlohmann::json json = NoiseToJson(*report);
  EXPECT_EQ(json["cells"][0]["repetitions"], 3);
  EXPECT_TRUE(json["cells"][0]["within_rel_halfwidth"].is_null());
  EXPECT_EQ(json["skipped"][0], "single");
}

TEST(HistoryNoise, FailedRepetitionsDoNotCountAndUnknownRunsAreNotFound) {
  TempStore db;
  std::vector<CellSpec> cells = Repetitions("m", {2.0, 2.0});
  cells[1].outcome = record::Outcome::kCrashed;
  const auto run = db.AddRun(cells);
  auto report = MeasureNoise(db.store(), std::to_string(run), Metric::kThroughput);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->cells.empty());
  ASSERT_EQ(report->skipped.size(), 1u);
  EXPECT_THAT(FormatNoiseTable(*report), HasSubstr("no cell has 2 or more ok repetitions"));

  auto missing = MeasureNoise(db.store(), "9999", Metric::kThroughput);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::kNotFound);
}

}  // namespace
}  // namespace dlbench::history
