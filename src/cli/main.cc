// dlbench: a thin shell over the subcommands (src/cli/cmd_<name>.cc, listed in CMakeLists.txt).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/commands.h"
#include "common/version.h"

int main(int argc, char** argv) {
  using namespace dlbench::cli;
  CommandContext ctx;
  const char* env_db = std::getenv("DLBENCH_DB");
  ctx.db_path = env_db != nullptr && *env_db != '\0' ? env_db : "dlbench.db";

  CLI::App app{
      "dlbench: measure how fast a deep-learning model really runs here, and why.\n"
      "Declare a test matrix in YAML, run every cell in an isolated runner process, store\n"
      "the results with the environment that makes them comparable, and compare them.",
      "dlbench"};
  app.set_version_flag("--version", std::string("dlbench ") + dlbench::kVersion + " (" + dlbench::kGitCommit +
                                        ", " + dlbench::kBuildType + ")");
  // No capture_default_str: $DLBENCH_DB may be a URL with a password, and --help must not show it.
  app.add_option("--db", ctx.db_path,
                 "The result store: a SQLite file, or postgresql://user@host:port/dbname for PostgreSQL "
                 "(default: $DLBENCH_DB, else ./dlbench.db)");
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 ok; 1 a failure the command was asked to report (a cell that did not end ok, a\n"
      "regression with --fail-on-regression); 2 bad usage or input; 3 store error; 4 I/O or system\n"
      "error; 130 interrupted (finished cells are kept; continue with run --resume).\n"
      "Run 'dlbench SUBCOMMAND --help' for a subcommand's options.");

  // Global options (--db) may come before or after the subcommand: an option a subcommand does
  // not know falls through to this app. Set before the subcommands are added, which inherit it.
  app.fallthrough();

  // Every subcommand, in the order --help lists them (commands.h declares each).
  using RegisterFn = void (*)(CLI::App&, CommandContext&);
  constexpr RegisterFn kCommands[] = {
      RegisterRun,    RegisterPlan,    RegisterRuns,  RegisterPrune,    RegisterShow,   RegisterExport,
      RegisterEnv,    RegisterCompare, RegisterTrend, RegisterTag,      RegisterReport, RegisterParams,
      RegisterModels, RegisterMetrics, RegisterNoise, RegisterSelftest, RegisterServe,  RegisterDb};
  for (RegisterFn register_command : kCommands) register_command(app, ctx);
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    sub->preparse_callback([sub](std::size_t) { SetCommandWords("dlbench " + sub->get_name()); });
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success))
      return app.exit(e);  // --help, --version
    // Every error names the subcommand it is about, as the subcommands' own errors do.
    const std::string& who = CommandWordsForErrors();
    std::fprintf(stderr, "%s: %s\nRun '%s --help' for the options.\n", who.c_str(), e.what(), who.c_str());
    return kExitUsage;
  }
  return ctx.exit_code;
}
