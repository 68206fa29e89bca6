// A task of a group run other than task 0 (rank_link.h): it runs its rank of each ddp cell task 0
// names, as rank_group.cc runs a rank on one host (its own CellDriver: logs, timeouts, STOP,
// leftovers), and sends task 0 what happened and the rank's steps.
#include <fmt/core.h>
#include <signal.h>

#include <filesystem>

#include "common/clock.h"
#include "orchestrator/cell_driver.h"
#include "orchestrator/memory_cap.h"
#include "orchestrator/process_tree.h"
#include "orchestrator/rank_group.h"
#include "orchestrator/rank_link.h"

namespace dlbench::orchestrator {
namespace {

// Runs this task's rank of `cell` as `order` says and reports it to task 0. Returns kIo when the
// connection to task 0 was lost (the rank is then killed; the task ends).
Status RunRank(RankLink& link, const plan::Cell& cell, const nlohmann::json& order,
               const TaskRequest& request) {
  const std::int64_t run_id = order.value("run_id", std::int64_t{0});
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
    if (auto st = link.SendSteps(steps); !st.ok()) return st;
    nlohmann::json info = nlohmann::json::object();
    if (rec.extras.contains("info")) info = rec.extras["info"];
    return link.Send({{"type", "rank_done"},
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
  d.Start();
  bool said_failed = false;
  bool lost = false;
  for (;;) {
    const bool exited = d.Poll(20);
    // Task 0's word: STOP (rank 0's policy stopped), abort (another rank failed).
    for (;;) {
      auto m = link.Receive(0);
      if (!m.ok()) {
        if (!lost) d.Abort("the connection to rank 0's task was lost");
        lost = true;
        break;
      }
      if (!m->has_value()) break;
      const std::string type = (*m)->is_steps ? "" : (*m)->json["type"].get<std::string>();
      if (type == "stop") d.RequestStop((*m)->json.value("reason", std::string("interrupted")));
      if (type == "abort" && !d.exited()) d.Abort("another rank of the cell failed");
    }
    if (!said_failed && RankFailed(d)) {
      said_failed = true;
      (void)link.Send({{"type", "rank_failed"}, {"reported_error", d.conversation().error().has_value()}});
    }
    if (exited) break;
  }
  d.Finish(/*kill_leftovers=*/false);
  d.AddLeftovers(KillLeftovers(spawned->process.pid(), 2000));
  d.Conclude({});
  cap->Conclude(rr);
  rr.finished_wall_ns = WallNowNs();
  if (lost)
    return MakeError(ErrorKind::kIo, fmt::format("the connection to rank 0's task was lost during cell {} "
                                                 "({}); this task's rank {} was killed",
                                                 cell.index + 1, cell.label, request.rank));
  return report(rr, spawned->process.pid(), d.timed_out(), d.conversation().error().has_value());
}

}  // namespace

Status ServeRankGroup(RankLink& link, const TaskRequest& request) {
  for (;;) {
    auto m = link.Receive(1000);
    if (!m.ok()) return MakeError(ErrorKind::kIo, "rank 0's task went away: " + m.error().message);
    if (!m->has_value() || (*m)->is_steps) continue;
    const nlohmann::json& msg = (*m)->json;
    const std::string type = msg["type"].get<std::string>();
    if (type == "ping") {
      if (auto st = link.Send({{"type", "pong"}, {"t_ns", MonotonicNowNs()}}); !st.ok()) return st;
    } else if (type == "end") {
      if (msg.value("ok", false)) return Status::Ok();
      return MakeError(ErrorKind::kInternal,
                       "rank 0's run ended badly: " + msg.value("message", std::string()));
    } else if (type == "cell") {
      const std::string id = msg.value("cell_id", std::string());
      const plan::Cell* cell = nullptr;
      for (const plan::Cell& c : *request.cells) {
        if (c.id == id) cell = &c;
      }
      if (cell == nullptr) {
        // The plans' hashes agreed, so this is a bug; the cell still ends, naming it.
        (void)link.Send({{"type", "rank_done"},
                         {"outcome", "error"},
                         {"message", fmt::format("rank {} has no cell '{}' in its plan", request.rank, id)}});
        continue;
      }
      if (auto st = RunRank(link, *cell, msg, request); !st.ok()) return st;
    }
  }
}

}  // namespace dlbench::orchestrator
