// dlbench run MATRIX.yaml: every cell in its own runner process, each finished cell stored in one
// transaction as soon as it ends, progress and a results table on the terminal.
#include <fmt/core.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "cli/commands.h"
#include "cli/console.h"
#include "cli/run_filter.h"
#include "common/clock.h"
#include "common/files.h"
#include "common/subprocess.h"
#include "common/version.h"
#include "config/matrix.h"
#include "monitor/fingerprint.h"
#include "monitor/sampler.h"
#include "orchestrator/cell_runner.h"
#include "plan/plan.h"
#include "report/prometheus.h"

namespace dlbench::cli {

namespace {

std::atomic<bool> g_interrupted{false};

void OnSigint(int) { g_interrupted.store(true); }

// Ctrl-C must interrupt poll() (no SA_RESTART) and only set a flag: the orchestrator stops the
// cell in flight, stores what finished and marks the run interrupted.
void InstallSigint() {
  struct sigaction sa {};
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

struct RunArgs {
  std::string matrix_path;
  std::string out_dir = "dlbench-out";
  std::vector<std::string> only;
  std::string shard;
  std::string resume;
  bool no_monitor = false;
};

// The file `dlbench serve` reads to expose the progress of an active run (report::ProgressPath).
void WriteProgress(const std::string& db_path, std::int64_t run_id, std::size_t total, std::size_t done,
                   const std::string& current, std::int64_t started_wall_ns) {
  nlohmann::json p = {{"run_id", run_id},
                      {"cells_total", total},
                      {"cells_done", done},
                      {"current_cell", current},
                      {"started_wall_ns", started_wall_ns},
                      {"updated_wall_ns", WallNowNs()},
                      {"pid", static_cast<long>(getpid())}};
  (void)WriteFileAtomic(report::ProgressPath(db_path), p.dump(2) + "\n");
}

// Removes the progress file if this process wrote it last. Several runs may share a database
// (one per --shard); the file is then whichever wrote last, and another live run's must stay.
void RemoveOwnProgress(const std::string& db_path) {
  const std::string path = report::ProgressPath(db_path);
  auto text = ReadFile(path);
  if (!text.ok()) return;
  auto progress = report::ParseProgress(*text);
  if (!progress.ok() || progress->pid != static_cast<std::int64_t>(getpid())) return;
  std::remove(path.c_str());
}

// The shell words of `dlbench run` that resume this run. `selection` is what must be given again:
// nothing when the run stored its own, the options used when it has none stored.
std::string ResumeCommand(const std::string& matrix_path, const Selection& selection, std::int64_t run_id) {
  const std::string options = SelectionArgs(selection);
  return fmt::format("dlbench run {}{}{} --resume {}", ShellWord(matrix_path), options.empty() ? "" : " ",
                     options, run_id);
}

// --resume re-expands the matrix and applies the selection again (ResumeSelection picked it).
// A second guard, and the only one for runs stored before runs recorded their selection: the
// selection must keep the run's cells, i.e. its cell count and every cell it already finished.
Status CheckResumeSelection(const record::RunRecord& run, const std::set<std::string>& finished,
                            const SelectedPlan& selected) {
  std::set<std::string> ids;
  for (const auto& c : selected.cells) ids.insert(c.id);
  const bool same_count = static_cast<std::size_t>(run.total_cells) == selected.cells.size();
  const auto stray = std::find_if(finished.begin(), finished.end(),
                                  [&](const std::string& id) { return ids.count(id) == 0; });
  if (same_count && stray == finished.end()) return Status::Ok();
  const std::string kept = fmt::format("{} cells{}", selected.cells.size(), ShardSummary(selected));
  return MakeError(
      ErrorKind::kInvalidInput,
      fmt::format(
          "run {} has {} cells, but this selection keeps {}{}; resume with the --only and "
          "--shard options run {} was started with",
          run.id, run.total_cells, kept,
          stray == finished.end() ? "" : fmt::format(", not including its finished cell '{}'", *stray),
          run.id));
}

int RunMatrix(const RunArgs& args, CommandContext& ctx) {
  auto given = NormalizeSelection(Selection{args.only, args.shard});
  if (!given.ok()) return ReportError(given.error());

  // A resumed run decides the selection: it stored the one it was started with.
  std::unique_ptr<store::ResultStore> store;
  std::optional<record::RunRecord> resumed;
  Selection selection = *given;
  if (!args.resume.empty()) {
    store = OpenStoreOrReport(ctx);
    if (!store) return ctx.exit_code;
    auto id = store->ResolveRun(args.resume);
    if (!id.ok()) return ReportError(id.error());
    auto existing = store->GetRun(*id);
    if (!existing.ok()) return ReportError(existing.error());
    auto chosen = ResumeSelection(*id, existing->selection, *given);
    if (!chosen.ok()) return ReportError(chosen.error());
    if (given->empty() && !chosen->empty()) {
      std::fprintf(stderr, "dlbench: resuming run %lld with its selection: %s\n", static_cast<long long>(*id),
                   SelectionArgs(*chosen).c_str());
    }
    selection = *chosen;
    resumed = std::move(existing).value();
  }

  int exit_code = kExitOk;
  auto selected = SelectPlan(args.matrix_path, selection, &exit_code);
  if (!selected.ok()) return exit_code;
  const config::Matrix* matrix = &selected->matrix;
  const std::vector<plan::Cell>* cells = &selected->cells;
  if (cells->empty()) {
    std::fprintf(stderr, "dlbench: %s\n", EmptySelectionMessage(*selected, args.matrix_path).c_str());
    return kExitUsage;
  }
  auto runner = orchestrator::ResolveRunner(matrix->runner, ExecutableDir());
  if (!runner.ok()) return ReportError(runner.error());

  if (!store) store = OpenStoreOrReport(ctx);
  if (!store) return ctx.exit_code;

  std::int64_t run_id = 0;
  std::set<std::string> finished;
  record::RunRecord run;
  if (resumed) {
    const std::int64_t id = resumed->id;
    if (resumed->matrix_text != matrix->text) {
      return ReportError(
          MakeError(ErrorKind::kInvalidInput,
                    fmt::format("{} differs from the matrix run {} was started with; resume "
                                "needs the same file (dlbench export {} --format json shows it)",
                                args.matrix_path, id, id)));
    }
    auto done = store->FinishedCellIds(id);
    if (!done.ok()) return ReportError(done.error());
    if (auto st = CheckResumeSelection(*resumed, *done, *selected); !st.ok()) return ReportError(st.error());
    run_id = id;
    run = *resumed;
    finished = *done;
  } else {
    // The runner introduces itself once so the stored fingerprint has its framework versions.
    auto hello = orchestrator::ProbeRunner(*runner, std::max(30.0, std::min(matrix->timeout_s, 120.0)));
    if (!hello.ok()) return ReportError(hello.error());
    hello->erase("pid");         // differs every run and decides nothing
    MonotonicClock probe_clock;  // Monitor keeps a reference: it must outlive the monitor
    monitor::Monitor probe_monitor(monitor::DefaultSamplers(), probe_clock, 1000);
    run.environment = monitor::CollectFingerprint(*hello, probe_monitor.Describe());
    run.environment_hash = monitor::ComparabilityHash(run.environment);
    run.name = matrix->name.empty() ? std::filesystem::path(args.matrix_path).stem().string() : matrix->name;
    run.matrix_path = args.matrix_path;
    run.matrix_text = matrix->text;
    run.started_wall_ns = WallNowNs();
    run.tool_version = kVersion;
    run.git_commit = kGitCommit;
    run.total_cells = static_cast<int>(cells->size());
    run.selection = selection;
    auto id = store->BeginRun(run);
    if (!id.ok()) return ReportError(id.error());
    run_id = *id;
    for (const auto& w : monitor::FingerprintWarnings(run.environment)) {
      std::fprintf(stderr, "dlbench: warning: %s\n", w.c_str());
    }
  }

  const std::string run_dir = fmt::format("{}/run-{}", args.out_dir, run_id);
  if (auto st = MakeDirs(run_dir); !st.ok()) return ReportError(st.error());
  (void)WriteFileAtomic(run_dir + "/matrix.yaml", matrix->text);

  std::unique_ptr<monitor::Monitor> monitor;
  MonotonicClock clock;
  if (!args.no_monitor) {
    monitor = std::make_unique<monitor::Monitor>(monitor::DefaultSamplers(), clock,
                                                 matrix->measure.sample_interval_ms);
  }

  std::size_t todo = 0;
  for (const auto& c : *cells) todo += finished.count(c.id) ? 0 : 1;
  std::fprintf(stderr, "dlbench: run %lld (%s): %zu cells%s%s, runner %s, store %s, logs in %s\n",
               static_cast<long long>(run_id), run.name.c_str(), todo,
               finished.empty() ? "" : fmt::format(" ({} already finished)", cells->size() - todo).c_str(),
               ShardSummary(*selected).c_str(), runner->name.c_str(), store->Describe().c_str(),
               run_dir.c_str());

  InstallSigint();
  const bool tty = isatty(STDERR_FILENO) != 0;
  const std::int64_t t0 = MonotonicNowNs();
  const std::int64_t started_wall = WallNowNs();
  std::size_t done_now = 0;
  int not_ok = 0;
  bool interrupted = false;
  std::map<std::string, int> outcome_counts;
  std::size_t label_width = 0, max_index = 0;
  for (const auto& c : *cells) {
    label_width = std::max(label_width, c.label.size());
    max_index = std::max<std::size_t>(max_index, static_cast<std::size_t>(c.index));
  }
  const auto widths = ResultMinWidths(label_width, max_index);
  Table header(ResultColumns());
  header.SetMinWidths(widths);
  std::printf("%s", header.Render().c_str());
  std::fflush(stdout);

  for (const auto& cell : *cells) {
    if (finished.count(cell.id)) continue;
    if (g_interrupted.load()) {
      interrupted = true;
      break;
    }
    const double elapsed = NsToSeconds(MonotonicNowNs() - t0);
    const std::string eta = done_now == 0 ? "-" : FormatSeconds(elapsed / done_now * (todo - done_now));
    const std::string status = fmt::format("[{}/{}] {}  elapsed {}  ETA {}", done_now + 1, todo, cell.label,
                                           FormatSeconds(elapsed), eta);
    std::fprintf(stderr, "%s%s", status.c_str(), tty ? "" : "\n");
    WriteProgress(ctx.db_path, run_id, todo, done_now, cell.label, started_wall);

    orchestrator::CellRunOptions options;
    options.runner = *runner;
    options.log_dir = run_dir;
    options.timeout_s = matrix->timeout_s;
    options.measure = matrix->measure;
    options.monitor = monitor.get();
    options.interrupted = &g_interrupted;
    if (tty) {
      options.on_progress = [&](const std::string& line) {
        std::fprintf(stderr, "\r\033[K%s  (%s)", status.c_str(), line.c_str());
      };
    }
    record::CellRecord rec = orchestrator::RunCell(cell, options);
    if (tty) std::fprintf(stderr, "\r\033[K");
    if (rec.outcome == record::Outcome::kInterrupted) {
      interrupted = true;
      break;
    }
    rec.run_id = run_id;
    if (auto st = store->PutCell(rec); !st.ok()) {
      (void)store->SetRunStatus(run_id, record::RunStatus::kFailed, WallNowNs());
      RemoveOwnProgress(ctx.db_path);
      return ReportError(st.error());
    }
    ++done_now;
    ++outcome_counts[std::string(record::Name(rec.outcome))];
    if (rec.outcome != record::Outcome::kOk) ++not_ok;
    Table row(ResultColumns());
    row.SetMinWidths(widths);
    row.AddRow(ResultRow(rec));
    std::printf("%s", row.Render(/*with_header=*/false).c_str());
    if (rec.outcome != record::Outcome::kOk) {
      std::printf("    %s: %s\n", std::string(record::Name(rec.outcome)).c_str(),
                  rec.message.substr(0, rec.message.find('\n')).c_str());
    }
    std::fflush(stdout);
  }

  RemoveOwnProgress(ctx.db_path);
  auto remaining = store->FinishedCellIds(run_id);
  const bool complete = remaining.ok() && !interrupted &&
                        std::all_of(cells->begin(), cells->end(),
                                    [&](const plan::Cell& c) { return remaining->count(c.id) > 0; });
  (void)store->SetRunStatus(
      run_id, complete ? record::RunStatus::kCompleted : record::RunStatus::kInterrupted, WallNowNs());

  std::string counts;
  for (const auto& [outcome, n] : outcome_counts)
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, outcome);
  std::fprintf(stderr, "dlbench: run %lld %s in %s: %s. Details: dlbench show %lld\n",
               static_cast<long long>(run_id), complete ? "completed" : "interrupted",
               FormatSeconds(NsToSeconds(MonotonicNowNs() - t0)).c_str(),
               counts.empty() ? "no cells run" : counts.c_str(), static_cast<long long>(run_id));
  if (interrupted) {
    // A run that stored its selection reapplies it; one stored without (older) needs it again.
    const Selection again = run.selection.empty() ? selection : Selection{};
    std::fprintf(stderr, "dlbench: finished cells are stored; continue with: %s\n",
                 ResumeCommand(args.matrix_path, again, run_id).c_str());
    return kExitInterrupted;
  }
  return not_ok > 0 ? kExitFailureFound : kExitOk;
}

}  // namespace

void RegisterRun(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Run every cell of a matrix and store the results");
  cmd->add_option("matrix", args->matrix_path, "The matrix file (YAML); see docs/config-reference.md")
      ->required();
  cmd->add_option("--out", args->out_dir, "Folder for per-run output (cell logs, a copy of the matrix)")
      ->capture_default_str();
  cmd->add_option("--only", args->only,
                  "Run only matching cells: comma-separated terms that must all match, name=value, "
                  "name!=value or a word from the cell label; repeat for OR");
  cmd->add_option("--shard", args->shard,
                  "Run only part K of N (K/N, 1 <= K <= N) of the cells --only keeps: those at positions "
                  "K-1, K-1+N, ... of the plan. N processes with 1/N ... N/N run the matrix once; see below")
      ->type_name("K/N");
  cmd->add_option("--resume", args->resume,
                  "Continue an interrupted run (id or tag): runs only its cells that have no final result, "
                  "selected by the --only and --shard it was started with (give none, or the same ones)");
  cmd->add_flag("--no-monitor", args->no_monitor, "Do not sample the GPU and host while cells run");
  cmd->footer(
      "Each cell runs in its own runner process. A cell that crashes, hangs, runs out of memory or\n"
      "breaks the protocol ends with that outcome and the matrix goes on. Ctrl-C stops the current\n"
      "cell; finished cells stay stored and 'run --resume ID' runs the rest.\n"
      "Several GPUs: one process per GPU, each its own run in one database, e.g.\n"
      "  CUDA_VISIBLE_DEVICES=0 dlbench --db r.db run m.yaml --shard 1/2 &\n"
      "  CUDA_VISIBLE_DEVICES=1 dlbench --db r.db run m.yaml --shard 2/2\n"
      "Every matrix key: dlbench params (or docs/config-reference.md).\n"
      "Exit: 0 every cell ok; 1 some cell not ok; 2 bad matrix or options; 3 store; 4 I/O; 130 interrupted.");
  cmd->callback([args, &ctx] { ctx.exit_code = RunMatrix(*args, ctx); });
}

}  // namespace dlbench::cli
