#include "calibration/selftest.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dlbench::calibration {
namespace {

TEST(WilsonIntervalTest, HandComputedValues) {
  // 95 of 100: centre (0.95 + z^2/200) / (1 + z^2/100) with z = 1.959964 -> [0.88825, 0.97846].
  const ShareInterval w = WilsonInterval(95, 100);
  EXPECT_NEAR(w.low, 0.8882495, 1e-6);
  EXPECT_NEAR(w.high, 0.9784563, 1e-6);
  // The ends stay inside [0, 1] and are not degenerate.
  const ShareInterval none = WilsonInterval(0, 20);
  EXPECT_EQ(none.low, 0.0);
  EXPECT_NEAR(none.high, 0.1611252, 1e-6);
  const ShareInterval all = WilsonInterval(20, 20);
  EXPECT_NEAR(all.low, 0.8388748, 1e-6);
  EXPECT_EQ(all.high, 1.0);
  EXPECT_TRUE(std::isnan(WilsonInterval(0, 0).low));
}

TEST(SelftestOptionsTest, BoundsAreChecked) {
  SelftestOptions o;
  EXPECT_TRUE(ValidateOptions(o).ok());
  o.seeds = 9;
  EXPECT_FALSE(ValidateOptions(o).ok());
  o.seeds = kMaxSeeds + 1;
  EXPECT_FALSE(ValidateOptions(o).ok());
  o.seeds = 100;
  o.compare_pairs = 0;
  EXPECT_FALSE(ValidateOptions(o).ok());
  EXPECT_THROW(RunSelftest(o), std::invalid_argument);
}

// The method meets every target on fixed seeds (issue 17: "the same checks run in CI as tests with
// fixed seeds"). A regression in the policy, the interval, the warm-up cut, the stability tests or
// compare moves one of these figures out of its band.
TEST(SelftestTest, EveryCheckMeetsItsTargetOnFixedSeeds) {
  SelftestOptions o;
  o.seeds = 400;
  o.compare_pairs = 40;
  o.seed = 1;
  const SelftestReport report = RunSelftest(o);
  ASSERT_EQ(report.checks.size(), 14u);
  for (const Check& c : report.checks) {
    EXPECT_TRUE(c.pass) << c.name << ": " << c.figure << " (target " << c.target << ") " << c.detail;
  }
  EXPECT_TRUE(report.Passed());
  EXPECT_GT(report.simulated_steps, 400 * 1000);
  // Coverage checks are shares of the seeds that gave an interval.
  EXPECT_NE(report.checks[0].name.find("coverage"), std::string::npos);
  EXPECT_GE(report.checks[0].value, 0.93);
  EXPECT_LE(report.checks[0].value, 0.97);
}

TEST(SelftestTest, TheSameSeedGivesTheSameFigures) {
  SelftestOptions o;
  o.seeds = 20;
  o.compare_pairs = 2;
  o.seed = 7;
  const SelftestReport a = RunSelftest(o), b = RunSelftest(o);
  ASSERT_EQ(a.checks.size(), b.checks.size());
  for (std::size_t i = 0; i < a.checks.size(); ++i) EXPECT_EQ(a.checks[i].figure, b.checks[i].figure) << i;
  EXPECT_EQ(a.simulated_steps, b.simulated_steps);
  const nlohmann::json j = SelftestToJson(a);
  EXPECT_EQ(j["checks"].size(), a.checks.size());
  EXPECT_EQ(j["seed"], 7);
  EXPECT_NE(FormatSelftest(a).find("checks"), std::string::npos);
}

}  // namespace
}  // namespace dlbench::calibration
