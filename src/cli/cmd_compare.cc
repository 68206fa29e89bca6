// `dlbench compare BASE CANDIDATE`: cell-by-cell verdicts between two runs (docs/history.md).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "common/human_text.h"
#include "common/text.h"
#include "history/compare.h"
#include "history/compare_format.h"
#include "store/sweep.h"

namespace dlbench::cli {
namespace {

struct CompareArgs {
  std::string base;
  std::string candidate;
  std::string metric = "throughput";
  double threshold_pct = 2.0;
  double alpha = 0.05;
  std::string format = "table";
  bool fail_on_regression = false;
  bool strict = false;
  std::vector<std::string> ignore_params;
  double min_matched_pct = 50.0;
};

int RunCompare(const CompareArgs& args, CommandContext& ctx) {
  auto metric = history::ParseMetric(args.metric);
  if (!metric.ok()) return ReportError(metric.error());
  auto format = history::ParseCompareFormat(args.format);
  if (!format.ok()) return ReportError(format.error());
  history::CompareOptions options;
  options.metric = *metric;
  options.threshold = args.threshold_pct / 100.0;
  options.alpha = args.alpha;
  options.strict = args.strict;
  options.ignore_params = args.ignore_params;
  options.min_matched_share = args.min_matched_pct / 100.0;

  std::unique_ptr<store::ResultStore> store = OpenStoreForReadingOrReport(ctx);
  if (!store) return ctx.exit_code;
  // One run: against the run before it (`compare latest` is `compare latest~1 latest`).
  if (args.candidate.empty() && store::SweepOfRef(args.base)) {
    return ReportError(
        MakeError(ErrorKind::kInvalidInput,
                  "compare " + args.base + ": a sweep has no run before it; give the two to compare"));
  }
  const std::string base = args.candidate.empty() ? args.base + "~1" : args.base;
  const std::string candidate = args.candidate.empty() ? args.base : args.candidate;
  auto cmp = history::CompareStoredRuns(*store, base, candidate, options);
  if (!cmp.ok()) return ReportError(cmp.error());
  for (const std::string& n : cmp->notes)
    std::fprintf(stderr, "dlbench compare: note: %s\n", TerminalSafe(n).c_str());
  const std::string text = history::FormatComparison(*cmp, *format);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  if (args.fail_on_regression && cmp->MatchedShare() < options.min_matched_share) {
    // A gate that compared (almost) nothing must not pass.
    std::string why = cmp->differing_params.empty() ? "" : "; the cells differ in ";
    for (std::size_t i = 0; i < cmp->differing_params.size(); ++i)
      why += (i ? "; " : "") + cmp->differing_params[i];
    std::fprintf(
        stderr,
        "dlbench compare: only %zu of %s matched a candidate cell (%.0f%%, below the "
        "--min-matched %.0f%%): nothing to gate on%s\n",
        cmp->cells.size(),
        CountNoun(static_cast<std::int64_t>(cmp->cells.size() + cmp->only_in_base.size()), "base cell")
            .c_str(),
        100 * cmp->MatchedShare(), 100 * options.min_matched_share, why.c_str());
    return kExitTooFewMatched;
  }
  if (args.fail_on_regression && cmp->Regressions() > 0) {
    std::fprintf(stderr, "dlbench compare: %d regression%s (--fail-on-regression)\n", cmp->Regressions(),
                 cmp->Regressions() == 1 ? "" : "s");
    return kExitFailureFound;
  }
  return kExitOk;
}

}  // namespace

void RegisterCompare(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* sub = app.add_subcommand(
      "compare",
      "Compare two runs cell by cell: the ratio candidate/base with a confidence interval, a p-value\n"
      "adjusted over the matrix (Benjamini-Hochberg) and a verdict (faster, slower, no change, not\n"
      "comparable); environment differences are named. Runs are ids, tags, 'latest', 'previous' or RUN~N, "
      "or\n"
      "sweep:NAME (a sweep's shards as one run); 'compare RUN' compares RUN with the run before it.");
  sub->add_option("base", args->base,
                  "The base run: an id, a tag, 'latest', 'previous' or RUN~N (N runs before RUN); given "
                  "alone, the candidate, compared with the run before it")
      ->required();
  sub->add_option("candidate", args->candidate, "The candidate run (same forms)");
  sub->add_option("--metric", args->metric, "throughput | step_time | latency_p99 | energy")
      ->capture_default_str()
      ->check(CLI::IsMember({"throughput", "step_time", "latency_p99", "energy"}));
  sub->add_option(
         "--threshold", args->threshold_pct,
         "Smallest change in percent worth a verdict: the whole confidence interval must lie beyond it")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 99.0));
  sub->add_option("--alpha", args->alpha, "False-discovery rate over the matrix (Benjamini-Hochberg)")
      ->capture_default_str()
      ->check(CLI::Range(1e-9, 0.5));
  sub->add_option("--format", args->format, "table | json | markdown (for a pull-request comment)")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json", "markdown"}));
  sub->add_flag("--fail-on-regression", args->fail_on_regression,
                "Exit with code 1 when any cell is slower (for CI pipelines); with code 5 when fewer than "
                "--min-matched percent of the base's cells found a match, so a gate never passes by "
                "comparing nothing");
  sub->add_option("--min-matched", args->min_matched_pct,
                  "With --fail-on-regression: the percent of the base's cells that must be matched")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  sub->add_flag("--strict", args->strict,
                "Refuse (exit 2) when an environment field that decides comparability differs");
  sub->add_option(
         "--ignore-param", args->ignore_params,
         "Match cells leaving out this parameter (repeatable), to compare across a deliberate change")
      ->allow_extra_args(false);
  sub->callback([args, &ctx] { ctx.exit_code = RunCompare(*args, ctx); });
}

}  // namespace dlbench::cli
