// load::NextConfirmationRate (docs/load.md "Confirmation"): from hand-made probes, the rate the next
// confirmation runs at, on values computed by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "load/peak_search.h"

namespace dlbench::load {
namespace {

ProbeReport Search(double rate, bool passed) {
  ProbeReport p;
  p.target_qps = rate;
  p.passed = passed;
  return p;
}

ProbeReport Confirm(double rate, bool passed) {
  ProbeReport p = Search(rate, passed);
  p.confirmation = true;
  return p;
}

// The search: 100, 200, 400 and 800/s pass, 1600/s fails, 1131.4/s fails, 951.4/s fails, 872.4/s
// fails, 835.4/s passes (converged at 5%: its peak 835.4/s, the highest passing rate below it 800/s).
std::vector<ProbeReport> ConvergedSearch() {
  return {Search(100, true),    Search(200, true),    Search(400, true),
          Search(800, true),    Search(1600, false),  Search(1131.4, false),
          Search(951.4, false), Search(872.4, false), Search(835.4, true)};
}

struct Case {
  std::string name;
  std::vector<ProbeReport> confirmations;
  double rel_tolerance;
  std::optional<double> next;
};

TEST(PeakConfirmRuleTest, TheNextConfirmationBisectsBelowAFailedPeak) {
  const double m1 = std::sqrt(400.0 * 800.0);  // 565.69
  const double m2 = std::sqrt(m1 * 800.0);     // 672.72
  const std::vector<Case> cases = {
      {"first: the search's peak", {}, 0.05, 835.4},
      {"the peak passed: done", {Confirm(835.4, true)}, 0.05, std::nullopt},
      // [800, 835.4] is within 5%: 800/s, unconfirmed, is confirmed itself.
      {"narrow and unconfirmed: L itself", {Confirm(835.4, false)}, 0.05, 800.0},
      // At 1%, [800, 835.4] is wide: its geometric mean.
      {"wide: the geometric mean", {Confirm(835.4, false)}, 0.01, std::sqrt(800.0 * 835.4)},
      // 800/s failed: the next lower passing search rate, 400/s, is lo; [400, 800] is wide.
      {"L failed: bisect below it", {Confirm(835.4, false), Confirm(800, false)}, 0.05, m1},
      {"a pass raises lo", {Confirm(835.4, false), Confirm(800, false), Confirm(m1, true)}, 0.05, m2},
      {"a failure lowers hi",
       {Confirm(835.4, false), Confirm(800, false), Confirm(m1, false)},
       0.05,
       std::sqrt(400.0 * m1)},
      // The last of the five with none passed: lo (400/s) itself, not the mean.
      {"the last with none passed: L",
       {Confirm(835.4, false), Confirm(800, false), Confirm(m1, false), Confirm(475.7, false)},
       0.05,
       400.0},
      {"five run: done",
       {Confirm(835.4, false), Confirm(800, false), Confirm(m1, true), Confirm(m2, true),
        Confirm(733.6, true)},
       0.05,
       std::nullopt},
      // A confirmed lo within 5% of hi: done, with confirmations left.
      {"confirmed and narrow: done", {Confirm(835.4, false), Confirm(800, true)}, 0.05, std::nullopt},
  };
  for (const Case& c : cases) {
    std::vector<ProbeReport> probes = ConvergedSearch();
    probes.insert(probes.end(), c.confirmations.begin(), c.confirmations.end());
    EXPECT_EQ(NextConfirmationRate(probes, c.rel_tolerance), c.next) << c.name;
  }
}

// No passing search rate, or none below the failed peak: nothing (more) to confirm; a cut probe (the search's
// end) counts for nothing.
TEST(PeakConfirmRuleTest, NoPassingRateOrACutProbeGivesNothingToConfirm) {
  EXPECT_FALSE(NextConfirmationRate({Search(100, false), Search(50, false)}, 0.05));
  EXPECT_FALSE(NextConfirmationRate({Search(100, true), Search(200, false), Confirm(100, false)}, 0.05));
  ProbeReport cut = Search(200, false);
  cut.cut = true;
  EXPECT_EQ(NextConfirmationRate({Search(100, true), cut}, 0.05), 100.0);
  ProbeReport cut_confirmation = Confirm(100, false);
  cut_confirmation.cut = true;
  EXPECT_EQ(NextConfirmationRate({Search(100, true), Search(200, false), cut_confirmation}, 0.05), 100.0);
}

}  // namespace
}  // namespace dlbench::load
