// `dlbench trend [FILTER]`: each matching cell's metric across the stored runs, with change points.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "history/trend.h"

namespace dlbench::cli {
namespace {

struct TrendArgs {
  std::vector<std::string> filter;
  std::vector<std::string> only;
  std::string metric = "throughput";
  std::string format = "table";
  double min_shift_pct = 2.0;
  double alpha = 0.05;
  std::vector<std::string> ignore_params;
};

int RunTrend(const TrendArgs& args, CommandContext& ctx) {
  auto filter = history::ParseTrendFilter(args.filter);
  if (!filter.ok()) return ReportError(filter.error());
  auto only = plan::ParseCellFilter(args.only);
  if (!only.ok()) return ReportError(only.error());
  filter->only = std::move(only).value();
  auto metric = history::ParseMetric(args.metric);
  if (!metric.ok()) return ReportError(metric.error());
  auto format = history::ParseTrendFormat(args.format);
  if (!format.ok()) return ReportError(format.error());
  history::TrendOptions options;
  options.metric = *metric;
  options.min_rel_shift = args.min_shift_pct / 100.0;
  options.alpha = args.alpha;
  options.ignore_params = args.ignore_params;

  std::unique_ptr<store::ResultStore> store = OpenStoreForReadingOrReport(ctx);
  if (!store) return ctx.exit_code;
  auto trends = history::LoadTrends(*store, *filter, options);
  if (!trends.ok()) return ReportError(trends.error());
  const std::string text = history::FormatTrends(*trends, *metric, *format);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

}  // namespace

void RegisterTrend(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<TrendArgs>();
  CLI::App* sub = app.add_subcommand(
      "trend",
      "The history of each matching cell across runs: one row per run, a sparkline, and change points\n"
      "(a new level, dated, with the environment fields that changed there).");
  sub->add_option("filter", args->filter,
                  "name=value terms the cell parameters must all match (model=resnet50)");
  sub->add_option(
         "--only", args->only,
         "Keep matching cells, in run --only's syntax: model=resnet50,bs=32 (all terms), name!=value, "
         "a word of the label; repeat for either of several")
      ->allow_extra_args(false);
  sub->add_option("--metric", args->metric, "throughput | step_time | latency_p99 | energy")
      ->capture_default_str()
      ->check(CLI::IsMember({"throughput", "step_time", "latency_p99", "energy"}));
  sub->add_option("--format", args->format, "table | csv | json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "csv", "json"}));
  sub->add_option("--min-shift", args->min_shift_pct,
                  "Smallest level shift in percent reported as a change point")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 99.0));
  sub->add_option("--alpha", args->alpha, "Significance of a change point (Bonferroni over the splits tried)")
      ->capture_default_str()
      ->check(CLI::Range(1e-9, 0.5));
  sub->add_option("--ignore-param", args->ignore_params,
                  "Leave this parameter out of the key (repeatable), to follow a cell across a change of it")
      ->allow_extra_args(false);
  sub->callback([args, &ctx] { ctx.exit_code = RunTrend(*args, ctx); });
}

}  // namespace dlbench::cli
