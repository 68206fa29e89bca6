// dlbench runs: the stored runs, newest first.
#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/console.h"
#include "common/clock.h"

namespace dlbench::cli {

void RegisterRuns(CLI::App& app, CommandContext& ctx) {
  auto limit = std::make_shared<int>(50);
  CLI::App* cmd = app.add_subcommand("runs", "List stored runs, newest first");
  cmd->add_option("-n,--limit", *limit, "Show at most this many runs")->capture_default_str();
  cmd->callback([limit, &ctx] {
    auto store = OpenStoreForReadingOrReport(ctx);
    if (!store) return;
    auto runs = store->ListRuns();
    if (!runs.ok()) {
      ctx.exit_code = ReportError(runs.error());
      return;
    }
    if (runs->empty()) {
      std::printf("no runs in %s yet (start one: dlbench run examples/quickstart.yaml)\n",
                  ctx.db_path.c_str());
      return;
    }
    Table table({{"run", true},
                 {"name", false},
                 {"started (UTC)", false},
                 {"duration", true},
                 {"status", false},
                 {"cells", true},
                 {"env", false},
                 {"tags", false}});
    int shown = 0;
    for (const auto& r : *runs) {
      if (shown++ >= *limit) break;
      std::string tags;
      for (const auto& t : r.tags) tags += (tags.empty() ? "" : ",") + t;
      const std::string duration =
          r.finished_wall_ns
              ? FormatSeconds(static_cast<double>(*r.finished_wall_ns - r.started_wall_ns) * 1e-9)
              : "-";
      table.AddRow({std::to_string(r.id), r.name, FormatUtc(r.started_wall_ns), duration,
                    std::string(record::Name(r.status)), std::to_string(r.total_cells),
                    r.environment_hash.substr(0, 8), tags});
    }
    std::printf("%s", table.Render().c_str());
  });
}

}  // namespace dlbench::cli
