// dlbench export RUN: the run as JSON or CSV, its sampled series as CSV, its Prometheus
// exposition for node_exporter's textfile collector, its timeline as a Chrome trace, or its
// scalars as TensorBoard event files.
#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "common/files.h"
#include "common/text.h"
#include "report/escape.h"
#include "report/export.h"
#include "report/prometheus.h"
#include "report/tensorboard.h"
#include "report/trace.h"
#include "store/sweep.h"

namespace dlbench::cli {
namespace {

struct ExportArgs {
  std::string run = "latest";
  std::string format = "json";
  bool series = false;
  std::optional<int> cell;
  std::string steps;
  std::string output = "-";
  std::string db;
};

// "-" is stdout; a path is written by WriteOutputFile's rules (a regular file atomically, so a reader
// never sees half an export; a FIFO, device or link written through; never replaced).
int WriteOutput(const std::string& path, const std::string& text) {
  if (path == "-") {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
      return ReportError(MakeError(ErrorKind::kIo, "cannot write to stdout"));
    }
    return kExitOk;
  }
  Status written = WriteOutputFile(path, text);
  if (!written.ok()) return ReportError(written.error());
  std::fprintf(stderr, "dlbench: wrote %s\n", path.c_str());
  return kExitOk;
}

int Export(const ExportArgs& args, CommandContext& ctx) {
  if (!args.db.empty()) ctx.db_path = args.db;
  std::optional<report::StepRange> steps;
  if (!args.steps.empty()) {
    if (args.format != "trace") {
      return ReportError(MakeError(ErrorKind::kInvalidInput, "--steps applies to --format trace only"));
    }
    auto parsed = report::ParseStepRange(args.steps);
    if (!parsed.ok()) return ReportError(parsed.error());
    steps = *parsed;
  }
  if (args.format == "tensorboard" && args.output == "-") {
    return ReportError(MakeError(ErrorKind::kInvalidInput,
                                 "--format tensorboard writes a folder of event files: name it with -o DIR"));
  }
  if (args.series && args.format != "json" && args.format != "csv") {
    return ReportError(MakeError(ErrorKind::kInvalidInput,
                                 "--series writes CSV; it does not combine with --format " + args.format));
  }

  auto store = OpenStoreForReadingOrReport(ctx);
  if (!store) return ctx.exit_code;
  const bool is_sweep = store::SweepOfRef(args.run).has_value();
  if (args.format == "prometheus") {
    if (is_sweep) {
      return ReportError(MakeError(ErrorKind::kInvalidInput,
                                   "--format prometheus exports one run; a sweep's shards are each a run "
                                   "(dlbench runs lists them), or export every run with `dlbench serve`"));
    }
    auto id = store->ResolveRun(args.run);
    if (!id.ok()) return ReportError(id.error());
    auto input = report::CollectRunCells(*store, *id);
    if (!input.ok()) return ReportError(input.error());
    return WriteOutput(args.output, report::RenderExposition(*input));
  }

  store::CellQuery query;
  query.index = args.cell;
  const bool timeline = args.format == "trace" || args.format == "tensorboard";
  query.with_series = args.series || timeline;
  query.with_steps = args.series || timeline;
  auto loaded = store::LoadRun(*store, args.run, query);
  if (!loaded.ok()) return ReportError(loaded.error());
  for (const std::string& n : loaded->notes)
    std::fprintf(stderr, "dlbench export: note: %s: %s\n", TerminalSafe(args.run).c_str(),
                 TerminalSafe(n).c_str());
  const record::RunRecord* run = &loaded->run;
  const std::vector<record::CellRecord>* cells = &loaded->cells;
  if (args.cell && cells->empty()) {
    return ReportError(
        MakeError(ErrorKind::kNotFound, (is_sweep ? args.run : "run " + std::to_string(run->id)) +
                                            " has no cell with index " + std::to_string(*args.cell)));
  }

  if (args.series) return WriteOutput(args.output, report::SeriesToCsv(*cells));
  if (args.format == "tensorboard") {
    auto files = report::WriteTensorBoard(*run, *cells, args.output);
    if (!files.ok()) return ReportError(files.error());
    std::fprintf(stderr, "dlbench: wrote %zu TensorBoard event file%s under %s (tensorboard --logdir %s)\n",
                 files->size(), files->size() == 1 ? "" : "s", args.output.c_str(), args.output.c_str());
    return kExitOk;
  }
  if (args.format == "json") {
    nlohmann::json out = report::RunToJson(*run, *cells);
    if (loaded->sweep) {
      const store::Sweep& sweep = *loaded->sweep;
      nlohmann::json shards = nlohmann::json::array();
      for (const auto& [k, shard] : sweep.shards) {
        shards.push_back(
            {{"shard", shard.selection.shard}, {"run_id", shard.id}, {"status", record::Name(shard.status)}});
      }
      nlohmann::json missing = nlohmann::json::array();
      for (int k : sweep.Missing()) missing.push_back(fmt::format("{}/{}", k, sweep.shard_count));
      out["run"]["sweep"] = {
          {"name", sweep.name}, {"cells", sweep.planned_cells}, {"shards", shards}, {"missing", missing}};
    }
    return WriteOutput(args.output, out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  if (args.format == "csv") return WriteOutput(args.output, report::CellsToCsv(*cells));
  report::TraceOptions options;
  options.steps = steps;
  return WriteOutput(args.output, report::BuildTrace(*run, *cells, options)
                                          .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                                      "\n");
}

}  // namespace

void RegisterExport(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Export a run: JSON, CSV, sampled series, Prometheus text, a Chrome trace, or TensorBoard events");
  cmd->add_option("run", args->run, "Run id, tag, 'latest', or sweep:NAME (a sweep's shards as one run)")
      ->capture_default_str();
  cmd->add_option("--format", args->format,
                  "json: the run, its environment and every cell; csv: one row per cell; prometheus: the "
                  "textfile-collector exposition; trace: a Chrome/Perfetto timeline; tensorboard: event "
                  "files of each cell's scalars, one folder per cell under -o DIR")
      ->check(CLI::IsMember({"json", "csv", "prometheus", "trace", "tensorboard"}))
      ->capture_default_str();
  cmd->add_flag("--series", args->series,
                "Write the sampled device/host series as CSV (one row per sample, units in the header)");
  cmd->add_option("--cell", args->cell, "Only the cell with this index (series and trace)");
  cmd->add_option("--steps", args->steps, "With --format trace: steps A:B (A to B-1), A: or :B of each rank");
  cmd->add_option("-o,--output", args->output,
                  "Output file, '-' for stdout; with --format tensorboard the folder (created; an existing "
                  "path that is not a folder is refused)")
      ->capture_default_str();
  cmd->add_option("--db", args->db,
                  "The store: a SQLite file or a postgresql:// URL (overrides the global --db)");
  cmd->callback([args, &ctx] { ctx.exit_code = Export(*args, ctx); });
}

}  // namespace dlbench::cli
