// `dlbench selftest`: the calibration self-test (docs/measurement.md "Calibration"). Exit 0 when
// every check meets its target, 1 when one does not.
#include <cstdio>
#include <memory>
#include <string>

#include "calibration/selftest.h"
#include "cli/commands.h"

namespace dlbench::cli {

void RegisterSelftest(CLI::App& app, CommandContext& ctx) {
  struct Args {
    calibration::SelftestOptions options;
    std::string format = "table";
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand(
      "selftest",
      "Checks the measurement method on simulated cells whose truth is known: the null runner's\n"
      "step model in virtual time (normal, lognormal and bimodal jitter, warm-up transients, drift,\n"
      "a level shift) through the real measurement policy, verdicts and compare. Prints each check's\n"
      "figure against its target: interval coverage, warm-up cut, percentiles, drift/shift hit and\n"
      "false-alarm rates, compare's false alarms on identical runs. Needs no runner, GPU or store;\n"
      "takes seconds. Exit 1 when a check misses its target.");
  sub->add_option("--seeds", args->options.seeds, "Simulated cells per check (10..100000)")
      ->capture_default_str()
      ->check(CLI::Range(10, calibration::kMaxSeeds));
  sub->add_option("--compare-pairs", args->options.compare_pairs,
                  "Pairs of identical simulated runs for compare's false-alarm rate (1..10000)")
      ->capture_default_str()
      ->check(CLI::Range(1, calibration::kMaxComparePairs));
  sub->add_option("--seed", args->options.seed, "First seed; the same seed gives the same figures")
      ->capture_default_str();
  sub->add_option("--format", args->format, "table | json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));
  sub->callback([args, &ctx] {
    const calibration::SelftestReport report = calibration::RunSelftest(args->options);
    const std::string text = args->format == "json" ? calibration::SelftestToJson(report).dump(2) + "\n"
                                                    : calibration::FormatSelftest(report);
    std::fwrite(text.data(), 1, text.size(), stdout);
    ctx.exit_code = report.Passed() ? kExitOk : kExitFailureFound;
  });
}

}  // namespace dlbench::cli
