// A task of a group run other than task 0 (rank_link.h): it runs its rank of each ddp cell task 0
// names, as rank_group.cc runs a rank on one host (its own CellDriver: logs, timeouts, STOP,
// leftovers), and sends task 0 what happened and the rank's steps.
#include <fmt/core.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>

#include "common/clock.h"
#include "monitor/host_summary.h"
#include "orchestrator/cell_driver.h"
#include "orchestrator/memory_cap.h"
#include "orchestrator/process_tree.h"
#include "orchestrator/rank_group.h"
#include "orchestrator/rank_link.h"

namespace dlbench::orchestrator {
namespace {

// Why a task takes task 0 for gone when it heard nothing from it for silence_s.
std::string SilenceMessage(double silence_s) {
  return fmt::format(
      "rank 0's task sent nothing for {:.0f} s (it sends a beat every {:.0f} s): its host is gone, "
      "the network to it is cut, or it is stopped",
      silence_s, static_cast<double>(kLinkBeatIntervalNs) * 1e-9);
}

// The `host` message of a rank's cell: this host's figures (monitor::SummarizeHost) from the
// rank's series, which GPUs were the rank's, and the warnings of other processes on them; only
// its size when that is over monitor::kMaxHostReportBytes (rank 0 refuses it).
nlohmann::json HostReport(const record::CellRecord& rr, std::int64_t seq) {
  nlohmann::json report = {
      {"type", "host"}, {"cell_seq", seq}, {"figures", monitor::SummarizeHost(rr.series)}};
  if (rr.extras.contains("monitor") && rr.extras["monitor"].contains("gpu_attribution"))
    report["gpu_attribution"] = rr.extras["monitor"]["gpu_attribution"];
  if (rr.extras.contains("warnings")) report["warnings"] = rr.extras["warnings"];
  const std::size_t bytes = report.dump().size();
  if (bytes > monitor::kMaxHostReportBytes)
    return {{"type", "host"}, {"cell_seq", seq}, {"too_large_bytes", bytes}};
  return report;
}

// Runs this task's rank of `cell` as `order` says and reports it to task 0. Returns kIo when the
// connection to task 0 was lost or task 0 fell silent (the rank is then killed; the task ends). A
// new cell order that comes meanwhile (task 0 gave up on this one) is kept in `next`.
Status RunRank(RankLink& link, const plan::Cell& cell, const nlohmann::json& order,
               const TaskRequest& request, std::optional<nlohmann::json>& next) {
  const std::int64_t run_id = order.value("run_id", std::int64_t{0});
  const std::int64_t seq = order.value("cell_seq", std::int64_t{0});
  CellRunOptions o = request.options;
  o.log_dir = request.run_dir(run_id);
  std::error_code ec;
  std::filesystem::create_directories(o.log_dir, ec);
  record::CellRecord rr;
  rr.cell_id = cell.id;
  rr.key = cell.key;
  rr.params = cell.params;
  const std::string base = o.log_dir + "/" + order.value("log_name", std::string("cell"));
  rr.stdout_path = fmt::format("{}.rank{}.stdout.log", base, request.rank);
  rr.stderr_path = fmt::format("{}.rank{}.stderr.log", base, request.rank);
  rr.started_wall_ns = WallNowNs();
  const nlohmann::json rv = order.value("rendezvous", nlohmann::json::object());
  protocol::Rendezvous rendezvous{"", rv.value("addr", std::string()), rv.value("port", 0),
                                  static_cast<int>(request.local_rank), rv.value("local_world_size", 1)};
  auto report = [&](const record::CellRecord& rec, std::int64_t pid, bool timed_out, bool reported_error) {
    std::vector<record::StepRecord> steps;
    steps.reserve(rec.steps.size());
    for (const record::StepRow& row : rec.steps) steps.push_back(row.record);
    if (auto st = link.SendSteps(steps, seq); !st.ok()) return st;
    nlohmann::json info = nlohmann::json::object();
    if (rec.extras.contains("info")) info = rec.extras["info"];
    return link.Send({{"type", "rank_done"},
                      {"cell_seq", seq},
                      {"outcome", std::string(record::Name(rec.outcome))},
                      {"message", rec.message},
                      {"stdout", rec.stdout_path},
                      {"stderr", rec.stderr_path},
                      {"pid", pid},
                      {"timed_out", timed_out},
                      {"reported_error", reported_error},
                      {"effective", rec.effective},
                      {"info", info}});
  };
  // Who holds this host's GPUs before the rank exists: none of them is the cell's.
  std::vector<monitor::GpuProcess> gpu_before;
  if (o.monitor != nullptr) gpu_before = o.monitor->GpuProcesses();
  auto spawned = SpawnRunner(o.runner, /*with_logs=*/true);
  if (!spawned.ok()) {
    rr.outcome = record::Outcome::kError;
    rr.message = spawned.error().message;
    return report(rr, -1, false, false);
  }
  auto cap = ApplyMemoryCap(cell, spawned->process.pid(), rr);
  if (!cap.ok()) {
    spawned->process.SignalGroup(SIGKILL);
    (void)KillLeftovers(spawned->process.pid(), 1000);
    rr.outcome = record::Outcome::kError;
    rr.message = cap.error().message;
    return report(rr, spawned->process.pid(), false, false);
  }
  CellDriver d(cell, o, rr, *spawned, DriverRole{request.rank, rendezvous});
  if (auto st = d.OpenLogs(); !st.ok()) {
    spawned->process.SignalGroup(SIGKILL);
    (void)KillLeftovers(spawned->process.pid(), 1000);
    rr.outcome = record::Outcome::kError;
    rr.message = st.error().message;
    return report(rr, spawned->process.pid(), false, false);
  }
  // This host, sampled as rank 0 samples its own while the rank runs (none with --no-monitor).
  CellMonitoring monitoring(o.monitor, spawned->process.pid(), std::move(gpu_before));
  d.Start();
  bool said_failed = false;
  std::string lost;  // why task 0 is gone, when it is
  for (;;) {
    const bool exited = d.Poll(20);
    // Task 0's word about this cell: STOP (rank 0's policy stopped), abort (another rank failed, or
    // task 0 gave up on this task). A word about an earlier cell is stale and ignored.
    for (;;) {
      auto m = link.Receive(0);
      if (!m.ok()) {
        if (lost.empty()) {
          d.Abort("the connection to rank 0's task was lost");
          lost = "the connection to rank 0's task was lost";
        }
        break;
      }
      if (!m->has_value()) break;
      const std::string type = (*m)->is_steps ? "" : (*m)->json["type"].get<std::string>();
      if (type == "cell") next = (*m)->json;
      if ((*m)->cell_seq != seq) continue;
      if (type == "stop") d.RequestStop((*m)->json.value("reason", std::string("interrupted")));
      if (type == "abort" && !d.exited()) {
        d.Abort((*m)->json.contains("reason") ? "rank 0 gave up waiting for this rank's report"
                                              : "another rank of the cell failed");
      }
    }
    if (lost.empty() && link.silent_ns() > static_cast<std::int64_t>(request.silence_s * 1e9)) {
      lost = SilenceMessage(request.silence_s);
      d.Abort("rank 0's task fell silent");
      link.Close();
    }
    if (!said_failed && RankFailed(d)) {
      said_failed = true;
      (void)link.Send({{"type", "rank_failed"},
                       {"cell_seq", seq},
                       {"reported_error", d.conversation().error().has_value()}});
    }
    if (exited) break;
  }
  d.Finish(/*kill_leftovers=*/false);
  d.AddLeftovers(KillLeftovers(spawned->process.pid(), 2000));
  if (o.monitor != nullptr) {
    monitoring.Finish(rr);
    if (lost.empty()) {
      if (auto st = link.Send(HostReport(rr, seq)); !st.ok()) return st;
    }
    rr.series.clear();  // rank 0 stores the summary, not this host's series
  }
  d.Conclude({});
  cap->Conclude(rr);
  rr.finished_wall_ns = WallNowNs();
  if (!lost.empty())
    return MakeError(ErrorKind::kIo, fmt::format("{} during cell {} ({}); this task's rank {} was killed",
                                                 lost, cell.index + 1, cell.label, request.rank));
  return report(rr, spawned->process.pid(), d.timed_out(), d.conversation().error().has_value());
}

}  // namespace

Status ServeRankGroup(RankLink& link, const TaskRequest& request) {
  const std::int64_t silence_ns = static_cast<std::int64_t>(request.silence_s * 1e9);
  // For the whole run, idle or running a rank: task 0 tells an idle task from a lost one by them.
  const LinkBeat beat({&link});
  // The cells task 0's plan names: the task's own, or those of task 0's selection (a resume).
  std::vector<plan::Cell> resumed_cells;
  const std::vector<plan::Cell>* cells = request.cells;
  std::optional<nlohmann::json> next;  // a cell order that came while a rank ran
  for (;;) {
    nlohmann::json msg;
    if (next) {
      msg = std::move(*next);
      next.reset();
    } else {
      auto m = link.Receive(200);
      if (!m.ok()) return MakeError(ErrorKind::kIo, "rank 0's task went away: " + m.error().message);
      if (!m->has_value()) {
        if (link.silent_ns() > silence_ns) {
          link.Close();
          return MakeError(ErrorKind::kIo, SilenceMessage(request.silence_s) + "; this task ends");
        }
        continue;
      }
      if ((*m)->is_steps) continue;
      msg = std::move((*m)->json);
    }
    const std::string type = msg["type"].get<std::string>();
    if (type == "ping") {
      if (auto st = link.Send({{"type", "pong"}, {"t_ns", MonotonicNowNs()}}); !st.ok()) return st;
    } else if (type == "end") {
      if (msg.value("ok", false)) return Status::Ok();
      return MakeError(ErrorKind::kInternal,
                       "rank 0's run ended badly: " + msg.value("message", std::string()));
    } else if (type == "plan") {
      // Task 0's plan: the selection it runs (a resumed run's stored one) and the cells finished.
      plan::Selection selection{msg.value("only", std::vector<std::string>{}),
                                msg.value("shard", std::string()),
                                msg.value("set", std::vector<std::string>{})};
      const std::set<std::string> finished = msg.value("finished", std::set<std::string>{});
      std::string why;
      if (request.select_plan) {
        auto selected = request.select_plan(selection);
        if (!selected.ok()) {
          why = selected.error().message;
        } else {
          const std::string hash =
              PlanHash(selected->matrix.text, plan::SelectionArgs(selection), selected->cells, finished);
          if (hash != msg.value("plan_hash", std::string())) {
            why = fmt::format(
                "rank {}'s plan under rank 0's selection ({}) has hash {}, rank 0's {}", request.rank,
                plan::SelectionArgs(selection).empty() ? "none" : plan::SelectionArgs(selection), hash,
                msg.value("plan_hash", std::string()));
          } else {
            resumed_cells = std::move(selected->cells);
            cells = &resumed_cells;
          }
        }
      }
      if (!why.empty()) {
        (void)link.Send({{"type", "refused"}, {"message", why}});
        return MakeError(ErrorKind::kInvalidInput, "rank 0's plan is not this task's: " + why);
      }
      if (msg.value("resumed", false)) {
        std::fprintf(
            stderr, "dlbench: task %d: resuming run %lld with rank 0 (%zu cell(s) already finished)\n",
            request.rank, static_cast<long long>(msg.value("run_id", std::int64_t{0})), finished.size());
      }
      if (auto st = link.Send({{"type", "plan_ok"}}); !st.ok()) return st;
    } else if (type == "cell") {
      const std::string id = msg.value("cell_id", std::string());
      const plan::Cell* cell = nullptr;
      for (const plan::Cell& c : *cells) {
        if (c.id == id) cell = &c;
      }
      if (cell == nullptr) {
        // The plans' hashes agreed, so this is a bug; the cell still ends, naming it.
        (void)link.Send({{"type", "rank_done"},
                         {"cell_seq", msg.value("cell_seq", std::int64_t{0})},
                         {"outcome", "error"},
                         {"message", fmt::format("rank {} has no cell '{}' in its plan", request.rank, id)}});
        continue;
      }
      if (auto st = RunRank(link, *cell, msg, request, next); !st.ok()) return st;
    }
  }
}

}  // namespace dlbench::orchestrator
