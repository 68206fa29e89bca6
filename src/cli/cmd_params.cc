// dlbench params: every key a matrix may hold, from the parameter registry (the same source as
// validation and docs/config-reference.md).
#include "cli/commands.h"
#include "config/registry.h"

namespace dlbench::cli {

void RegisterParams(CLI::App& app, CommandContext& ctx) {
  auto markdown = std::make_shared<bool>(false);
  CLI::App* cmd =
      app.add_subcommand("params", "List every matrix key: type, unit, default, allowed values, help");
  cmd->add_flag("--markdown", *markdown, "Print the full reference (docs/config-reference.md) instead");
  cmd->callback([markdown, &ctx] {
    std::printf("%s", (*markdown ? config::RenderConfigReference() : config::RenderParamHelp()).c_str());
    ctx.exit_code = kExitOk;
  });
}

}  // namespace dlbench::cli
