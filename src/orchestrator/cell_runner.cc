#include "orchestrator/cell_runner.h"

#include <fmt/core.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <optional>

#include "common/clock.h"
#include "common/subprocess.h"
#include "measure/policy.h"
#include "orchestrator/cell_driver.h"
#include "orchestrator/memory_cap.h"
#include "orchestrator/process_tree.h"
#include "orchestrator/rank_group.h"
#include "orchestrator/runner_pool.h"
#include "protocol/runner_session.h"
#include "protocol/wire.h"

namespace dlbench::orchestrator {

namespace {

using protocol::MessageType;

bool IsExecutable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

}  // namespace

void PrepareDriverProcess() {
  static std::once_flag once;
  std::call_once(once, [] {
    signal(SIGPIPE, SIG_IGN);
    // Without it a setsid child whose parent exits escapes to init; the group kill and the /proc
    // walk of our own descendants still find every other leftover, so this is best effort.
    (void)BecomeSubreaper();
  });
}

Result<RunnerCommand> ResolveRunner(const config::RunnerSpec& spec, const std::string& bin_dir) {
  RunnerCommand cmd;
  if (spec.name == "command") {
    if (spec.command.empty()) return MakeError(ErrorKind::kInvalidInput, "runner command is empty");
    cmd.argv = spec.command;
    cmd.name = std::filesystem::path(spec.command.front()).filename().string();
    return cmd;
  }
  const std::string path = bin_dir + "/dlbench-" + spec.name;
  if (!IsExecutable(path)) {
    std::string hint = spec.name == "torch"
                           ? " (this build has no LibTorch runner: install libtorch-dev and rebuild, "
                             "see README.md)"
                           : "";
    return MakeError(ErrorKind::kNotFound, "runner '" + spec.name + "' not found at " + path + hint);
  }
  cmd.argv = {path};
  cmd.name = spec.name;
  return cmd;
}

Result<nlohmann::json> ProbeRunner(const RunnerCommand& runner, double timeout_s) {
  PrepareDriverProcess();
  auto spawned = SpawnRunner(runner, /*with_logs=*/false);
  if (!spawned.ok()) return spawned.error();
  protocol::FrameReader reader;
  const std::int64_t deadline = MonotonicNowNs() + Ns(timeout_s);
  std::optional<nlohmann::json> hello;
  std::string problem;
  while (!hello && problem.empty()) {
    auto frame = reader.Next();
    if (!frame.ok()) {
      problem = frame.error().message;
      break;
    }
    if (frame->has_value()) {
      if ((*frame)->type != MessageType::kHello) {
        problem = "the runner's first message was not HELLO";
        break;
      }
      auto body = protocol::DecodeJson(**frame);
      if (!body.ok()) {
        problem = body.error().message;
        break;
      }
      if (auto bad = CheckFieldTypes(MessageType::kHello, *body)) {
        problem = *bad;
        break;
      }
      hello = *body;
      break;
    }
    const std::int64_t left_ms = (deadline - MonotonicNowNs()) / 1'000'000;
    if (left_ms <= 0) {
      problem = "no HELLO within " + fmt::format("{:.0f}", timeout_s) + " s";
      break;
    }
    pollfd p{spawned->from_runner, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left_ms, 200))) > 0) {
      auto n = protocol::ReadInto(spawned->from_runner, reader);
      if (!n.ok() || *n == 0) problem = "the runner exited before HELLO";
    }
  }
  ::close(spawned->to_runner);  // EOF before CONFIGURE: the runner exits
  ::close(spawned->from_runner);
  spawned->process.Terminate(hello ? 5000 : 0);
  (void)KillLeftovers(spawned->process.pid(), 1000);
  if (!hello) {
    return MakeError(ErrorKind::kIo,
                     "runner " + runner.argv.front() + " did not introduce itself: " + problem);
  }
  return *hello;
}

record::CellRecord RunCell(const plan::Cell& cell, const CellRunOptions& options) {
  PrepareDriverProcess();
  CellRunOptions o = options;
  o.measure = measure::SettingsForCell(options.measure, cell.params);
  auto runner_env = CellRunnerEnvironment(cell);
  if (runner_env.ok()) o.runner.env = std::move(*runner_env);
  record::CellRecord rec;
  rec.index = cell.index;
  rec.cell_id = cell.id;
  rec.key = cell.key;
  rec.label = cell.label;
  rec.repetition = cell.repetition;
  rec.seed = cell.seed;
  rec.params = nlohmann::json::object();
  for (const auto& [k, v] : cell.params) rec.params[k] = v;
  rec.started_wall_ns = WallNowNs();
  const std::string base = fmt::format("{}/cell-{:04d}{}", o.log_dir, cell.index, o.log_suffix);
  rec.stdout_path = base + ".stdout.log";
  rec.stderr_path = base + ".stderr.log";
  rec.verdict = record::Verdict::kNotApplicable;
  auto fail = [&](const std::string& message) {
    rec.outcome = record::Outcome::kError;
    rec.message = message;
    rec.finished_wall_ns = WallNowNs();
    return rec;
  };
  auto interrupted = [&] { return o.interrupts != nullptr && o.interrupts->load() > 0; };
  if (!runner_env.ok()) {
    rec.outcome = record::Outcome::kUnsupported;
    rec.message = runner_env.error().message;
    rec.finished_wall_ns = WallNowNs();
    return rec;
  }

  // --runner-reuse: the process kept from the previous cell serves this one when every setting
  // fixed at its start is the same; a cell that may not share one ends it first.
  std::optional<KeptRunner> kept;
  std::string process_key;
  if (o.pool != nullptr) {
    if (auto refusal = ReuseRefusal(cell)) {
      o.pool->Close();
      rec.extras["runner_process"] = {{"reuse", "not shared: " + *refusal}};
    } else {
      process_key = ProcessKey(cell, o.runner);
      o.offer_reuse = true;
    }
  }

  // Idle baseline: the machine sampled with no runner, so energy can be reported above idle.
  std::vector<record::SeriesPoint> idle_series;
  if (o.monitor != nullptr && o.measure.idle_baseline_s && *o.measure.idle_baseline_s > 0) {
    o.monitor->Start(0);
    const std::int64_t until = MonotonicNowNs() + Ns(*o.measure.idle_baseline_s);
    while (MonotonicNowNs() < until && !interrupted()) usleep(20'000);
    idle_series = o.monitor->Stop();
  }
  if (interrupted()) {
    rec.outcome = record::Outcome::kInterrupted;
    rec.message = "stopped by Ctrl-C";
    return rec;
  }

  if (const int world = RankGroupSize(cell); world > 1) {
    RunRankGroup(cell, o, world, std::move(idle_series), rec);
    return rec;
  }
  // The kept process is taken as late as possible: whatever it wrote after its DONE (also during
  // the idle baseline) is then in its pipe, and the pool ends it rather than hand it on.
  if (o.offer_reuse) {
    std::string ended_why;
    kept = o.pool->Take(process_key, &ended_why);
    if (!ended_why.empty()) {
      rec.extras["warnings"].push_back(ended_why);
      rec.extras["runner_process"]["previous_process"] = ended_why;
    }
  }
  // Who holds the GPUs just before the runner starts: any process there is another's (docs/memory.md).
  std::vector<monitor::GpuProcess> gpu_before;
  if (o.monitor != nullptr) gpu_before = o.monitor->GpuProcesses();
  // A kept process's late frame sends the cell round once more, in a fresh process (the second
  // round never reuses: `kept` is then empty).
  const record::CellRecord before_runner = rec;
  for (;;) {
    if (!kept) {
      auto spawned = SpawnRunner(o.runner, /*with_logs=*/true);
      if (!spawned.ok()) return fail(spawned.error().message);
      kept = KeptRunner{std::move(spawned).value(),
                        process_key,
                        cell.index,
                        cell.index,
                        cell.label,
                        rec.stderr_path,
                        0,
                        nullptr};
    }
    Spawned& runner = kept->spawned;
    const bool reused = runner.cells_served > 0;
    if (reused) {
      // The kept runner holds its GPU already: it is this cell's process, not another's.
      const auto own = static_cast<unsigned int>(runner.process.pid());
      gpu_before.erase(std::remove_if(gpu_before.begin(), gpu_before.end(),
                                      [own](const monitor::GpuProcess& p) { return p.pid == own; }),
                       gpu_before.end());
    }
    AppliedMemoryCap cap;
    if (!reused) {
      auto applied = ApplyMemoryCap(cell, runner.process.pid(), rec);
      if (!applied.ok()) {
        runner.process.Terminate(0);
        (void)KillLeftovers(runner.process.pid(), 1000);
        return fail(applied.error().message);
      }
      cap = std::move(applied).value();
      if (rec.extras.contains("memory_cap")) kept->memory_cap = rec.extras["memory_cap"];
      // The cell's own cgroup is removed after it: its process cannot serve another cell.
      if (o.offer_reuse && kept->memory_cap.is_object() &&
          kept->memory_cap.value("mechanism", "") == kCapCgroupV2) {
        o.offer_reuse = false;
        rec.extras["runner_process"] = {{"reuse", "not shared: memory_cap is its process's own cgroup"}};
      }
    } else if (!kept->memory_cap.is_null()) {
      // The cap applied when the process started, and stays (the same cap: it is in ProcessKey).
      rec.extras["memory_cap"] = kept->memory_cap;
    }
    if (!o.offer_reuse) o.keep_after_usable_oom = false;
    CellDriver driver(cell, o, rec, runner);
    if (auto st = driver.OpenLogs(); !st.ok()) {
      runner.process.Terminate(0);
      (void)KillLeftovers(runner.process.pid(), 1000);
      return fail(st.error().message);
    }
    // Copies of gpu_before and idle_series: a second round needs them.
    CellMonitoring monitoring(o.monitor, runner.process.pid(), gpu_before);
    driver.Drive();
    monitoring.Finish(rec);
    driver.Conclude(idle_series);
    cap.Conclude(rec);
    // The kept process answered this cell's CONFIGURE with a frame of its previous cell (written after
    // that cell's DONE, after the take): it was ended, and this cell runs again in a fresh process,
    // from what it held before the runner (docs/protocol.md "Several cells in one process").
    if (reused && driver.conversation().late_frame()) {
      const std::string why = fmt::format(
          "the runner process kept after cell {} \"{}\" (pid {}) sent {} after this cell's CONFIGURE, before "
          "its READY: a frame written after that cell's DONE; it was ended and this cell ran in a fresh "
          "process",
          kept->last_cell_index, kept->last_cell_label, runner.process.pid(),
          *driver.conversation().late_frame());
      rec = before_runner;
      rec.extras["warnings"].push_back(why);
      rec.extras["runner_process"]["previous_process"] = why;
      kept.reset();
      continue;
    }
    if (o.offer_reuse) {
      const CellTimeline& t = driver.conversation().timeline();
      if (!reused) {
        runner.hello = rec.hello;
        if (t.hello_ns > 0) kept->startup_s = NsToSeconds(t.hello_ns - t.spawn_ns);
      }
      nlohmann::json info = {{"pid", runner.process.pid()},
                             {"cell_of_process", runner.cells_served + 1},
                             {"first_cell_index", kept->first_cell_index},
                             {"startup_log", kept->first_cell_stderr}};
      if (reused) info["startup_not_paid_s"] = kept->startup_s;
      if (!driver.conversation().serve_more()) {
        info["reuse"] = "not offered: the runner's HELLO does not say multi_cell";
      } else if (driver.released()) {
        info["reuse"] = "kept for the next cell";
      } else {
        info["reuse"] = "ended with this cell";
      }
      if (rec.extras.contains("runner_process") && rec.extras["runner_process"].contains("previous_process"))
        info["previous_process"] = rec.extras["runner_process"]["previous_process"];
      rec.extras["runner_process"] = info;
      if (driver.released()) {
        ++runner.cells_served;
        kept->last_cell_index = cell.index;
        kept->last_cell_label = cell.label;
        o.pool->Keep(std::move(*kept));
      }
    }
    return rec;
  }
}

}  // namespace dlbench::orchestrator
