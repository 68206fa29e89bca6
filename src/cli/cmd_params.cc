// dlbench params: every key a matrix may hold, from the parameter registry (the same source as
// validation and docs/config-reference.md).
#include <string>

#include "cli/commands.h"
#include "config/registry.h"

namespace dlbench::cli {

void RegisterParams(CLI::App& app, CommandContext& ctx) {
  auto markdown = std::make_shared<bool>(false);
  auto doc_table = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("params", "List every matrix key: type, unit, default, allowed values, help");
  cmd->add_flag("--markdown", *markdown, "Print the full reference (docs/config-reference.md) instead");
  cmd->add_option("--doc-table", *doc_table,
                  "Print the registry's columns of a runner's parameter table (docs/torch-runner.md), "
                  "with an empty notes column")
      ->check(CLI::IsMember({"null", "torch"}));
  cmd->callback([markdown, doc_table, &ctx] {
    std::string out;
    if (!doc_table->empty()) {
      out = "<!-- registry-table: " + *doc_table +
            " -->\n| parameter | type | unit | default | allowed | notes |\n" + "|---|---|---|---|---|---|\n";
      for (const config::ParamSpec* spec : config::CellParamsForRunner(*doc_table)) {
        out += config::RenderParamRowPrefix(*spec) + "  |\n";
      }
    } else {
      out = *markdown ? config::RenderConfigReference() : config::RenderParamHelp();
    }
    std::printf("%s", out.c_str());
    ctx.exit_code = kExitOk;
  });
}

}  // namespace dlbench::cli
