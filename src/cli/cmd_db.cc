// dlbench db copy SRC DST: runs from one store into another (SQLite <-> PostgreSQL), idempotent.
#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "store/open_store.h"
#include "store/store_copy.h"

namespace dlbench::cli {
namespace {

struct CopyArgs {
  std::string from;
  std::string to;
  std::vector<std::string> runs;
};

int Copy(const CopyArgs& args) {
  store::OpenOptions source_options;
  source_options.mode = store::OpenMode::kRead;
  auto from = store::OpenStore(args.from, source_options);
  if (!from.ok()) {
    return ReportError(MakeError(ErrorKind::kStore, "source: " + from.error().message));
  }
  store::OpenOptions destination_options;
  destination_options.mode = store::OpenMode::kCreate;
  destination_options.spill = false;
  auto to = store::OpenStore(args.to, destination_options);
  if (!to.ok()) {
    return ReportError(MakeError(ErrorKind::kStore, "destination: " + to.error().message));
  }
  if ((*from)->Describe() == (*to)->Describe()) {
    return ReportError(MakeError(ErrorKind::kInvalidInput, "the source and the destination are one store (" +
                                                               (*from)->Describe() + ")"));
  }
  auto report = store::CopyRuns(**from, **to, args.runs,
                                [](const std::string& line) { std::printf("%s\n", line.c_str()); });
  if (!report.ok()) return ReportError(report.error());
  std::printf("copied %d cell%s of %d run%s from %s to %s (%d run%s new, %d cell%s already there)\n",
              report->cells_copied, report->cells_copied == 1 ? "" : "s",
              report->runs_added + report->runs_existing,
              report->runs_added + report->runs_existing == 1 ? "" : "s", (*from)->Describe().c_str(),
              (*to)->Describe().c_str(), report->runs_added, report->runs_added == 1 ? "" : "s",
              report->cells_present, report->cells_present == 1 ? "" : "s");
  return kExitOk;
}

}  // namespace

void RegisterDb(CLI::App& app, CommandContext& ctx) {
  CLI::App* db = app.add_subcommand("db", "Work on whole stores: copy runs between SQLite and PostgreSQL");
  db->require_subcommand(1);

  auto args = std::make_shared<CopyArgs>();
  CLI::App* copy = db->add_subcommand(
      "copy", "Copy runs (all, or those given with --run) from the store SRC into the store DST");
  copy->add_option("src", args->from, "The source store: a SQLite file or a postgresql:// URL; it must exist")
      ->required();
  copy->add_option("dst", args->to,
                   "The destination store: a SQLite file or a postgresql:// URL; created when missing")
      ->required();
  copy->add_option("--run", args->runs, "Copy only this run of SRC (an id, a tag or 'latest'); repeatable");
  copy->footer(
      "Each run is copied with its environment, cells, metrics, steps, series, status and tags; runs\n"
      "get the destination's own ids. Copying is idempotent: runs are matched by their uuid and cells\n"
      "by their id, so copying again adds only what DST lacks. A tag that already names another run in\n"
      "DST is left as it is (and said). Example:\n"
      "  dlbench db copy results.db postgresql://bench@db.example:5432/dlbench\n"
      "Exit: 0 copied; 2 an unknown --run; 3 a store could not be opened, read or written.");
  copy->callback([args, &ctx] { ctx.exit_code = Copy(*args); });
}

}  // namespace dlbench::cli
