// `dlbench noise RUN`: each cell's within-process vs between-process spread, for a run with
// repetitions (docs/history.md "Process-to-process noise").
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "history/noise.h"

namespace dlbench::cli {

void RegisterNoise(CLI::App& app, CommandContext& ctx) {
  struct Args {
    std::string run = "latest";
    std::string metric = "throughput";
    std::string format = "table";
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand(
      "noise",
      "For a run with repetitions (each a fresh process): how far each cell's repetitions spread,\n"
      "against the interval one process claims. compare uses the wider of the two.");
  sub->add_option("run", args->run, "The run: an id, a tag, or 'latest'")->capture_default_str();
  sub->add_option("--metric", args->metric, "throughput | step_time | latency_p99 | energy")
      ->capture_default_str()
      ->check(CLI::IsMember({"throughput", "step_time", "latency_p99", "energy"}));
  sub->add_option("--format", args->format, "table | json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));
  sub->callback([args, &ctx] {
    auto metric = history::ParseMetric(args->metric);
    if (!metric.ok()) {
      ctx.exit_code = ReportError(metric.error());
      return;
    }
    std::unique_ptr<store::ResultStore> store = OpenStoreOrReport(ctx);
    if (!store) return;
    auto report = history::MeasureNoise(*store, args->run, *metric);
    if (!report.ok()) {
      ctx.exit_code = ReportError(report.error());
      return;
    }
    const std::string text = args->format == "json" ? history::NoiseToJson(*report).dump(2) + "\n"
                                                    : history::FormatNoiseTable(*report);
    std::fwrite(text.data(), 1, text.size(), stdout);
    ctx.exit_code = kExitOk;
  });
}

}  // namespace dlbench::cli
