// A run: a matrix's selected cells, each run in its own runner process and stored as it finishes
// (docs/architecture.md "The flow of one run"). Selection, the runner probe and fingerprint, the
// cell loop, storing, the run's status and lock, and resume live here; arguments, exit codes and
// printing are the CLI's (src/cli/cmd_run.cc), which watches the run through RunObserver.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "orchestrator/cell_runner.h"
#include "orchestrator/retry.h"
#include "plan/selection.h"
#include "record/records.h"
#include "store/result_store.h"

namespace dlbench::orchestrator {

struct RunRequest {
  std::string matrix_path;
  std::string out_dir = "dlbench-out";  // cell logs go to <out_dir>/<store>/run-<id>/ (run_folder.h)
  // The store's identity for its log folder (a database file's canonical path); empty: the
  // store's Describe().
  std::string store_key;
  plan::Selection selection;  // --only and --shard as given (--shard auto resolved to K/N)
  std::string resume;         // a run id or tag to resume; empty: a new run
  // --resume-elsewhere: resume although this machine's fingerprint differs from the run's in what
  // decides comparability (each resumed cell then records the differences in extras.resume).
  bool resume_elsewhere = false;
  // The sweep a new run is a shard of (RunRecord::sweep); empty: none. A resumed run keeps its
  // own; `sweep_given` (--sweep was given) must then name the same.
  std::string sweep;
  bool sweep_given = false;
  bool monitor = true;  // sample the GPUs and the host while cells run
  // --runner-reuse (docs/adr/0011-runner-reuse.md): consecutive cells in plan order that agree on
  // every process-level setting share one runner process (CellRunOptions::pool).
  bool runner_reuse = false;
  bool runner_core_dumps = false;  // --runner-core-dumps: RunnerCommand::core_dumps
  std::string bin_dir;             // where dlbench-null and dlbench-torch are
  // The launcher contract as read (launch::ToJson, with the shard's source): stored in a new run's
  // fingerprint as `launcher`; null: left out.
  nlohmann::json launcher;
  // Opens the store, once: first thing for a resume (its selection is stored), after the matrix
  // and the runner were found good for a new run (a bad matrix creates no database).
  std::function<Result<std::unique_ptr<store::ResultStore>>()> open_store;
  // Ctrl-C presses (CellRunOptions::interrupts); null: never interrupted.
  const std::atomic<int>* interrupts = nullptr;
  // A group run's other tasks (rank_link.h), formed by the caller: a ddp cell's rank r runs on
  // task r. Null: every rank runs here.
  RankGroupLinks* group = nullptr;
  // Applied to every cell's options after the matrix's (tests shorten the graces).
  std::function<void(CellRunOptions&)> adjust_cell;
};

// What observers are told. References are valid only during the call.
struct RunStart {
  std::int64_t run_id = 0;
  const record::RunRecord& run;
  const plan::SelectedPlan& plan;
  std::size_t to_run = 0;            // cells this invocation runs
  std::size_t already_finished = 0;  // cells the run had finished before (a resume)
  bool resumed = false;
  // A resume given no --only/--shard that applies the run's stored selection.
  std::optional<plan::Selection> reapplied_selection;
  std::string runner_name;
  std::string store_description;
  std::string run_dir;
  std::vector<std::string> warnings;  // the environment's (monitor::FingerprintWarnings)
};

struct CellStart {
  const plan::Cell& cell;
  std::size_t position = 0;  // 1-based among the cells this invocation runs
  std::size_t to_run = 0;
  double elapsed_s = 0;         // since the first cell started
  std::optional<double> eta_s;  // from the cells done so far; none before the first ends
};

struct CellEnd {
  const record::CellRecord& cell;  // as stored (an interrupted cell is not stored)
  std::size_t done = 0;            // cells of this invocation finished and stored, this one included
  std::size_t to_run = 0;
};

struct RunEnd {
  std::int64_t run_id = 0;
  record::RunStatus status = record::RunStatus::kRunning;  // as stored: completed, interrupted, failed
  double elapsed_s = 0;
  std::map<record::Outcome, int> outcomes;  // of the cells this invocation stored
  int not_ok = 0;                           // of those, cells whose outcome is not ok
  bool interrupted = false;
  // What `run --resume` must be given again to continue (empty when the run stored its own).
  plan::Selection resume_selection;
};

// Watches a run, in the style of TFLite's BenchmarkListener: called between cells and, for
// OnCellProgress, between the polls of a running cell, never inside anything timed (runners time
// their steps in their own processes). Called on the run's thread, in the order observers were
// given. An observer must not throw and should return quickly: the cell's runner waits on it.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // The run exists in the store (created or resumed) and its lock is held; no cell has started.
  virtual void OnRunStart(const RunStart& /*start*/) {}
  // A cell is about to start its runner.
  virtual void OnCellStart(const CellStart& /*start*/) {}
  // A cell is about to be measured again (measure.retry_disturbed): which attempt, and the one before.
  virtual void OnCellRetry(const plan::Cell& /*cell*/, const RetryStart& /*retry*/) {}
  // About once a second while a cell runs.
  virtual void OnCellProgress(const plan::Cell& /*cell*/, const CellProgress& /*progress*/) {}
  // A cell finished and was stored.
  virtual void OnCellEnd(const CellEnd& /*end*/) {}
  // The run's status is stored (also when the run failed after OnRunStart); the last call.
  virtual void OnRunEnd(const RunEnd& /*end*/) {}
};

// Runs the request to its end. Errors before the run exists create nothing: a bad selection or
// matrix (kInvalidInput; a matrix file's diagnostics as plan::SelectPlan gives them), an empty
// selection (kInvalidInput naming why), a missing runner, a store that cannot be opened, a resume
// that does not fit the stored run or whose run another live process holds (kInvalidInput naming
// the holder's pid and host). Errors after it exists (the output folder, the store refusing a
// cell) mark the run failed, call OnRunEnd with kFailed, and are returned. Ctrl-C is not an error:
// the RunEnd says interrupted.
Result<RunEnd> RunMatrix(const RunRequest& request, const std::vector<RunObserver*>& observers);

// Adds to `selected.warnings` one "m.yaml:L:C: warning: world_size N ..." for each world_size of its
// ddp cuda cells above the GPUs this host shows (plan/host_gpus.h, monitor/visible_gpus.h); asks
// NVML only when a cell needs GPUs per rank, and adds nothing when no count is known. `plan` and
// `run` call it.
void AddHostGpuWarnings(plan::SelectedPlan& selected);

}  // namespace dlbench::orchestrator
