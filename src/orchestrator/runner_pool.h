// One runner process serving several consecutive cells (`dlbench run --runner-reuse`,
// docs/adr/0011-runner-reuse.md): a cell's driver releases a runner whose CONFIGURE said
// serve_more once its DONE arrived; the pool keeps it until the next cell, which takes it when
// every setting fixed at process start is the same, and ends it otherwise.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/cell_driver.h"
#include "orchestrator/cell_runner.h"
#include "plan/plan.h"

namespace dlbench::orchestrator {

// The cell parameters fixed when a runner process starts or first uses them, so that two cells
// share a process only when they agree on each (absent counts as a value): the device and the
// model (the brief: one process per model and device, so cuDNN's autotuning cache holds one
// model's shapes), the thread counts (a later cell without `threads` would inherit the earlier
// one's), `deterministic` (CUBLAS_WORKSPACE_CONFIG counts only before cuBLAS starts), the
// environment's allocator settings, and the memory cap and rank layout (refused anyway).
const std::vector<std::string>& ProcessLevelKeys();

// Whether the cell sets boundary_probe_process: shared (a boundary search's probes, and its
// measured run, share runner processes: docs/memory.md "Probes in one process").
bool SharesProbeProcess(const plan::Cell& cell);

// Why `cell` gets a process of its own even with --runner-reuse; nullopt when it may share one.
// A ddp cell (one process per rank, joined to a group) never shares; nor do a cell with memory_cap
// (a limit or a cgroup of its process) and a boundary search (its probes start processes of their
// own) unless SharesProbeProcess, whose cells share only with cells of the same cap, and a cap by
// cgroup v2 still ends the process with its cell.
std::optional<std::string> ReuseRefusal(const plan::Cell& cell);

// What two cells must agree on to share a process: the runner's argv, the environment the cell's
// runner gets (CellRunnerEnvironment) and ProcessLevelKeys' values, as one string.
std::string ProcessKey(const plan::Cell& cell, const RunnerCommand& runner);

// Where `run --runner-reuse` would run each of `cells` (plan order), known before anything runs
// (`dlbench plan --runner-reuse`): RunCell's rule, with its ReuseRefusal and ProcessKey, the key
// taken with the cell's own environment (CellRunnerEnvironment) on `runner`. A cell may take the
// process the cell before it left when both may share and their keys are equal; at run time it
// does so only when that cell ended with DONE and the runner's HELLO said multi_cell.
struct PlannedProcess {
  bool shares_previous = false;  // takes the process the cell before it left
  int process = 0;               // which process of the run (0, 1, ...) in plan order; -1: it starts none
  int cell_of_process = 1;       // 1 for the cell that starts it; 0 when it starts none
  std::optional<std::string> refusal;  // why it never shares (ReuseRefusal, or its environment)
};
std::vector<PlannedProcess> PlanRunnerReuse(const std::vector<plan::Cell>& cells,
                                            const RunnerCommand& runner);

// What a kept runner wrote on its protocol pipe after its DONE, for a warning: `bytes` as they
// continue the stream `before` (the reader's state at the release: a frame's first bytes may be
// in it already): "1 frame (STEPS), 64 bytes", "2 frames (DONE, STEPS), then part of a frame,
// 90 bytes", "bytes that are no frame (...), 3 bytes"; frames past 8 are counted, not named.
std::string DescribeLateBytes(protocol::FrameReader before, const std::string& bytes);

// A released runner waiting for its next CONFIGURE.
struct KeptRunner {
  Spawned spawned;
  std::string key;
  int first_cell_index = 0;
  int last_cell_index = 0;        // the cell whose DONE released it
  std::string last_cell_label;    // and its label
  std::string first_cell_stderr;  // where its start-up output is
  // Its start to its HELLO (process start, library loading): what the later cells do not pay. What
  // else they save (CUDA's initialisation) shows in their setup_s against the first cell's.
  double startup_s = 0;
  // The first cell's extras.memory_cap (how its cap applied), for the cells it serves after it.
  nlohmann::json memory_cap;
};

class RunnerPool {
 public:
  explicit RunnerPool(double exit_grace_s = 10.0) : exit_grace_s_(exit_grace_s) {}
  RunnerPool(const RunnerPool&) = delete;
  RunnerPool& operator=(const RunnerPool&) = delete;
  ~RunnerPool() { Close(); }

  // The kept process when its key is `key` (the pool then holds none); a kept process of another
  // key is ended first. nullopt when there is none to take. A kept process that is not clean is
  // ended, not handed on: one that wrote on its protocol pipe after the DONE that released it
  // (those bytes would otherwise be read as the next cell's) or that died while kept. Then
  // `ended_why`, when given, gets a sentence naming the cell it served last, its pid and what it
  // sent (DescribeLateBytes) or how it ended, for the taking cell's warnings.
  std::optional<KeptRunner> Take(const std::string& key, std::string* ended_why = nullptr);
  void Keep(KeptRunner runner);
  // Ends the kept process, if any: its command pipe is closed (it exits there, as after a probe),
  // it has exit_grace_s to exit before its group is killed, and what it left running is killed.
  // What it writes meanwhile is not logged: every cell it served is stored already.
  void Close();
  bool holds() const { return kept_.has_value(); }

 private:
  std::optional<KeptRunner> kept_;
  double exit_grace_s_;
};

}  // namespace dlbench::orchestrator
