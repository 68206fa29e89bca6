// dlbench report RUN [--baseline RUN] -o report.html: the self-contained HTML report.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "common/files.h"
#include "common/human_text.h"
#include "common/text.h"
#include "history/compare.h"
#include "monitor/fingerprint.h"
#include "report/html_report.h"
#include "store/sweep.h"

namespace dlbench::cli {
namespace {

struct ReportArgs {
  std::string run = "latest";
  std::string baseline;
  std::string output;
  std::string db;
  double min_gain_pct = 5.0;
  double threshold_pct = 2.0;  // compare's default, so the report's verdicts are compare's
};

int Report(const ReportArgs& args, CommandContext& ctx) {
  if (!args.db.empty()) ctx.db_path = args.db;
  auto store = OpenStoreForReadingOrReport(ctx);
  if (!store) return ctx.exit_code;

  report::ReportInput input;
  store::CellQuery everything;
  everything.with_steps = true;
  everything.with_series = true;
  auto loaded = store::LoadRun(*store, args.run, everything);
  if (!loaded.ok()) return ReportError(loaded.error());
  input.run = std::move(loaded->run);
  input.cells = std::move(loaded->cells);
  input.warnings = monitor::FingerprintWarnings(input.run.environment);
  // A sweep's missing shard is said where the reader looks: in the report's warnings.
  for (const std::string& n : loaded->notes) input.warnings.push_back(args.run + ": " + n);

  if (!args.baseline.empty()) {
    auto base = store::LoadRun(*store, args.baseline, store::CellQuery{});
    if (!base.ok()) return ReportError(base.error());
    input.baseline_run = std::move(base->run);
    input.baseline_cells = std::move(base->cells);
    for (const std::string& n : base->notes) input.warnings.push_back(args.baseline + ": " + n);
    // The statistical comparison needs the baseline's raw steps; it is the one `compare` prints.
    history::CompareOptions compare_options;
    compare_options.threshold = args.threshold_pct / 100.0;
    // Sweeps are named as given; runs by id, so that "latest" cannot move between the reads.
    const std::string base_ref =
        store::SweepOfRef(args.baseline) ? args.baseline : std::to_string(input.baseline_run->id);
    const std::string run_ref = loaded->sweep ? args.run : std::to_string(input.run.id);
    auto comparison = history::CompareStoredRuns(*store, base_ref, run_ref, compare_options);
    if (!comparison.ok()) return ReportError(comparison.error());
    input.comparison = std::move(comparison).value();
  }

  report::ReportOptions options;
  options.saturation.min_gain_per_doubling = args.min_gain_pct / 100.0;
  options.baseline_threshold = args.threshold_pct / 100.0;
  const std::string path = !args.output.empty() ? args.output
                           : loaded->sweep      ? "dlbench-report-sweep-" + loaded->sweep->name + ".html"
                                                : "dlbench-report-" + std::to_string(input.run.id) + ".html";
  Status written = WriteOutputFile(path, report::RenderHtmlReport(input, options));
  if (!written.ok()) return ReportError(written.error());
  const std::string what =
      loaded->sweep ? "sweep " + loaded->sweep->name : "run " + std::to_string(input.run.id);
  std::printf("wrote %s (%s, %s)\n", path.c_str(), TerminalSafe(what).c_str(),
              CountNoun(static_cast<std::int64_t>(input.cells.size()), "cell").c_str());
  return kExitOk;
}

}  // namespace

void RegisterReport(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand("report", "Write a self-contained HTML report of a run (works offline)");
  cmd->add_option("run", args->run, "Run id, tag, 'latest', or sweep:NAME (a sweep's shards as one run)")
      ->capture_default_str();
  cmd->add_option("--baseline", args->baseline, "Compare against this run (id, tag, 'latest' or sweep:NAME)");
  cmd->add_option("-o,--output", args->output, "The HTML file (default: dlbench-report-<run id>.html)");
  cmd->add_option("--min-gain", args->min_gain_pct,
                  "A batch doubling pays when throughput grows by at least this many percent")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  cmd->add_option("--threshold", args->threshold_pct,
                  "With --baseline: smallest change in percent worth a faster/slower verdict, as in "
                  "'dlbench compare' (the same default)")
      ->check(CLI::Range(0.0, 99.0))
      ->capture_default_str();
  RetireOption(cmd, "--saturation-gain", "write --min-gain in percent (0.05 is --min-gain 5)");
  RetireOption(cmd, "--baseline-threshold", "write --threshold in percent (0.05 is --threshold 5)");
  cmd->add_option("--db", args->db,
                  "The store: a SQLite file or a postgresql:// URL (overrides the global --db)");
  cmd->callback([args, &ctx] { ctx.exit_code = Report(*args, ctx); });
}

}  // namespace dlbench::cli
