#include "orchestrator/rank_group.h"

#include <fmt/core.h>
#include <signal.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "common/clock.h"
#include "monitor/host_summary.h"
#include "orchestrator/cell_driver.h"
#include "orchestrator/memory_cap.h"
#include "orchestrator/process_tree.h"
#include "orchestrator/rank_link.h"

namespace dlbench::orchestrator {
namespace {

// After the first rank fails, the others have this long to fail by themselves (a peer's death
// shows up in theirs as a collective's error) before they are killed: the rank that failed first
// for a reason of its own is then the one the cell names.
constexpr std::int64_t kPeerFailureGraceNs = 2'000'000'000;

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// A rank that runs on another task of a group run (rank_link.h), as rank 0 sees it.
struct RemoteRank {
  int rank = 0;
  GroupMember* member = nullptr;
  std::int64_t cell_seq = 0;  // this cell's order number: messages of another are stale
  record::CellRecord rec;
  std::int64_t pid = -1;
  bool failed = false;          // its task said so, or its connection broke
  bool reported_error = false;  // it failed by reporting ERROR (a peer's death makes ranks do that)
  bool done = false;            // its record arrived (or never will)
  bool stop_sent = false;
  bool abort_sent = false;
  nlohmann::json host;  // its task's `host` report (figures, gpu_attribution); null: none came
};

// What a message is, for the warning that drops it: "rank_done of cell order 3".
std::string Describe(const LinkMessage& msg) {
  return fmt::format(
      "{} of cell order {}",
      msg.is_steps ? fmt::format("{} step records", msg.steps.size()) : msg.json["type"].get<std::string>(),
      msg.cell_seq);
}

// The warning of a cell when a task's message of another cell (one task 0 gave up on) is dropped.
std::string StaleWarning(const GroupMember& m, const LinkMessage& msg, std::int64_t cell_seq) {
  return fmt::format(
      "rank {}'s task on {} sent {} while this cell is order {}: a late report of a cell rank 0 "
      "gave up on; dropped",
      m.rank, m.host, Describe(msg), cell_seq);
}

// Reads what `remote`'s task sent; a broken connection, a task silent for the group's silence
// limit or one past `give_up_at` fails the rank. A message of another cell is dropped, with a
// warning in `warnings`.
void PollRemote(RemoteRank& remote, std::int64_t give_up_at, std::int64_t silence_ns,
                nlohmann::json& warnings) {
  auto lost = [&](const std::string& why) {
    remote.failed = true;
    remote.done = true;
    remote.rec.outcome = record::Outcome::kError;
    remote.rec.message = why;
  };
  for (int i = 0; i < 64 && !remote.done; ++i) {
    auto m = remote.member->link->Receive(0);
    if (!m.ok()) {
      return lost(fmt::format("rank 0 lost the connection to its task on {} ({})", remote.member->host,
                              m.error().message));
    }
    if (!m->has_value()) break;
    LinkMessage& msg = **m;
    if (msg.cell_seq != remote.cell_seq) {
      warnings.push_back(StaleWarning(*remote.member, msg, remote.cell_seq));
      continue;
    }
    if (msg.is_steps) {
      // The task's clock, related to rank 0's when the group formed.
      for (record::StepRecord& step : msg.steps) {
        step.start_ns -= remote.member->clock_offset_ns;
        step.end_ns -= remote.member->clock_offset_ns;
        remote.rec.steps.push_back(record::StepRow{static_cast<std::uint32_t>(remote.rank), step});
      }
      continue;
    }
    const std::string type = msg.json["type"].get<std::string>();
    if (type == "host") {
      const std::size_t bytes = msg.json.value("too_large_bytes", msg.bytes);
      if (bytes > monitor::kMaxHostReportBytes) {
        warnings.push_back(fmt::format(
            "rank {}'s task on {} had a host report of {} bytes, over the limit of {}: refused, its "
            "host's figures are not stored",
            remote.rank, remote.member->host, bytes, monitor::kMaxHostReportBytes));
        continue;
      }
      remote.host = std::move(msg.json);
      for (const nlohmann::json& w : remote.host.value("warnings", nlohmann::json::array())) {
        if (w.is_string())
          warnings.push_back(
              fmt::format("rank {} on {}: {}", remote.rank, remote.member->host, w.get<std::string>()));
      }
    } else if (type == "rank_failed") {
      remote.failed = true;
      remote.reported_error = msg.json.value("reported_error", false);
    } else if (type == "rank_done") {
      remote.done = true;
      const auto outcome = record::ParseOutcome(msg.json.value("outcome", std::string("error")));
      remote.rec.outcome = outcome.value_or(record::Outcome::kError);
      remote.rec.message = msg.json.value("message", std::string());
      remote.rec.stdout_path = msg.json.value("stdout", std::string());
      remote.rec.stderr_path = msg.json.value("stderr", std::string());
      remote.pid = msg.json.value("pid", std::int64_t{-1});
      remote.rec.effective = msg.json.value("effective", nlohmann::json::object());
      remote.rec.extras["info"] = msg.json.value("info", nlohmann::json::object());
      remote.reported_error = remote.reported_error || msg.json.value("reported_error", false);
      if (remote.rec.outcome != record::Outcome::kOk) remote.failed = true;
    }
  }
  if (remote.done) return;
  if (remote.member->link->silent_ns() > silence_ns) {
    // Gone for the rest of the run: later cells that need it end without starting.
    remote.member->link->Close();
    return lost(
        fmt::format("its task on {} sent nothing for {:.0f} s (a task sends a beat every "
                    "{:.0f} s): its host is gone, the network to it is cut, or it is stopped",
                    remote.member->host, static_cast<double>(silence_ns) * 1e-9,
                    static_cast<double>(kLinkBeatIntervalNs) * 1e-9));
  }
  if (MonotonicNowNs() > give_up_at) {
    // Its late report, should it come, is of this cell's order and dropped by the next cell's.
    (void)remote.member->link->Send({{"type", "abort"},
                                     {"cell_seq", remote.cell_seq},
                                     {"reason", "rank 0 gave up waiting for this rank's report"}});
    lost(fmt::format("its task on {} did not report the rank's end in time", remote.member->host));
  }
}

// extras.hosts of a group run's cell: one entry per rank, in rank order, each its task's host
// and that host's figures over the cell (monitor::SummarizeHost): rank 0's from its own series,
// the others' from their tasks' `host` reports; `missing` says why an entry has none.
nlohmann::json GroupHosts(const RankGroupLinks& group, bool monitored, const record::CellRecord& rec,
                          const std::deque<RemoteRank>& remotes) {
  nlohmann::json hosts = nlohmann::json::array();
  nlohmann::json zero = {{"rank", 0}, {"host", group.host()}, {"addr", group.bind_addr()}};
  if (monitored) {
    zero["figures"] = monitor::SummarizeHost(rec.series);
    if (rec.extras.contains("monitor") && rec.extras["monitor"].contains("gpu_attribution"))
      zero["gpu_attribution"] = rec.extras["monitor"]["gpu_attribution"];
  } else {
    zero["missing"] = "rank 0 ran with --no-monitor";
  }
  hosts.push_back(std::move(zero));
  for (const RemoteRank& remote : remotes) {
    nlohmann::json entry = {
        {"rank", remote.rank}, {"host", remote.member->host}, {"addr", remote.member->link->peer_addr()}};
    if (remote.host.is_object() && remote.host.contains("figures")) {
      entry["figures"] = remote.host["figures"];
      if (remote.host.contains("gpu_attribution")) entry["gpu_attribution"] = remote.host["gpu_attribution"];
    } else {
      entry["missing"] =
          "its task sent no host report (it ran with --no-monitor, its rank never started, the report "
          "was over the limit, or the task was lost)";
    }
    hosts.push_back(std::move(entry));
  }
  return hosts;
}

}  // namespace

bool RankFailed(const CellDriver& d) {
  const Conversation& c = d.conversation();
  if (c.ending() == Ending::kError || c.ending() == Ending::kViolation || d.timed_out()) return true;
  return d.exited() && !(c.done_seen() && d.exit_status().success());
}

nlohmann::json RankGroupEffective(const std::vector<const nlohmann::json*>& rank_effectives) {
  if (rank_effectives.empty() || rank_effectives.front() == nullptr) return nlohmann::json::object();
  nlohmann::json out = *rank_effectives.front();
  nlohmann::json uuids = nlohmann::json::array();
  bool named = false;
  for (const nlohmann::json* e : rank_effectives) {
    if (e == nullptr || !e->is_object()) continue;
    const auto it = e->find("device_uuids");
    if (it == e->end() || !it->is_array()) continue;
    named = true;
    for (const nlohmann::json& u : *it) {
      if (std::find(uuids.begin(), uuids.end(), u) == uuids.end()) uuids.push_back(u);
    }
  }
  if (named && out.is_object()) out["device_uuids"] = std::move(uuids);
  return out;
}

int RankGroupSize(const plan::Cell& cell) {
  const auto strategy = cell.params.find("strategy");
  if (strategy == cell.params.end() || !strategy->second.is_string() ||
      strategy->second.get<std::string>() != "ddp")
    return 1;
  const auto world = cell.params.find("world_size");
  if (world == cell.params.end() || !world->second.is_number_integer()) return 1;
  return static_cast<int>(std::clamp<std::int64_t>(world->second.get<std::int64_t>(), 1, 1024));
}

Result<std::string> FreshRendezvousFile(const std::string& log_base) {
  std::error_code ec;
  const std::filesystem::path path = std::filesystem::absolute(log_base + ".rendezvous", ec);
  if (ec) return MakeError(ErrorKind::kIo, fmt::format("{}.rendezvous: {}", log_base, ec.message()));
  const std::filesystem::file_status st = std::filesystem::symlink_status(path, ec);
  if (st.type() == std::filesystem::file_type::not_found) return path.string();
  if (st.type() != std::filesystem::file_type::regular) {
    return MakeError(ErrorKind::kIo,
                     fmt::format("the ranks' rendezvous file {} exists and is not a regular file; "
                                 "dlbench does not remove it: move it away",
                                 path.string()));
  }
  if (!std::filesystem::remove(path, ec) || ec) {
    return MakeError(ErrorKind::kIo, fmt::format("cannot remove the stale rendezvous file {}: {}",
                                                 path.string(), ec ? ec.message() : "it vanished"));
  }
  return path.string();
}

void RunRankGroup(const plan::Cell& cell, const CellRunOptions& o, int world,
                  std::vector<record::SeriesPoint> idle_series, record::CellRecord& rec) {
  auto fail = [&](const std::string& message) {
    rec.outcome = record::Outcome::kError;
    rec.message = message;
    rec.finished_wall_ns = WallNowNs();
  };
  RankGroupLinks* group = o.group;
  if (group != nullptr && world > group->world_size()) {
    rec.outcome = record::Outcome::kUnsupported;
    rec.message = fmt::format(
        "world_size {} needs {} ranks, one per launcher task, and the launcher started {} task{}: start "
        "at least {} (srun -n, torchrun --nnodes x --nproc_per_node)",
        world, world, group->world_size(), group->world_size() == 1 ? "" : "s", world);
    rec.finished_wall_ns = WallNowNs();
    return;
  }
  // Ranks run here: all of them, or rank 0 alone in a group run; the others on their tasks.
  const int local = group == nullptr ? world : 1;
  // Rank 0 records into `rec`; the others into records of their own, merged at the end. Deques:
  // the drivers hold references into them.
  std::deque<record::CellRecord> others(static_cast<std::size_t>(local - 1));
  std::deque<RemoteRank> remotes;
  nlohmann::json stale = nlohmann::json::array();  // warnings: tasks' late messages, dropped
  std::vector<AppliedMemoryCap> caps;              // declared first, so removed after the runners are reaped
  std::deque<Spawned> spawned;
  std::vector<std::unique_ptr<CellDriver>> drivers;
  const std::string base =
      rec.stdout_path.substr(0, rec.stdout_path.size() - std::string(".stdout.log").size());
  std::string rendezvous_text;
  std::optional<protocol::Rendezvous> zero_rendezvous;
  std::string rendezvous_file;
  if (group == nullptr) {
    auto rendezvous = FreshRendezvousFile(base);
    if (!rendezvous.ok()) return fail(rendezvous.error().message);
    rendezvous_file = *rendezvous;
    rendezvous_text = "file://" + rendezvous_file;
  } else {
    // A task whose connection broke in an earlier cell is gone for the rest of the run (its dlbench
    // died, or its host): the cells that need it end here, without starting rank 0.
    for (int r = 1; r < world; ++r) {
      const GroupMember& m = group->member(r);
      if (m.link->closed()) {
        return fail(
            fmt::format("rank {} of {}: rank 0 lost the connection to its task on {} in an earlier "
                        "cell; no cell that needs it can run",
                        r, world, m.host));
      }
      // An idle task beats as a running one does (rank 0's beat thread reads them): one silent for
      // the limit since its last cell is gone, and is told apart before its rank is waited for.
      if (m.link->silent_ns() > group->silence_ns()) {
        m.link->Close();
        return fail(fmt::format(
            "rank {} of {}: its task on {} sent nothing for over {:.0f} s while it waited idle for this cell "
            "(an idle task sends a beat every {:.0f} s): its host is gone, the network to it is cut, or "
            "it is stopped; no cell that needs it can run",
            r, world, m.host, static_cast<double>(group->silence_ns()) * 1e-9,
            static_cast<double>(kLinkBeatIntervalNs) * 1e-9));
      }
    }
    // Ranks on several hosts meet in a TCPStore that rank 0's runner serves at the rendezvous host.
    auto port = FreeTcpPort();
    if (!port.ok()) return fail(port.error().message);
    // Tasks on one host reach rank 0 from one address (two hosts from two, even when their names
    // agree, as two network namespaces' do).
    auto ranks_on = [&](const std::string& addr) {
      int n = addr == group->bind_addr() ? 1 : 0;
      for (int r = 1; r < world; ++r) n += group->member(r).link->peer_addr() == addr ? 1 : 0;
      return n;
    };
    zero_rendezvous = protocol::Rendezvous{"", group->addr(), *port, static_cast<int>(group->local_rank()),
                                           ranks_on(group->bind_addr())};
    rendezvous_text = fmt::format("tcp://{}:{}", group->addr(), *port);
    const std::string log_name = std::filesystem::path(base).filename().string();
    const std::int64_t cell_seq = group->NextCellSeq();
    for (int r = 1; r < world; ++r) {
      GroupMember& m = group->member(r);
      // What a task sent since its last cell ended is a late report of a cell rank 0 gave up on.
      for (int i = 0; i < 1024; ++i) {
        auto late = m.link->Receive(0);
        if (!late.ok() || !late->has_value()) break;
        stale.push_back(StaleWarning(m, **late, cell_seq));
      }
      const nlohmann::json order = {
          {"type", "cell"},
          {"cell_seq", cell_seq},
          {"cell_id", cell.id},
          {"run_id", group->run_id()},
          {"log_name", log_name},
          {"world_size", world},
          {"rendezvous",
           {{"addr", group->addr()}, {"port", *port}, {"local_world_size", ranks_on(m.link->peer_addr())}}}};
      RemoteRank& remote = remotes.emplace_back();
      remote.rank = r;
      remote.member = &m;
      remote.cell_seq = cell_seq;
      remote.rec.params = rec.params;
      if (auto st = m.link->Send(order); !st.ok()) {
        remote.failed = true;
        remote.done = true;
        remote.rec.outcome = record::Outcome::kError;
        remote.rec.message =
            fmt::format("its task on {} could not be told to start it: {}", m.host, st.error().message);
      }
    }
  }
  // The FileStore's last rank removes the file; a group that was killed leaves it, and it goes here.
  struct RemoveAtEnd {
    std::string path;
    ~RemoveAtEnd() {
      std::error_code ec;
      if (!path.empty() && std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ec)))
        std::filesystem::remove(path, ec);
    }
  } remove_at_end{rendezvous_file};
  auto abort_remotes = [&] {
    for (RemoteRank& remote : remotes) {
      if (!remote.done && !remote.abort_sent) {
        remote.abort_sent = true;
        (void)remote.member->link->Send({{"type", "abort"}, {"cell_seq", remote.cell_seq}});
      }
    }
  };
  auto kill_spawned = [&] {
    for (Spawned& s : spawned) s.process.SignalGroup(SIGKILL);
    for (Spawned& s : spawned) (void)KillLeftovers(s.process.pid(), 1000);
  };
  // Who holds the GPUs before any rank exists: none of them is the cell's (docs/memory.md).
  std::vector<monitor::GpuProcess> gpu_before;
  if (o.monitor != nullptr) gpu_before = o.monitor->GpuProcesses();
  for (int r = 0; r < local; ++r) {
    record::CellRecord& rr = r == 0 ? rec : others[static_cast<std::size_t>(r - 1)];
    if (r > 0) {
      rr.params = rec.params;
      rr.stdout_path = fmt::format("{}.rank{}.stdout.log", base, r);
      rr.stderr_path = fmt::format("{}.rank{}.stderr.log", base, r);
    }
    auto s = SpawnRunner(o.runner, /*with_logs=*/true);
    if (!s.ok()) {
      kill_spawned();
      abort_remotes();
      return fail(fmt::format("rank {} of {}: {}", r, world, s.error().message));
    }
    spawned.push_back(std::move(s).value());
    auto cap = ApplyMemoryCap(cell, spawned.back().process.pid(), rr);
    if (!cap.ok()) {
      kill_spawned();
      abort_remotes();
      return fail(fmt::format("rank {} of {}: {}", r, world, cap.error().message));
    }
    caps.push_back(std::move(cap).value());
    DriverRole role{
        r, zero_rendezvous ? *zero_rendezvous : protocol::Rendezvous{rendezvous_file, "", 0, r, world}};
    drivers.push_back(std::make_unique<CellDriver>(cell, o, rr, spawned.back(), role));
    if (auto st = drivers.back()->OpenLogs(); !st.ok()) {
      kill_spawned();
      abort_remotes();
      return fail(st.error().message);
    }
  }

  CellMonitoring monitoring(o.monitor, spawned.front().process.pid(), std::move(gpu_before));
  for (auto& d : drivers) d->Start();
  // Per rank (local ones first, then remote): when it failed, whether it was killed for another's
  // failure, whether it failed by reporting ERROR.
  std::vector<std::int64_t> failed_ns(static_cast<std::size_t>(world), 0);
  std::vector<bool> aborted(static_cast<std::size_t>(world), false);
  std::vector<bool> reported_error(static_cast<std::size_t>(world), false);
  std::int64_t abort_at = 0;
  const std::int64_t slack_ns = group != nullptr ? group->report_slack_ns() : 0;
  const std::int64_t silence_ns = group != nullptr ? group->silence_ns() : 0;
  const std::int64_t give_up_at =
      MonotonicNowNs() + Ns(o.timeout_s) + Ns(o.stop_grace_s) + Ns(o.exit_grace_s) + slack_ns;
  const int wait_ms = std::max(5, 50 / world);
  std::vector<bool> finished(static_cast<std::size_t>(local), false);
  for (;;) {
    bool all_exited = true;
    for (std::size_t r = 0; r < drivers.size(); ++r) {
      if (!drivers[r]->Poll(wait_ms)) {
        all_exited = false;
      } else if (!finished[r]) {
        // What the rank wrote before it exited (its DONE, say) is read now, before it is judged.
        drivers[r]->Finish(/*kill_leftovers=*/false);
        finished[r] = true;
      }
    }
    for (RemoteRank& remote : remotes) {
      if (!remote.done) {
        PollRemote(remote, abort_at != 0 ? std::min(give_up_at, abort_at + slack_ns) : give_up_at, silence_ns,
                   stale);
      }
      all_exited = all_exited && remote.done;
    }
    const std::int64_t now = MonotonicNowNs();
    // The ranks stop together: rank 0's STOP (the policy's, or Ctrl-C's) goes to every rank.
    const Conversation& zero = drivers.front()->conversation();
    if (zero.stop_sent()) {
      const std::string reason = zero.stop_decision().value_or("interrupted");
      for (std::size_t r = 1; r < drivers.size(); ++r) drivers[r]->RequestStop(reason);
      for (RemoteRank& remote : remotes) {
        if (!remote.done && !remote.stop_sent) {
          remote.stop_sent = true;
          (void)remote.member->link->Send(
              {{"type", "stop"}, {"cell_seq", remote.cell_seq}, {"reason", reason}});
        }
      }
    }
    for (std::size_t r = 0; r < static_cast<std::size_t>(world); ++r) {
      if (failed_ns[r] != 0 || aborted[r]) continue;
      bool failed_now = false;
      if (r < drivers.size()) {
        failed_now = RankFailed(*drivers[r]);
        reported_error[r] = drivers[r]->conversation().error().has_value();
      } else {
        const RemoteRank& remote = remotes[r - drivers.size()];
        failed_now = remote.failed;
        reported_error[r] = remote.reported_error;
      }
      if (failed_now) {
        failed_ns[r] = now;
        if (abort_at == 0) abort_at = now + kPeerFailureGraceNs;
      }
    }
    if (abort_at != 0 && now >= abort_at) {
      for (std::size_t r = 0; r < drivers.size(); ++r) {
        if (!drivers[r]->exited() && failed_ns[r] == 0) {
          aborted[r] = true;
          drivers[r]->Abort("another rank of the cell failed");
        }
      }
      for (std::size_t i = 0; i < remotes.size(); ++i) {
        if (!remotes[i].done && failed_ns[drivers.size() + i] == 0) aborted[drivers.size() + i] = true;
      }
      abort_remotes();
    }
    if (all_exited) break;
  }
  // Only now that every rank is reaped may what they left be killed (KillLeftovers' contract).
  int leftovers = 0;
  for (Spawned& s : spawned) leftovers += KillLeftovers(s.process.pid(), 2000);
  drivers.front()->AddLeftovers(leftovers);
  // The group's GPUs are every rank's: the other-process warnings and the GPU series cover them all.
  std::vector<const nlohmann::json*> effectives = {&rec.effective};
  for (const record::CellRecord& rr : others) effectives.push_back(&rr.effective);
  for (const RemoteRank& remote : remotes) effectives.push_back(&remote.rec.effective);
  monitoring.Finish(rec, RankGroupEffective(effectives));
  if (group != nullptr)
    rec.extras[monitor::kHostsExtrasKey] = GroupHosts(*group, o.monitor != nullptr, rec, remotes);
  for (std::size_t r = drivers.size(); r-- > 0;)
    drivers[r]->Conclude(r == 0 ? std::move(idle_series) : std::vector<record::SeriesPoint>{});
  for (std::size_t r = 0; r < caps.size(); ++r) caps[r].Conclude(r == 0 ? rec : others[r - 1]);

  auto record_of = [&](std::size_t r) -> const record::CellRecord& {
    if (r == 0) return rec;
    if (r < drivers.size()) return others[r - 1];
    return remotes[r - drivers.size()].rec;
  };
  // The rank the cell is named after: of those that failed without being killed for another's
  // failure, one that did not merely report ERROR (a peer's death makes the others report one),
  // then the earliest.
  std::optional<std::size_t> blamed;
  for (std::size_t r = 0; r < static_cast<std::size_t>(world); ++r) {
    if (failed_ns[r] == 0 || aborted[r]) continue;
    auto key = [&](std::size_t i) { return std::make_pair(reported_error[i] ? 1 : 0, failed_ns[i]); };
    if (!blamed || key(r) < key(*blamed)) blamed = r;
  }

  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t r = 0; r < static_cast<std::size_t>(world); ++r) {
    const record::CellRecord& rr = record_of(r);
    const std::int64_t pid = r < drivers.size() ? drivers[r]->pid() : remotes[r - drivers.size()].pid;
    nlohmann::json entry = {{"rank", r},
                            {"pid", pid},
                            {"outcome", record::Name(rr.outcome)},
                            {"stdout", rr.stdout_path},
                            {"stderr", rr.stderr_path},
                            {"steps", r == 0 ? static_cast<std::int64_t>(rec.steps.size())
                                             : static_cast<std::int64_t>(rr.steps.size())}};
    if (r >= drivers.size()) {
      const GroupMember& m = *remotes[r - drivers.size()].member;
      entry["host"] = m.host;
      entry["addr"] = m.link->peer_addr();
      entry["clock_offset_ns"] = m.clock_offset_ns;
      entry["clock_rtt_ns"] = m.clock_rtt_ns;
    } else if (group != nullptr) {
      entry["host"] = group->host();
      entry["addr"] = group->bind_addr();
    }
    if (!rr.message.empty()) entry["message"] = FirstLine(rr.message);
    if (aborted[r]) entry["killed"] = "another rank of the cell failed";
    if (rr.extras.contains("info") && rr.extras["info"].contains("ddp_parameter_check"))
      entry["parameter_check"] = rr.extras["info"]["ddp_parameter_check"];
    ranks.push_back(entry);
  }
  if (blamed && rec.outcome != record::Outcome::kInterrupted) {
    const record::CellRecord& b = record_of(*blamed);
    const record::Outcome outcome = b.outcome == record::Outcome::kOk ? record::Outcome::kError : b.outcome;
    const std::string message = b.message.empty() ? "failed" : b.message;
    rec.outcome = outcome;
    rec.message = fmt::format("rank {} of {}: {}", *blamed, world, message);
    rec.verdict = record::Verdict::kNotApplicable;
    rec.verdict_reasons.clear();
  }
  for (std::size_t r = 1; r < static_cast<std::size_t>(world); ++r) {
    for (const record::StepRow& row : record_of(r).steps) rec.steps.push_back(row);
  }
  for (const nlohmann::json& w : stale) rec.extras["warnings"].push_back(w);
  rec.extras["ddp"] = {{"world_size", world},
                       {"launcher", group == nullptr ? "dlbench run: one process per rank on this host"
                                                     : "launcher tasks: rank r runs on task r"},
                       {"rendezvous", rendezvous_text},
                       {"ranks", ranks}};
  rec.finished_wall_ns = WallNowNs();
}

}  // namespace dlbench::orchestrator
