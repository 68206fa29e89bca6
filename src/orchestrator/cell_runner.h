// Runs one cell in its own runner process and turns whatever happens into a CellRecord
// (DESIGN.md "Why a process per cell"; outcomes are data, STYLE.md rule 8). The protocol itself
// is orchestrator::Conversation; this is the process, the pipes and the clock around it.
#pragma once

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "config/matrix.h"
#include "monitor/sampler.h"
#include "orchestrator/cell_logs.h"
#include "orchestrator/conversation.h"
#include "plan/plan.h"
#include "store/result_store.h"

namespace dlbench::orchestrator {

class RunnerPool;  // runner_pool.h

struct RunnerCommand {
  std::vector<std::string> argv;
  std::string name;  // "null", "torch", or the program's basename
  // Set in the runner's environment on top of dlbench's (a cell's cuda_alloc_conf; RunCell fills
  // it from the cell: CellRunnerEnvironment in memory_cap.h).
  std::vector<std::pair<std::string, std::string>> env;
  // false (the default): the runner starts with RLIMIT_CORE's soft limit at 0, so a crashing
  // runner (a CUDA process's core can take tens of GB) writes no core beside the results; `dlbench
  // run --runner-core-dumps` keeps the limit dlbench has.
  bool core_dumps = false;
};

// dlbench-null / dlbench-torch beside the dlbench binary, or the matrix's command.
Result<RunnerCommand> ResolveRunner(const config::RunnerSpec& spec, const std::string& bin_dir);

// What a cell's progress callback is told, about once a second while it runs.
struct CellProgress {
  std::int64_t steps = 0;  // rank-0 step records the measurement policy has seen
  double elapsed_s = 0;    // since the runner was started
  ConversationState state = ConversationState::kAwaitHello;
};

class RankGroupLinks;  // rank_link.h

struct CellRunOptions {
  RunnerCommand runner;
  std::string log_dir;  // per-cell stdout/stderr files go here
  // Appended to the cell's log names (cell-0003<suffix>.stdout.log): a boundary search's probes
  // (".probe-bs16") keep their own logs beside the measured run's.
  std::string log_suffix;
  double timeout_s = 600;
  config::MeasureSettings measure;
  monitor::Monitor* monitor = nullptr;  // optional
  // Ctrl-C presses so far (the SIGINT handler counts them); may be null. The first sends STOP,
  // then SIGTERM to the runner's group after interrupt_grace_s / 2 and SIGKILL after
  // interrupt_grace_s; a second kills the group at once. The cell then ends kInterrupted.
  const std::atomic<int>* interrupts = nullptr;
  double interrupt_grace_s = 2.0;
  // After STOP the runner has max(stop_grace_s, 3 x its longest step) to send DONE.
  double stop_grace_s = 10.0;
  // After DONE, ERROR or the end of its protocol stream, the runner has this long to exit
  // before its group is ended (SIGTERM, then SIGKILL a second later).
  double exit_grace_s = 10.0;
  std::size_t log_head_bytes = kLogHeadBytes;  // what each log keeps (cell_logs.h)
  std::size_t log_tail_bytes = kLogTailBytes;
  ConversationLimits limits;
  // Called about once a second while the cell runs, from the cell's own loop (between polls;
  // the runner times its steps in its own process); may be empty.
  std::function<void(const CellProgress&)> on_progress;
  // A group run's other tasks (rank_link.h; `run` under srun or torchrun without --shard): a ddp
  // cell's rank r runs on task r. Null: every rank runs here.
  RankGroupLinks* group = nullptr;
  // `dlbench run --runner-reuse` (docs/adr/0011-runner-reuse.md): the process kept from the
  // previous cell, which this cell takes when it may share it, and where this cell's runner is
  // kept after its DONE. Null: a process of its own, as always. A cell that may not share one
  // ends the kept process before it starts. Its extras.runner_process says what happened.
  RunnerPool* pool = nullptr;
  // Set by RunCell for a cell whose process the pool may keep: CONFIGURE offers serve_more.
  bool offer_reuse = false;
  // A boundary search's probes under boundary_probe_process: shared (docs/memory.md "Probes in one
  // process"): a runner whose ERROR is an `oom` that says process_usable (its allocator refused the
  // request and the runner frees the cell before the next CONFIGURE) is kept like one that sent DONE.
  bool keep_after_usable_oom = false;
  // Which measurement of the cell this is, from 1: measure.retry_disturbed runs a cell the machine
  // disturbed again (retry.h); CONFIGURE carries it above 1.
  int attempt = 1;
};

// Makes this process fit to drive runners, once: SIGPIPE ignored (a runner that exits as STOP is
// written must show up as EPIPE, not kill the driver) and the process a child subreaper
// (process_tree.h). RunCell calls it; so does the run, before anything else.
void PrepareDriverProcess();

// Runs `cell` to an outcome. Never throws; every failure becomes the record's outcome. The
// outcome is decided from the conversation and the runner's own exit (not from the end of its
// pipes, which a child may hold), and never blames the runner for a signal dlbench sent it.
// Whatever the runner left behind (children in its group, or a setsid child) is killed before it
// returns (KillLeftovers' contract applies: no other child processes while a cell runs).
record::CellRecord RunCell(const plan::Cell& cell, const CellRunOptions& options);

// Starts the runner, reads its HELLO (type-checked like a cell's), and lets it go (it exits on EOF
// before CONFIGURE). Used once per run so the environment fingerprint holds the framework's
// versions.
Result<nlohmann::json> ProbeRunner(const RunnerCommand& runner, double timeout_s);

}  // namespace dlbench::orchestrator
