// dlbench run MATRIX.yaml: arguments, printing and the exit code of an orchestrator::RunMatrix.
// The results table and the progress line are a run observer (RunConsole); the progress file that
// `serve` reads is another (orchestrator::ProgressFileObserver).
#include <fmt/core.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/console.h"
#include "common/clock.h"
#include "common/human_text.h"
#include "common/subprocess.h"
#include "common/text.h"
#include "launch/launcher.h"
#include "monitor/sampler.h"
#include "orchestrator/progress_file.h"
#include "orchestrator/rank_link.h"
#include "orchestrator/run.h"
#include "orchestrator/run_folder.h"
#include "plan/selection.h"
#include "store/open_store.h"

namespace dlbench::cli {

namespace {

std::atomic<int> g_interrupts{0};

void OnSigint(int) { g_interrupts.fetch_add(1); }

// Ctrl-C (or SIGTERM) must interrupt poll() (no SA_RESTART) and only count: the run stops the
// cell in flight, stores what finished and marks the run interrupted; a second press kills the
// cell's runner at once.
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
  std::vector<std::string> set;
  std::string shard;
  std::string sweep;
  std::string resume;
  bool resume_elsewhere = false;
  bool no_monitor = false;
  bool runner_reuse = false;
  bool runner_core_dumps = false;
  bool fail_on_invalid = false;
};

// The shell words of `dlbench run` that resume this run. `selection` is what must be given again:
// nothing when the run stored its own, the options used when it has none stored.
// `db_words` is " --db PATH" when the store is not the default one, so that the hint works
// pasted as it is.
std::string ResumeCommand(const std::string& db_words, const std::string& matrix_path,
                          const plan::Selection& selection, std::int64_t run_id) {
  const std::string options = plan::SelectionArgs(selection);
  return fmt::format("dlbench{} run {}{}{} --resume {}", db_words, plan::ShellWord(matrix_path),
                     options.empty() ? "" : " ", options, run_id);
}

// " --db PATH" for a store other than ./dlbench.db; empty for the default.
std::string DbWords(const std::string& db_path) {
  // A URL's password is never printed: the hint shows it as *** (store::DisplayLocation).
  return db_path == "dlbench.db" ? "" : " --db " + plan::ShellWord(store::DisplayLocation(db_path));
}

// The terminal side of a run: a line when it starts, a results row per finished cell on stdout,
// a progress line on stderr (rewritten in place on a terminal), a summary when it ends.
class RunConsole final : public orchestrator::RunObserver {
 public:
  RunConsole(std::string matrix_path, std::string db_words, bool tty)
      : matrix_path_(std::move(matrix_path)), db_words_(std::move(db_words)), tty_(tty) {}

  int not_valid() const { return not_valid_; }

  void OnRunStart(const orchestrator::RunStart& s) override {
    if (s.reapplied_selection) {
      std::fprintf(stderr, "dlbench: resuming run %lld with its selection: %s\n",
                   static_cast<long long>(s.run_id), plan::SelectionArgs(*s.reapplied_selection).c_str());
    }
    std::fprintf(
        stderr, "dlbench: run %lld (%s): %s%s%s, runner %s, store %s, logs in %s\n",
        static_cast<long long>(s.run_id), s.run.name.c_str(),
        CountNoun(static_cast<std::int64_t>(s.to_run), "cell").c_str(),
        s.already_finished == 0 ? "" : fmt::format(" ({} already finished)", s.already_finished).c_str(),
        plan::ShardSummary(s.plan).c_str(), s.runner_name.c_str(), s.store_description.c_str(),
        s.run_dir.c_str());
    for (const auto& w : s.warnings) std::fprintf(stderr, "dlbench: warning: %s\n", w.c_str());
    std::size_t label_width = 0, max_index = 0;
    for (const auto& c : s.plan.cells) {
      label_width = std::max(label_width, c.label.size());
      max_index = std::max<std::size_t>(max_index, static_cast<std::size_t>(c.index));
    }
    widths_ = ResultMinWidths(label_width, max_index);
    Table header(ResultColumns());
    header.SetMinWidths(widths_);
    std::printf("%s", header.Render().c_str());
    std::fflush(stdout);
  }

  void OnCellStart(const orchestrator::CellStart& s) override {
    position_ = s.position;
    to_run_ = s.to_run;
    status_ = fmt::format("[{}/{}] {}  elapsed {}  ETA {}", s.position, s.to_run, s.cell.label,
                          FormatSeconds(s.elapsed_s), s.eta_s ? FormatSeconds(*s.eta_s) : "-");
    std::fprintf(stderr, "%s%s", status_.c_str(), tty_ ? "" : "\n");
  }

  // measure.retry_disturbed: one line per attempt after the first, which stays on the terminal; the
  // progress line then goes on below it.
  void OnCellRetry(const plan::Cell& cell, const orchestrator::RetryStart& r) override {
    const std::string line = RetryLine(position_, to_run_, cell.label, r.attempt, r.allowed, r.before.verdict,
                                       r.before.verdict_reasons);
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s\n%s", line.c_str(), status_.c_str());
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }

  void OnCellProgress(const plan::Cell&, const orchestrator::CellProgress& p) override {
    if (!tty_) return;
    std::fprintf(stderr, "\r\033[K%s  (%s, %.0f s)", status_.c_str(),
                 CountNoun(static_cast<std::int64_t>(p.steps), "step").c_str(), p.elapsed_s);
  }

  void OnCellEnd(const orchestrator::CellEnd& e) override {
    if (tty_) std::fprintf(stderr, "\r\033[K");
    const record::CellRecord& rec = e.cell;
    if (rec.outcome == record::Outcome::kOk) {
      ++verdicts_[rec.verdict];
      if (rec.verdict != record::Verdict::kValid) ++not_valid_;
    }
    Table row(ResultColumns());
    row.SetMinWidths(widths_);
    row.AddRow(ResultRow(rec));
    std::printf("%s", row.Render(/*with_header=*/false).c_str());
    if (rec.outcome != record::Outcome::kOk) {
      // A message that already starts with its outcome ("unsupported: ...") is not given it twice.
      const std::string outcome(record::Name(rec.outcome));
      const std::string first = TerminalSafe(rec.message.substr(0, rec.message.find('\n')));
      if (first.rfind(outcome + ":", 0) == 0) {
        std::printf("    %s\n", first.c_str());
      } else {
        std::printf("    %s: %s\n", outcome.c_str(), first.c_str());
      }
    }
    // A log that could not be written (a full disk) is said at once, whatever the outcome.
    if (rec.extras.contains("logs") && rec.extras["logs"].is_object()) {
      for (const auto& [stream, facts] : rec.extras["logs"].items()) {
        if (facts.contains("error") && facts["error"].is_string()) {
          std::printf("    warning: the runner's %s could not be logged to %s: %s\n", stream.c_str(),
                      facts.value("path", std::string("?")).c_str(),
                      facts["error"].get<std::string>().c_str());
        }
      }
    }
    std::fflush(stdout);
  }

  void OnRunEnd(const orchestrator::RunEnd& e) override {
    if (tty_) std::fprintf(stderr, "\r\033[K");
    std::string counts;
    for (const auto& [outcome, n] : e.outcomes) {
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, record::Name(outcome));
      // The ok cells by verdict: "16 ok (12 valid, 3 noisy, 1 too_short)".
      if (outcome != record::Outcome::kOk || verdicts_.empty()) continue;
      std::string by_verdict;
      for (const auto& [verdict, count] : verdicts_) {
        by_verdict += fmt::format("{}{} {}", by_verdict.empty() ? "" : ", ", count, record::Name(verdict));
      }
      counts += " (" + by_verdict + ")";
    }
    const char* how = e.status == record::RunStatus::kCompleted ? "completed"
                      : e.status == record::RunStatus::kFailed  ? "failed"
                                                                : "interrupted";
    std::fprintf(stderr, "dlbench: run %lld %s in %s: %s. Details: dlbench%s show %lld\n",
                 static_cast<long long>(e.run_id), how, FormatSeconds(e.elapsed_s).c_str(),
                 counts.empty() ? "no cells run" : counts.c_str(), db_words_.c_str(),
                 static_cast<long long>(e.run_id));
    if (e.status != record::RunStatus::kCompleted) {
      std::fprintf(stderr, "dlbench: finished cells are stored; continue with: %s\n",
                   ResumeCommand(db_words_, matrix_path_, e.resume_selection, e.run_id).c_str());
    }
  }

 private:
  std::string matrix_path_;
  std::string db_words_;
  bool tty_;
  std::vector<std::size_t> widths_;
  std::string status_;
  std::size_t position_ = 0;  // of the cell running now, as its OnCellStart said
  std::size_t to_run_ = 0;
  std::map<record::Verdict, int> verdicts_;  // of the ok cells this invocation ran
  int not_valid_ = 0;                        // of those, cells whose verdict is not valid
};

// A group run's task: how long the tasks wait for each other to connect.
constexpr double kGroupJoinTimeoutS = 60;

// Under srun or torchrun with several tasks and no --shard, the tasks run the matrix once as a
// group (docs/distributed.md#several-hosts): nullopt when this is not such a run.
std::optional<launch::LaunchContext> GroupLauncher(const RunArgs& args) {
  if (!args.shard.empty()) return std::nullopt;
  auto context = launch::ReadLaunchContext(launch::ProcessEnvironment());
  if (!context.ok() || !context->world_size || context->world_size->value < 2 || !context->rank)
    return std::nullopt;
  if (context->launcher != launch::Launcher::kTorchrun && context->launcher != launch::Launcher::kSlurm)
    return std::nullopt;
  return std::move(context).value();
}

// The group's settings for this task, recorded in `launcher` (the fingerprint's) as "group".
Result<orchestrator::GroupSettings> GroupSettingsOf(const launch::LaunchContext& context,
                                                    const plan::SelectedPlan& selected,
                                                    const plan::Selection& selection,
                                                    const std::string& resume, nlohmann::json& launcher) {
  if (!context.master_addr) {
    return MakeError(
        ErrorKind::kInvalidInput,
        "a group run needs the rendezvous host (MASTER_ADDR, or SLURM_JOB_NODELIST's first host)");
  }
  const launch::Environment env = launch::ProcessEnvironment();
  auto port = launch::GroupPort(context, env);
  if (!port.ok()) return port.error();
  double silence_s = orchestrator::kDefaultGroupSilenceS;
  if (const auto it = env.find("DLBENCH_GROUP_SILENCE_S"); it != env.end()) {
    auto parsed = orchestrator::ParseGroupSilence(it->second);
    if (!parsed.ok()) return parsed.error();
    silence_s = *parsed;
  }
  orchestrator::GroupSettings s;
  s.addr = *context.master_addr;
  s.port = static_cast<int>(port->value);
  s.rank = static_cast<int>(context.rank->value);
  s.world_size = static_cast<int>(context.world_size->value);
  s.local_rank = context.local_rank ? context.local_rank->value : 0;
  s.plan_hash = orchestrator::PlanHash(selected.matrix.text, plan::SelectionArgs(selection), selected.cells);
  s.resume = resume;
  s.join_timeout_s = kGroupJoinTimeoutS;
  s.silence_s = silence_s;
  launcher["group"] = {{"tasks", s.world_size},
                       {"addr", s.addr},
                       {"port", {{"value", s.port}, {"from", port->from}}},
                       {"plan_hash", s.plan_hash},
                       {"silence_s", s.silence_s}};
  return s;
}

// Task r > 0 of a group run: joins task 0 and runs its rank of each ddp cell task 0 names.
int ServeGroup(const RunArgs& args, const orchestrator::GroupSettings& settings,
               const plan::SelectedPlan& selected, const std::string& store_key) {
  orchestrator::PrepareDriverProcess();
  auto runner = orchestrator::ResolveRunner(selected.matrix.runner, ExecutableDir());
  if (!runner.ok()) return ReportError(runner.error());
  runner->core_dumps = args.runner_core_dumps;
  std::fprintf(stderr, "dlbench: task %d of %d: joining rank 0 at %s:%d\n", settings.rank,
               settings.world_size, settings.addr.c_str(), settings.port);
  auto link = orchestrator::JoinGroup(settings);
  if (!link.ok()) return ReportError(link.error());
  orchestrator::TaskRequest task;
  task.cells = &selected.cells;
  task.options.runner = *runner;
  task.options.timeout_s = selected.matrix.timeout_s;
  task.options.measure = selected.matrix.measure;
  task.options.interrupts = &g_interrupts;
  // This task's host is sampled while its rank runs, as rank 0 samples its own, and summarised for
  // rank 0 (docs/distributed.md, adr/0012-monitoring-every-host.md).
  MonotonicClock clock;
  std::unique_ptr<monitor::Monitor> monitor;
  if (!args.no_monitor) {
    monitor = std::make_unique<monitor::Monitor>(monitor::DefaultSamplers(), clock,
                                                 selected.matrix.measure.sample_interval_ms);
    task.options.monitor = monitor.get();
  }
  task.rank = settings.rank;
  task.local_rank = settings.local_rank;
  task.silence_s = settings.silence_s;
  task.select_plan = [path = args.matrix_path](const plan::Selection& selection) {
    return plan::SelectPlan(path, selection);
  };
  task.run_dir = [out = args.out_dir, store_key](std::int64_t run_id) {
    return orchestrator::RunFolder(out, store_key, run_id);
  };
  InstallSigint();
  if (auto st = orchestrator::ServeRankGroup(**link, task); !st.ok()) return ReportError(st.error());
  std::fprintf(stderr, "dlbench: task %d of %d: rank 0 ended the run; rank 0 stored it\n", settings.rank,
               settings.world_size);
  return kExitOk;
}

int RunMatrix(const RunArgs& args, CommandContext& ctx) {
  orchestrator::RunRequest request;
  request.matrix_path = args.matrix_path;
  request.out_dir = args.out_dir;
  // The database file's canonical path names its log folder; a URL is its own name, without its
  // password (store::DisplayLocation).
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(ctx.db_path, ec);
  request.store_key = ctx.db_path.find("://") != std::string::npos || ec ? store::DisplayLocation(ctx.db_path)
                                                                         : canonical.string();
  auto shard = ResolveShard(args.shard, &request.launcher);
  if (!shard.ok()) return ReportError(shard.error());
  auto sweep = ResolveSweep(args.sweep, args.shard, &request.launcher);
  if (!sweep.ok()) return ReportError(sweep.error());
  request.sweep = *sweep;
  request.sweep_given = !args.sweep.empty();
  request.selection = plan::Selection{args.only, *shard, args.set};
  if (args.resume_elsewhere && args.resume.empty()) {
    return ReportError(MakeError(ErrorKind::kInvalidInput, "--resume-elsewhere goes with --resume ID"));
  }
  // Under a launcher (--shard auto) there may be more tasks than cells: a task whose shard holds
  // none has nothing to do, which is no failure (srun would report the job failed). Anything
  // else wrong with the selection is left to RunMatrix's error.
  if (args.shard == "auto" && args.resume.empty()) {
    auto selected = plan::SelectPlan(args.matrix_path, request.selection);
    if (selected.ok() && selected->cells.empty() && selected->matched > 0) {
      std::fprintf(stderr,
                   "dlbench: shard %s (from the launcher) has no cells: the plan has %s, fewer than the "
                   "launcher's %d tasks; nothing to run here, no run stored\n",
                   shard->c_str(), CountNoun(static_cast<std::int64_t>(selected->matched), "cell").c_str(),
                   selected->shard ? selected->shard->count : 0);
      return kExitOk;
    }
  }
  // A group run: every task walks the same plan; task 0 runs it and stores it, the others serve it.
  std::unique_ptr<orchestrator::RankGroupLinks> group;
  if (const auto launcher = GroupLauncher(args)) {
    // With --resume every task is given the same options; rank 0 reads the run's stored selection
    // and finished cells and sends them once the group has formed (RankGroupLinks::AgreePlan).
    auto selected = plan::SelectPlan(args.matrix_path, request.selection);
    if (!selected.ok()) return ReportSelectionError(selected.error(), args.matrix_path);
    auto settings = GroupSettingsOf(*launcher, *selected, request.selection, args.resume, request.launcher);
    if (!settings.ok()) return ReportError(settings.error());
    if (settings->rank > 0) return ServeGroup(args, *settings, *selected, request.store_key);
    std::fprintf(stderr, "dlbench: rank 0 of %d tasks: waiting for the others on %s:%d\n",
                 settings->world_size, settings->addr.c_str(), settings->port);
    auto formed = orchestrator::RankGroupLinks::Form(*settings);
    if (!formed.ok()) return ReportError(formed.error());
    group = std::move(formed).value();
    request.group = group.get();
  }
  request.resume = args.resume;
  request.resume_elsewhere = args.resume_elsewhere;
  request.monitor = !args.no_monitor;
  request.runner_reuse = args.runner_reuse;
  request.runner_core_dumps = args.runner_core_dumps;
  request.bin_dir = ExecutableDir();
  request.interrupts = &g_interrupts;
  request.open_store = [&ctx]() -> Result<std::unique_ptr<store::ResultStore>> {
    // Created when missing; a PostgreSQL store is wrapped so that cells a lost server could not
    // take are spilled and replayed (store/open_store.h).
    store::OpenOptions options;
    options.mode = store::OpenMode::kCreate;
    auto opened = store::OpenStore(ctx.db_path, options);
    if (!opened.ok()) return MakeError(ErrorKind::kStore, opened.error().message);
    return std::move(opened).value();
  };

  InstallSigint();
  RunConsole console(args.matrix_path, DbWords(ctx.db_path), isatty(STDERR_FILENO) != 0);
  orchestrator::ProgressFileObserver progress(ctx.db_path);
  auto end = orchestrator::RunMatrix(request, {&console, &progress});
  if (group) {
    group->End(end.ok() && !end->interrupted,
               end.ok()
                   ? (end->interrupted ? "interrupted" : "run " + std::to_string(end->run_id) + " stored")
                   : end.error().message);
  }
  if (!end.ok()) return ReportSelectionError(end.error(), args.matrix_path);
  if (end->interrupted) return kExitInterrupted;
  if (end->not_ok > 0) return kExitFailureFound;
  if (args.fail_on_invalid && console.not_valid() > 0) {
    std::fprintf(stderr,
                 "dlbench run: %d ok cell%s not valid (--fail-on-invalid); 'dlbench%s show %lld' says why\n",
                 console.not_valid(), console.not_valid() == 1 ? " is" : "s are",
                 DbWords(ctx.db_path).c_str(), static_cast<long long>(end->run_id));
    return kExitFailureFound;
  }
  return kExitOk;
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
                  "K-1, K-1+N, ... of the plan. N processes with 1/N ... N/N run the matrix once; see below. "
                  "auto: K/N from the launcher (srun's SLURM_PROCID/SLURM_NTASKS, a Slurm job array's "
                  "task, torchrun's RANK/WORLD_SIZE)")
      ->type_name("K/N|auto");
  cmd->add_option("--sweep", args->sweep,
                  "Name the sweep this shard is part of, so that runs, show, compare, report and export "
                  "read its shards as one run (sweep:NAME). Without it a --shard run under srun or torchrun "
                  "takes its launcher's job (SLURM_JOB_ID.SLURM_STEP_ID, SLURM_ARRAY_JOB_ID, "
                  "TORCHELASTIC_RUN_ID), and one without a launcher is in no sweep")
      ->type_name("NAME");
  cmd->add_option("--set", args->set,
                  "Override a measurement setting of the matrix, as if written in its measure section "
                  "(same types and bounds): --set measure.max_time_s=10; repeatable, later ones win. "
                  "Stored with the run (show prints it) and applied again by --resume")
      ->type_name("measure.KEY=VALUE");
  cmd->add_option(
      "--resume", args->resume,
      "Continue an interrupted run (id or tag): runs only its cells that have no final result, "
      "selected by the --only, --shard and --set it was started with (give none, or the same ones)");
  cmd->add_flag(
      "--resume-elsewhere", args->resume_elsewhere,
      "With --resume: continue although this machine differs from the one the run started on in "
      "what decides comparability (GPU model, driver, CPU, BLAS, framework, ...); each resumed cell "
      "records the differences in extras.resume. Without it such a resume is refused, naming them");
  cmd->add_flag("--no-monitor", args->no_monitor, "Do not sample the GPU and host while cells run");
  cmd->add_flag("--runner-reuse", args->runner_reuse,
                "Let consecutive cells that agree on every process-level setting share one runner process "
                "(docs/adr/0011-runner-reuse.md); each cell records it in extras.runner_process");
  cmd->add_flag(
      "--runner-core-dumps", args->runner_core_dumps,
      "Let a crashing runner write a core file (or hand it to systemd-coredump) as the system's "
      "core limit allows. Without it runners start with a core limit of 0: a crash is recorded "
      "as its signal, and a CUDA process's core (tens of GB) cannot fill the disk the results are on");
  cmd->add_flag("--fail-on-invalid", args->fail_on_invalid,
                "Exit 1 also when a cell ended ok but its verdict is not valid (noisy, too_short, drifting, "
                "...): for CI jobs that must not publish untrustworthy numbers");
  cmd->footer(
      "Each cell runs in its own runner process. A cell that crashes, hangs, runs out of memory or\n"
      "breaks the protocol ends with that outcome and the matrix goes on. Ctrl-C stops the current\n"
      "cell within about 2 s (a second Ctrl-C at once); finished cells stay stored and\n"
      "'run --resume ID' runs the rest. One process at a time runs a run's cells.\n"
      "Several GPUs: one process per GPU, each its own run in one database, e.g.\n"
      "  CUDA_VISIBLE_DEVICES=0 dlbench --db r.db run m.yaml --shard 1/2 --sweep s1 &\n"
      "  CUDA_VISIBLE_DEVICES=1 dlbench --db r.db run m.yaml --shard 2/2 --sweep s1\n"
      "and 'dlbench --db r.db show sweep:s1' shows the two as one run.\n"
      "Under Slurm, one task per shard: srun -n 2 sh -c 'dlbench --db r-$SLURM_PROCID.db run m.yaml --shard "
      "auto'\n"
      "Under srun or torchrun without --shard, the tasks run the matrix once as a group: rank 0 runs\n"
      "every cell and alone writes the store, and a ddp cell's rank r runs on task r (tasks meet at\n"
      "MASTER_ADDR or Slurm's first host, port DLBENCH_GROUP_PORT, else MASTER_PORT + 1, else one\n"
      "derived from SLURM_JOB_ID; docs/distributed.md).\n"
      "Every matrix key: dlbench params (or docs/config-reference.md).\n"
      "Exit: 0 every cell ok; 1 some cell not ok (or, with --fail-on-invalid, not valid); 2 bad matrix or\n"
      "options; 3 store; 4 I/O; 130 interrupted.");
  cmd->callback([args, &ctx] { ctx.exit_code = RunMatrix(*args, ctx); });
}

}  // namespace dlbench::cli
