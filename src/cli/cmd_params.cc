// dlbench params: every key a matrix may hold, from the parameter registry (the same source as
// validation and docs/config-reference.md); `params KEY...` prints keys in full.
#include <string>
#include <vector>

#include "cli/commands.h"
#include "common/text.h"
#include "config/model_rules.h"
#include "config/registry.h"

namespace dlbench::cli {
namespace {

// Where `model` takes any text: what each runner accepts there.
std::string ModelNames() {
  std::vector<std::string> names;
  for (const config::TorchModelInfo& m : config::TorchModelTable()) names.push_back(m.name);
  return "  models:   the torch runner: " + Join(names, ", ") +
         ",\n"
         "            torchscript or aoti (an AOTInductor package) with model_path and input_shapes\n"
         "            (dlbench models lists sizes and FLOPs);\n"
         "            the null runner and command runners: any name (recorded, and passed to a command "
         "runner)\n";
}

int PrintEntries(const std::vector<std::string>& keys) {
  std::vector<std::string> all;
  for (const config::ParamSpec& spec : config::Registry()) all.push_back(spec.name);
  std::string out;
  for (const std::string& key : keys) {
    bool found = false;
    for (const config::ParamSpec& spec : config::Registry()) {
      if (spec.name != key) continue;
      if (!out.empty()) out += "\n";
      out += config::RenderParamEntry(spec);
      if (spec.name == "model" && spec.section == config::ParamSection::kCell) out += ModelNames();
      found = true;
    }
    if (!found) {
      const auto near = config::NearestKey(key, all);
      return ReportError(MakeError(ErrorKind::kInvalidInput,
                                   "no key '" + key + "'" + (near ? "; did you mean '" + *near + "'?" : "") +
                                       " (dlbench params lists every key)"));
    }
  }
  std::printf("%s", out.c_str());
  return kExitOk;
}

}  // namespace

void RegisterParams(CLI::App& app, CommandContext& ctx) {
  auto markdown = std::make_shared<bool>(false);
  auto doc_table = std::make_shared<std::string>();
  auto keys = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand(
      "params",
      "List every matrix key: type, unit, default, allowed values, help.\n"
      "dlbench params KEY... prints those keys in full (whole help; the models where model takes any name)");
  cmd->add_option("keys", *keys, "Keys to print in full (dlbench params model target_qps)");
  cmd->add_flag("--markdown", *markdown, "Print the full reference (docs/config-reference.md) instead");
  cmd->add_option("--doc-table", *doc_table,
                  "Print the registry's columns of a runner's parameter table (docs/torch-runner.md), "
                  "with an empty notes column")
      ->check(CLI::IsMember({"null", "torch"}));
  cmd->callback([markdown, doc_table, keys, &ctx] {
    if (!keys->empty()) {
      ctx.exit_code = PrintEntries(*keys);
      return;
    }
    std::string out;
    if (!doc_table->empty()) {
      out = "<!-- registry-table: " + *doc_table +
            " -->\n| parameter | type | unit | default | allowed | notes |\n" + "|---|---|---|---|---|---|\n";
      for (const config::ParamSpec* spec : config::CellParamsForRunner(*doc_table)) {
        out += config::RenderParamRowPrefix(*spec) + "  |\n";
      }
    } else {
      out = *markdown ? config::RenderConfigReference()
                      : config::RenderParamHelp() +
                            "\nMeanings are cut to one line: dlbench params KEY prints a key in full.\n";
    }
    std::printf("%s", out.c_str());
    ctx.exit_code = kExitOk;
  });
}

}  // namespace dlbench::cli
