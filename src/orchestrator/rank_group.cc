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
#include "orchestrator/cell_driver.h"
#include "orchestrator/memory_cap.h"
#include "orchestrator/process_tree.h"

namespace dlbench::orchestrator {
namespace {

// After the first rank fails, the others have this long to fail by themselves (a peer's death
// shows up in theirs as a collective's error) before they are killed: the rank that failed first
// for a reason of its own is then the one the cell names.
constexpr std::int64_t kPeerFailureGraceNs = 2'000'000'000;

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// Whether a rank has failed by now: it reported ERROR, broke the protocol, ran out of time, or
// exited other than cleanly after DONE.
bool Failed(const CellDriver& d) {
  const Conversation& c = d.conversation();
  if (c.ending() == Ending::kError || c.ending() == Ending::kViolation || d.timed_out()) return true;
  return d.exited() && !(c.done_seen() && d.exit_status().success());
}

}  // namespace

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
  // Rank 0 records into `rec`; the others into records of their own, merged at the end. Deques:
  // the drivers hold references into them.
  std::deque<record::CellRecord> others(static_cast<std::size_t>(world - 1));
  std::vector<AppliedMemoryCap> caps;  // declared first, so removed after the runners are reaped
  std::deque<Spawned> spawned;
  std::vector<std::unique_ptr<CellDriver>> drivers;
  const std::string base =
      rec.stdout_path.substr(0, rec.stdout_path.size() - std::string(".stdout.log").size());
  auto rendezvous = FreshRendezvousFile(base);
  if (!rendezvous.ok()) return fail(rendezvous.error().message);
  // The FileStore's last rank removes the file; a group that was killed leaves it, and it goes here.
  struct RemoveAtEnd {
    std::string path;
    ~RemoveAtEnd() {
      std::error_code ec;
      if (std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ec)))
        std::filesystem::remove(path, ec);
    }
  } remove_at_end{*rendezvous};
  auto kill_spawned = [&] {
    for (Spawned& s : spawned) s.process.SignalGroup(SIGKILL);
    for (Spawned& s : spawned) (void)KillLeftovers(s.process.pid(), 1000);
  };
  // Who holds the GPUs before any rank exists: none of them is the cell's (docs/memory.md).
  std::vector<monitor::GpuProcess> gpu_before;
  if (o.monitor != nullptr) gpu_before = o.monitor->GpuProcesses();
  for (int r = 0; r < world; ++r) {
    record::CellRecord& rr = r == 0 ? rec : others[static_cast<std::size_t>(r - 1)];
    if (r > 0) {
      rr.params = rec.params;
      rr.stdout_path = fmt::format("{}.rank{}.stdout.log", base, r);
      rr.stderr_path = fmt::format("{}.rank{}.stderr.log", base, r);
    }
    auto s = SpawnRunner(o.runner, /*with_logs=*/true);
    if (!s.ok()) {
      kill_spawned();
      return fail(fmt::format("rank {} of {}: {}", r, world, s.error().message));
    }
    spawned.push_back(std::move(s).value());
    auto cap = ApplyMemoryCap(cell, spawned.back().process.pid(), rr);
    if (!cap.ok()) {
      kill_spawned();
      return fail(fmt::format("rank {} of {}: {}", r, world, cap.error().message));
    }
    caps.push_back(std::move(cap).value());
    DriverRole role{r, protocol::Rendezvous{*rendezvous, "", 0, r, world}};
    drivers.push_back(std::make_unique<CellDriver>(cell, o, rr, spawned.back(), role));
    if (auto st = drivers.back()->OpenLogs(); !st.ok()) {
      kill_spawned();
      return fail(st.error().message);
    }
  }

  CellMonitoring monitoring(o.monitor, spawned.front().process.pid(), std::move(gpu_before));
  for (auto& d : drivers) d->Start();
  std::vector<std::int64_t> failed_ns(static_cast<std::size_t>(world), 0);
  std::vector<bool> aborted(static_cast<std::size_t>(world), false);
  std::int64_t abort_at = 0;
  const int wait_ms = std::max(5, 50 / world);
  std::vector<bool> finished(static_cast<std::size_t>(world), false);
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
    const std::int64_t now = MonotonicNowNs();
    // The ranks stop together: rank 0's STOP (the policy's, or Ctrl-C's) goes to every rank.
    const Conversation& zero = drivers.front()->conversation();
    if (zero.stop_sent()) {
      for (std::size_t r = 1; r < drivers.size(); ++r)
        drivers[r]->RequestStop(zero.stop_decision().value_or("interrupted"));
    }
    for (std::size_t r = 0; r < drivers.size(); ++r) {
      if (failed_ns[r] == 0 && !aborted[r] && Failed(*drivers[r])) {
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
  monitoring.Finish(rec, RankGroupEffective(effectives));
  for (std::size_t r = drivers.size(); r-- > 0;)
    drivers[r]->Conclude(r == 0 ? std::move(idle_series) : std::vector<record::SeriesPoint>{});
  for (std::size_t r = 0; r < caps.size(); ++r) caps[r].Conclude(r == 0 ? rec : others[r - 1]);

  // The rank the cell is named after: of those that failed without being killed for another's
  // failure, one that did not merely report ERROR (a peer's death makes the others report one),
  // then the earliest.
  std::optional<std::size_t> blamed;
  for (std::size_t r = 0; r < drivers.size(); ++r) {
    if (failed_ns[r] == 0 || aborted[r]) continue;
    auto key = [&](std::size_t i) {
      return std::make_pair(drivers[i]->conversation().error().has_value() ? 1 : 0, failed_ns[i]);
    };
    if (!blamed || key(r) < key(*blamed)) blamed = r;
  }

  nlohmann::json ranks = nlohmann::json::array();
  for (int r = 0; r < world; ++r) {
    const record::CellRecord& rr = r == 0 ? rec : others[static_cast<std::size_t>(r - 1)];
    nlohmann::json entry = {{"rank", r},
                            {"pid", drivers[static_cast<std::size_t>(r)]->pid()},
                            {"outcome", record::Name(rr.outcome)},
                            {"stdout", rr.stdout_path},
                            {"stderr", rr.stderr_path},
                            {"steps", r == 0 ? static_cast<std::int64_t>(rec.steps.size())
                                             : static_cast<std::int64_t>(rr.steps.size())}};
    if (!rr.message.empty()) entry["message"] = FirstLine(rr.message);
    if (aborted[static_cast<std::size_t>(r)]) entry["killed"] = "another rank of the cell failed";
    if (rr.extras.contains("info") && rr.extras["info"].contains("ddp_parameter_check"))
      entry["parameter_check"] = rr.extras["info"]["ddp_parameter_check"];
    ranks.push_back(entry);
  }
  if (blamed && rec.outcome != record::Outcome::kInterrupted) {
    const record::CellRecord& b = *blamed == 0 ? rec : others[*blamed - 1];
    const record::Outcome outcome = b.outcome == record::Outcome::kOk ? record::Outcome::kError : b.outcome;
    const std::string message = b.message.empty() ? "failed" : b.message;
    rec.outcome = outcome;
    rec.message = fmt::format("rank {} of {}: {}", *blamed, world, message);
    rec.verdict = record::Verdict::kNotApplicable;
    rec.verdict_reasons.clear();
  }
  for (std::size_t r = 1; r < drivers.size(); ++r) {
    for (const record::StepRow& row : others[r - 1].steps) rec.steps.push_back(row);
  }
  rec.extras["ddp"] = {{"world_size", world},
                       {"launcher", "dlbench run: one process per rank on this host"},
                       {"rendezvous", "file://" + *rendezvous},
                       {"ranks", ranks}};
  rec.finished_wall_ns = WallNowNs();
}

}  // namespace dlbench::orchestrator
