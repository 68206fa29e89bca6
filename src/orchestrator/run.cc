#include "orchestrator/run.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "common/clock.h"
#include "common/files.h"
#include "common/version.h"
#include "monitor/fingerprint.h"
#include "monitor/sampler.h"
#include "monitor/visible_gpus.h"
#include "orchestrator/boundary_cell.h"
#include "orchestrator/ddp_analysis.h"
#include "orchestrator/input_analysis.h"
#include "orchestrator/rank_link.h"
#include "orchestrator/resume_check.h"
#include "orchestrator/retry.h"
#include "orchestrator/run_folder.h"
#include "orchestrator/runner_pool.h"
#include "plan/host_gpus.h"

namespace dlbench::orchestrator {
namespace {

// The run's part after it exists: its status when the invocation ends, its lock, and the
// observers' last call, whichever way the invocation ends.
class OpenRun {
 public:
  OpenRun(store::ResultStore& store, std::int64_t run_id, const std::vector<RunObserver*>& observers)
      : store_(store), observers_(observers) {
    end_.run_id = run_id;
  }
  ~OpenRun() {
    if (!ended_) (void)Fail();
  }
  void Started() { started_ = true; }
  RunEnd& end() { return end_; }

  // Marks the run failed and returns `error`.
  Error Fail(Error error = MakeError(ErrorKind::kInternal, "the run ended early")) {
    End(record::RunStatus::kFailed);
    return error;
  }
  void End(record::RunStatus status) {
    if (ended_) return;
    ended_ = true;
    end_.status = status;
    (void)store_.SetRunStatus(end_.run_id, status, WallNowNs());
    (void)store_.UnlockRun(end_.run_id);
    if (started_) {
      for (RunObserver* o : observers_) o->OnRunEnd(end_);
    }
  }

 private:
  store::ResultStore& store_;
  const std::vector<RunObserver*>& observers_;
  RunEnd end_;
  bool started_ = false;
  bool ended_ = false;
};

}  // namespace

void AddHostGpuWarnings(plan::SelectedPlan& selected) {
  if (plan::GpusNeeded(selected.cells) == 0) return;
  const std::optional<monitor::VisibleGpus> gpus = monitor::ThisHostsVisibleGpus();
  if (!gpus) return;
  for (std::string& w : plan::GpuShortfallWarnings(selected.matrix, selected.cells, gpus->count, gpus->from))
    selected.warnings.push_back(std::move(w));
}

Result<RunEnd> RunMatrix(const RunRequest& request, const std::vector<RunObserver*>& observers) {
  PrepareDriverProcess();
  auto given = plan::NormalizeSelection(request.selection);
  if (!given.ok()) return given.error();

  // A resumed run decides the selection: it stored the one it was started with.
  std::unique_ptr<store::ResultStore> store;
  std::optional<record::RunRecord> resumed;
  plan::Selection selection = *given;
  std::optional<plan::Selection> reapplied;
  if (!request.resume.empty()) {
    auto opened = request.open_store();
    if (!opened.ok()) return opened.error();
    store = std::move(opened).value();
    auto id = store->ResolveRun(request.resume);
    if (!id.ok()) return id.error();
    auto existing = store->GetRun(*id);
    if (!existing.ok()) return existing.error();
    if (request.sweep_given && request.sweep != existing->sweep) {
      return MakeError(
          ErrorKind::kInvalidInput,
          fmt::format("--sweep {}: run {} is {}; resume it without --sweep", request.sweep, *id,
                      existing->sweep.empty() ? "in no sweep" : "a shard of sweep " + existing->sweep));
    }
    auto chosen = plan::ResumeSelection(*id, existing->selection, *given);
    if (!chosen.ok()) return chosen.error();
    if (given->empty() && !chosen->empty()) reapplied = *chosen;
    selection = *chosen;
    resumed = std::move(existing).value();
  }

  auto selected = plan::SelectPlan(request.matrix_path, selection);
  if (!selected.ok()) return selected.error();
  AddHostGpuWarnings(*selected);
  const config::Matrix& matrix = selected->matrix;
  const std::vector<plan::Cell>& cells = selected->cells;
  if (cells.empty()) {
    return MakeError(ErrorKind::kInvalidInput, plan::EmptySelectionMessage(*selected, request.matrix_path));
  }
  auto runner = ResolveRunner(matrix.runner, request.bin_dir);
  if (!runner.ok()) return runner.error();
  runner->core_dumps = request.runner_core_dumps;
  if (!store) {
    auto opened = request.open_store();
    if (!opened.ok()) return opened.error();
    store = std::move(opened).value();
  }

  const store::RunLockOwner me = store::ThisProcessAsOwner();
  auto lock = [&](std::int64_t run_id) -> Status {
    auto held = store->TryLockRun(run_id, me);
    if (!held.ok()) return held.error();
    if (held->has_value()) {
      return MakeError(
          ErrorKind::kInvalidInput,
          fmt::format("run {} is being run by {}; a second `run --resume {}` would run its cells "
                      "twice: wait for it, or stop it (Ctrl-C) first",
                      run_id, store::DescribeHolder(**held), run_id));
    }
    return Status::Ok();
  };

  // This machine's fingerprint, from the runner's HELLO: a new run stores it; a resume compares it
  // with the run's (docs/measurement.md "Resuming on another machine").
  auto fingerprint_here = [&]() -> Result<nlohmann::json> {
    auto hello = ProbeRunner(*runner, std::max(30.0, std::min(matrix.timeout_s, 120.0)));
    if (!hello.ok()) return hello.error();
    hello->erase("pid");         // differs every run and decides nothing
    MonotonicClock probe_clock;  // Monitor keeps a reference: it must outlive the monitor
    monitor::Monitor probe_monitor(monitor::DefaultSamplers(), probe_clock, 1000);
    nlohmann::json fp = monitor::CollectFingerprint(*hello, probe_monitor.Describe());
    if (!request.launcher.is_null()) fp["launcher"] = request.launcher;
    return fp;
  };

  record::RunRecord run;
  std::set<std::string> finished;
  std::vector<std::string> warnings;
  // A resume on a machine whose fingerprint differs from the run's: what each resumed cell records
  // in extras.resume (null: nothing differs).
  nlohmann::json resumed_elsewhere;
  if (resumed) {
    const std::int64_t id = resumed->id;
    if (resumed->matrix_text != matrix.text) {
      return MakeError(
          ErrorKind::kInvalidInput,
          fmt::format("{} differs from the matrix run {} was started with; resume needs the same "
                      "file (dlbench export {} --format json shows it)",
                      request.matrix_path, id, id));
    }
    // The lock first: what is finished cannot change under a resume that holds it.
    if (auto st = lock(id); !st.ok()) return st.error();
    auto done = store->FinishedCellIds(id);
    if (!done.ok()) {
      (void)store->UnlockRun(id);
      return done.error();
    }
    if (auto st = plan::CheckResumedCells(*resumed, *done, *selected); !st.ok()) {
      (void)store->UnlockRun(id);
      return st.error();
    }
    auto here = fingerprint_here();
    if (!here.ok()) {
      (void)store->UnlockRun(id);
      return here.error();
    }
    auto check = CheckResumeEnvironment(*resumed, *here, request.resume_elsewhere);
    if (!check.ok()) {
      (void)store->UnlockRun(id);
      return check.error();
    }
    resumed_elsewhere = std::move(check->record);
    if (!check->warning.empty()) warnings.push_back(check->warning);
    run = *resumed;
    finished = *done;
  } else {
    // The runner introduces itself once so the stored fingerprint has its framework versions.
    auto here = fingerprint_here();
    if (!here.ok()) return here.error();
    run.environment = std::move(here).value();
    run.environment_hash = monitor::ComparabilityHash(run.environment);
    run.name = matrix.name.empty() ? std::filesystem::path(request.matrix_path).stem().string() : matrix.name;
    run.matrix_path = request.matrix_path;
    run.matrix_text = matrix.text;
    run.started_wall_ns = WallNowNs();
    run.tool_version = kVersion;
    run.git_commit = kGitCommit;
    run.total_cells = static_cast<int>(cells.size());
    run.selection = selection;
    if (!request.sweep.empty()) {
      run.sweep = request.sweep;
      run.sweep_cells = static_cast<int>(selected->matched);
    }
    auto id = store->BeginRun(run);
    if (!id.ok()) return id.error();
    run.id = *id;
    warnings = monitor::FingerprintWarnings(run.environment);
    if (request.launcher.is_object() && request.launcher.value("launcher", "") == "invalid") {
      warnings.push_back("the launcher's variables are malformed (recorded in the fingerprint's launcher): " +
                         request.launcher.value("error", ""));
    }
    // bf16/fp16 on a CPU without instructions for them measures an emulation (issue 18).
    std::map<std::string, std::size_t> cpu_precisions;
    for (const plan::Cell& c : cells) {
      const auto device = c.params.find("device");
      const auto precision = c.params.find("precision");
      if (device == c.params.end() || precision == c.params.end() || !device->second.is_string() ||
          !precision->second.is_string() || device->second.get<std::string>().rfind("cpu", 0) != 0) {
        continue;
      }
      ++cpu_precisions[precision->second.get<std::string>()];
    }
    for (const auto& [precision, n] : cpu_precisions) {
      if (auto w = monitor::EmulatedPrecisionWarning(run.environment, precision, n)) warnings.push_back(*w);
    }
  }

  // The matrix's own warnings ("m.yaml:5:3: warning: ..."), as the run's: "m.yaml:5:3: ...".
  for (const std::string& w : selected->warnings) {
    const auto at = w.find(": warning: ");
    warnings.push_back(at == std::string::npos ? w : w.substr(0, at) + ": " + w.substr(at + 11));
  }

  OpenRun open(*store, run.id, observers);
  if (!resumed) {
    // A resume that took the run between BeginRun and here would be refused now: the run is
    // then marked failed by `open`, and the message says who has it.
    if (auto st = lock(run.id); !st.ok()) return open.Fail(st.error());
  } else {
    (void)store->SetRunStatus(run.id, record::RunStatus::kRunning, std::nullopt);
  }
  RunEnd& end = open.end();
  // A run that stored its selection reapplies it; one stored without (older) needs it again.
  end.resume_selection = run.selection.empty() ? selection : plan::Selection{};

  // A resumed run logs where it started (its cells' stored log paths say where); a new one under
  // --out, in the store's own folder.
  const std::string store_key = request.store_key.empty() ? store->Describe() : request.store_key;
  std::string run_dir = RunFolder(request.out_dir, store_key, run.id);
  if (resumed) {
    auto stored = store->GetCells(run.id, store::CellQuery{});
    if (stored.ok()) {
      if (auto started_in = StoredRunFolder(*stored); started_in && *started_in != run_dir) {
        warnings.push_back(fmt::format("run {} keeps its logs where it started: {} (--out is {})", run.id,
                                       *started_in, request.out_dir));
        run_dir = *started_in;
      }
    }
  }
  if (auto st = MakeDirs(run_dir); !st.ok()) {
    return open.Fail(MakeError(st.error().kind,
                               st.error().message + "; run " + std::to_string(run.id) + " is marked failed"));
  }
  if (auto st = WriteFileAtomic(run_dir + "/matrix.yaml", matrix.text); !st.ok()) {
    return open.Fail(MakeError(st.error().kind,
                               st.error().message + "; run " + std::to_string(run.id) + " is marked failed"));
  }

  std::unique_ptr<monitor::Monitor> monitor;
  MonotonicClock clock;
  if (request.monitor) {
    monitor = std::make_unique<monitor::Monitor>(monitor::DefaultSamplers(), clock,
                                                 matrix.measure.sample_interval_ms);
  }

  std::size_t to_run = 0;
  for (const auto& c : cells) to_run += finished.count(c.id) ? 0 : 1;
  const RunStart start{run.id,
                       run,
                       *selected,
                       to_run,
                       cells.size() - to_run,
                       resumed.has_value(),
                       reapplied,
                       runner->name,
                       store->Describe(),
                       run_dir,
                       warnings};
  open.Started();
  for (RunObserver* o : observers) o->OnRunStart(start);

  // The input-bound verdict's controls (plan::Cell::input_control_id, and input_pipeline_id when the
  // matrix has that twin) run before the cells that need them; their records are kept here
  // (without steps and series) until those cells end. A resumed run reads the controls it finished
  // before from the store, once.
  // A ddp cell's references (plan/ddp_references.h) are kept the same way.
  std::set<std::string> needed_controls;
  for (const auto& c : cells) {
    for (const std::string* id : {&c.input_control_id, &c.input_pipeline_id, &c.ddp_scaling_control_id,
                                  &c.ddp_compute_only_id, &c.ddp_serial_id}) {
      if (!id->empty()) needed_controls.insert(*id);
    }
  }
  std::map<std::string, record::CellRecord> controls;
  bool read_stored_controls = !resumed;
  auto keep_control = [&](const record::CellRecord& rec) {
    if (!needed_controls.count(rec.cell_id)) return;
    record::CellRecord kept = rec;
    kept.steps.clear();
    kept.series.clear();
    controls[rec.cell_id] = std::move(kept);
  };
  auto control_of = [&](const std::string& id) -> const record::CellRecord* {
    if (id.empty()) return nullptr;
    if (!controls.count(id) && !read_stored_controls) {
      read_stored_controls = true;
      if (auto stored_cells = store->GetCells(run.id, store::CellQuery{}); stored_cells.ok()) {
        for (const record::CellRecord& c : *stored_cells) keep_control(c);
      }
    }
    auto it = controls.find(id);
    return it == controls.end() ? nullptr : &it->second;
  };

  if (request.group != nullptr) {
    // The tasks check that they walk the plan rank 0 runs: for a resume, the run's own selection
    // and the cells it finished (they have no store to read them from).
    request.group->set_run_id(run.id);
    GroupPlan group_plan{run.id, resumed.has_value(), selection, finished,
                         PlanHash(matrix.text, plan::SelectionArgs(selection), cells, finished)};
    if (auto st = request.group->AgreePlan(group_plan); !st.ok()) {
      if (!resumed) return open.Fail(st.error());
      // A resume that did not start leaves the run as it found it (interrupted), for the next one.
      open.End(record::RunStatus::kInterrupted);
      return st.error();
    }
  }
  // --runner-reuse: the runner process a cell released, kept for the next one (ended at the end of
  // the run, by Ctrl-C, or by a cell that may not share it).
  RunnerPool pool;
  // boundary_seed: other_caps looks for the same cell under the matrix's other caps, which --only
  // may have left out of `cells`: the whole plan, expanded once when a cell asks.
  std::optional<std::vector<plan::Cell>> whole_plan;
  auto plan_cells = [&]() -> const std::vector<plan::Cell>& {
    if (!whole_plan) {
      auto expanded = plan::Expand(matrix);
      if (expanded.ok()) {
        whole_plan = std::move(expanded->cells);
      } else {
        whole_plan = cells;
      }
    }
    return *whole_plan;
  };
  const std::int64_t t0 = MonotonicNowNs();
  std::size_t done = 0;
  bool interrupted = false;
  auto pressed = [&] { return request.interrupts != nullptr && request.interrupts->load() > 0; };
  for (const auto& cell : cells) {
    if (finished.count(cell.id)) continue;
    if (pressed()) {
      interrupted = true;
      break;
    }
    const double elapsed = NsToSeconds(MonotonicNowNs() - t0);
    CellStart cell_start{cell, done + 1, to_run, elapsed, std::nullopt};
    if (done > 0) cell_start.eta_s = elapsed / static_cast<double>(done) * static_cast<double>(to_run - done);
    for (RunObserver* o : observers) o->OnCellStart(cell_start);

    CellRunOptions options;
    options.runner = *runner;
    options.log_dir = run_dir;
    options.timeout_s = matrix.timeout_s;
    options.measure = matrix.measure;
    options.monitor = monitor.get();
    options.interrupts = request.interrupts;
    options.group = request.group;
    options.on_progress = [&](const CellProgress& progress) {
      for (RunObserver* o : observers) o->OnCellProgress(cell, progress);
    };
    if (request.adjust_cell) request.adjust_cell(options);
    // A boundary search runs its probes in processes of their own, unless boundary_probe_process:
    // shared, whose probes share processes (with the run's under --runner-reuse).
    const bool own_processes = IsBoundarySearch(cell) && !SharesProbeProcess(cell);
    if (own_processes || (IsBoundarySearch(cell) && !request.runner_reuse)) pool.Close();
    if (request.runner_reuse && !own_processes) options.pool = &pool;
    // measure.retry_disturbed: a cell the machine disturbed is measured again (retry.h).
    BoundarySeeds seeds;
    std::string seed_note;
    if (IsBoundarySearch(cell) && BoundarySettings(cell).seeded)
      seeds = FindBoundarySeeds(cell, plan_cells(), *store, &seed_note);
    record::CellRecord rec = IsBoundarySearch(cell)
                                 ? RunBoundarySearch(cell, options, RunCell, seeds)
                                 : RunWithRetries(cell, options, matrix.measure.retry_disturbed, RunCell,
                                                  [&](const RetryStart& retry) {
                                                    for (RunObserver* o : observers)
                                                      o->OnCellRetry(cell, retry);
                                                  });
    if (rec.outcome == record::Outcome::kInterrupted) {
      interrupted = true;
      break;
    }
    if (!seed_note.empty()) {
      rec.extras["warnings"].push_back(fmt::format(
          "boundary_seed: other_caps: some of the store's searches under other caps could not be read ({}); "
          "{}",
          seed_note,
          seeds.points.empty() ? "the search started from boundary_min" : "the ones read seeded the search"));
    }
    if (!cell.input_control_id.empty()) {
      AddInputVerdict(rec, control_of(cell.input_control_id), cell.input_control_id,
                      control_of(cell.input_pipeline_id), cell.input_pipeline_id);
    }
    AddDdpFigures(rec);
    AddDdpComparisons(rec,
                      DdpReferenceCells{cell.ddp_scaling_control_id, control_of(cell.ddp_scaling_control_id),
                                        cell.ddp_compute_only_id, control_of(cell.ddp_compute_only_id),
                                        cell.ddp_serial_id, control_of(cell.ddp_serial_id)});
    rec.run_id = run.id;
    if (!resumed_elsewhere.is_null()) rec.extras["resume"] = resumed_elsewhere;
    if (auto st = store->PutCell(rec); !st.ok()) return open.Fail(st.error());
    keep_control(rec);
    ++done;
    ++end.outcomes[rec.outcome];
    if (rec.outcome != record::Outcome::kOk) ++end.not_ok;
    for (RunObserver* o : observers) o->OnCellEnd(CellEnd{rec, done, to_run});
  }

  pool.Close();
  auto stored = store->FinishedCellIds(run.id);
  const bool complete =
      stored.ok() && !interrupted &&
      std::all_of(cells.begin(), cells.end(), [&](const plan::Cell& c) { return stored->count(c.id) > 0; });
  end.interrupted = interrupted;
  end.elapsed_s = NsToSeconds(MonotonicNowNs() - t0);
  open.End(complete ? record::RunStatus::kCompleted : record::RunStatus::kInterrupted);
  return end;
}

}  // namespace dlbench::orchestrator
