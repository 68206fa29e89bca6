// dlbench metrics: every metric dlbench stores, from its one definition (record/metrics.h), the
// same table docs/metrics.md is generated from.
#include "cli/commands.h"
#include "record/metrics.h"

namespace dlbench::cli {

void RegisterMetrics(CLI::App& app, CommandContext& ctx) {
  auto format = std::make_shared<std::string>("text");
  CLI::App* cmd = app.add_subcommand(
      "metrics", "List every stored metric: name, unit, producer, which steps or samples, definition");
  cmd->add_option("--format", *format,
                  "text (aligned, for the terminal), markdown (docs/metrics.md) or names")
      ->check(CLI::IsMember({"text", "markdown", "names"}))
      ->capture_default_str();
  cmd->footer(
      "A metric a cell cannot give (no GPU, too few steps) is absent, never 0. A runner's EXTRAS metric\n"
      "whose name is not declared here is kept in the cell's extras.undeclared_metrics with a warning.");
  cmd->callback([format, &ctx] {
    if (*format == "markdown") {
      std::printf("%s", record::RenderMetricsMarkdown().c_str());
    } else if (*format == "names") {
      for (const auto& d : record::MetricDefinitions())
        std::printf("%.*s\n", static_cast<int>(d.name.size()), d.name.data());
    } else {
      std::printf("%s", record::RenderMetricsText().c_str());
    }
    ctx.exit_code = kExitOk;
  });
}

}  // namespace dlbench::cli
