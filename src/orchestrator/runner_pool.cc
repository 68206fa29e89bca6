#include "orchestrator/runner_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <utility>

#include "common/clock.h"
#include "orchestrator/boundary_cell.h"
#include "orchestrator/memory_cap.h"
#include "orchestrator/process_tree.h"
#include "orchestrator/rank_group.h"

namespace dlbench::orchestrator {
namespace {

void CloseFd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

// At most this much of what a kept runner wrote after its DONE is read to name it.
constexpr std::size_t kLateBytesLimit = 1 << 16;

// Reads and drops what a pipe holds now (the fd is non-blocking), so a runner writing at its exit
// never blocks on a full pipe.
void Discard(int fd) {
  if (fd < 0) return;
  char buf[4096];
  for (int i = 0; i < 256; ++i) {
    if (::read(fd, buf, sizeof buf) <= 0) return;
  }
}

}  // namespace

const std::vector<std::string>& ProcessLevelKeys() {
  static const std::vector<std::string> keys = {
      "device",          "model",          "threads",    "interop_threads", "deterministic",
      "cuda_alloc_conf", "host_allocator", "memory_cap", "world_size",      "strategy"};
  return keys;
}

std::optional<std::string> ReuseRefusal(const plan::Cell& cell) {
  if (RankGroupSize(cell) > 1) return std::string("a ddp cell runs one process per rank");
  // A boundary search's probes and its measured run share one cap (memory_cap is in ProcessKey), so
  // under boundary_probe_process: shared they may share its process; RunCell still refuses a cgroup.
  if (CellMemoryCap(cell) && !SharesProbeProcess(cell))
    return std::string("memory_cap limits its runner process");
  if (IsBoundarySearch(cell) && !SharesProbeProcess(cell))
    return std::string("a boundary search runs each probe in a process of its own");
  return std::nullopt;
}

bool SharesProbeProcess(const plan::Cell& cell) {
  const auto it = cell.params.find("boundary_probe_process");
  return it != cell.params.end() && it->second.is_string() && it->second.get<std::string>() == "shared";
}

std::string ProcessKey(const plan::Cell& cell, const RunnerCommand& runner) {
  nlohmann::json key = {{"argv", runner.argv}, {"params", nlohmann::json::object()}};
  nlohmann::json env = nlohmann::json::array();
  for (const auto& [name, value] : runner.env) env.push_back({name, value});
  key["env"] = env;
  for (const std::string& k : ProcessLevelKeys()) {
    const auto it = cell.params.find(k);
    key["params"][k] = it == cell.params.end() ? nlohmann::json() : it->second;
  }
  return key.dump();
}

std::vector<PlannedProcess> PlanRunnerReuse(const std::vector<plan::Cell>& cells,
                                            const RunnerCommand& runner) {
  std::vector<PlannedProcess> out;
  out.reserve(cells.size());
  // The process the pool would hold after the previous cell, as RunCell leaves it: a refused cell
  // ends the kept process; a cell whose environment cannot be set starts nothing and leaves the
  // pool as it was.
  std::optional<std::string> kept_key;
  int kept_process = -1;
  int kept_cells = 0;
  int processes = 0;
  for (const plan::Cell& cell : cells) {
    PlannedProcess p;
    auto env = CellRunnerEnvironment(cell);
    if (auto refusal = ReuseRefusal(cell)) {
      p.refusal = std::move(refusal);
      p.process = processes++;
      kept_key.reset();
    } else if (!env.ok()) {
      p.refusal = "it starts no runner: " + env.error().message;
      p.process = -1;
      p.cell_of_process = 0;
    } else {
      RunnerCommand command = runner;
      command.env = std::move(env).value();
      std::string key = ProcessKey(cell, command);
      p.shares_previous = kept_key == key;
      if (p.shares_previous) {
        p.process = kept_process;
        p.cell_of_process = ++kept_cells;
      } else {
        p.process = kept_process = processes++;
        kept_cells = 1;
      }
      kept_key = std::move(key);
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::string DescribeLateBytes(protocol::FrameReader before, const std::string& bytes) {
  const std::size_t total = before.buffered_bytes() + bytes.size();
  before.Feed(bytes.data(), bytes.size());
  std::vector<std::string> names;
  std::size_t frames = 0;
  std::string rest;
  for (;;) {
    auto frame = before.Next();
    if (!frame.ok()) {
      rest = fmt::format("bytes that are no frame ({})", frame.error().message);
      break;
    }
    if (!frame->has_value()) {
      if (before.buffered_bytes() > 0) rest = "part of a frame";
      break;
    }
    ++frames;
    if (names.size() < 8) names.emplace_back(protocol::MessageTypeName((*frame)->type));
  }
  std::string said;
  if (frames > 0) {
    said = fmt::format("{} frame{} ({}", frames, frames == 1 ? "" : "s", fmt::join(names, ", "));
    if (frames > names.size()) said += fmt::format(", ... {} more", frames - names.size());
    said += ")";
    if (!rest.empty()) said += ", then ";
  }
  return fmt::format("{}{}, {} byte{}", said, rest, total, total == 1 ? "" : "s");
}

std::optional<KeptRunner> RunnerPool::Take(const std::string& key, std::string* ended_why) {
  if (!kept_) return std::nullopt;
  // What it wrote on its protocol pipe since the driver stopped reading at its DONE: a clean runner
  // wrote nothing and waits for its next CONFIGURE.
  Spawned& s = kept_->spawned;
  if (s.from_runner >= 0) {
    const int flags = ::fcntl(s.from_runner, F_GETFL);
    if (flags >= 0) (void)::fcntl(s.from_runner, F_SETFL, flags | O_NONBLOCK);
  }
  std::string late;
  bool pipe_closed = false;
  while (s.from_runner >= 0 && late.size() < kLateBytesLimit) {
    char buf[4096];
    const ssize_t n = ::read(s.from_runner, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) pipe_closed = true;
    if (n <= 0) break;
    late.append(buf, static_cast<std::size_t>(n));
  }
  std::optional<std::string> problem;
  if (!late.empty() || s.reader.buffered_bytes() > 0)
    problem = "sent " + DescribeLateBytes(s.reader, late) + " after that cell's DONE";
  // It may have died while it waited (nothing was listening to it): then it serves no cell.
  if (auto status = s.process.TryWait()) {
    problem = (problem ? *problem + ", and " : std::string()) + "ended while it was kept (" +
              status->Describe() + ")";
  } else if (pipe_closed && !problem) {
    problem = std::string("closed its protocol pipe after that cell's DONE");
  }
  if (problem && ended_why != nullptr) {
    *ended_why =
        fmt::format("the runner process kept after cell {} \"{}\" (pid {}) {}: it was ended, not reused",
                    kept_->last_cell_index, kept_->last_cell_label, s.process.pid(), *problem);
  }
  if (problem || kept_->key != key) {
    Close();
    return std::nullopt;
  }
  std::optional<KeptRunner> taken = std::move(kept_);
  kept_.reset();
  return taken;
}

void RunnerPool::Keep(KeptRunner runner) {
  Close();
  kept_ = std::move(runner);
}

void RunnerPool::Close() {
  if (!kept_) return;
  Spawned& s = kept_->spawned;
  CloseFd(s.to_runner);
  const std::int64_t deadline = MonotonicNowNs() + Ns(exit_grace_s_);
  while (!s.process.finished() && !s.process.TryWait() && MonotonicNowNs() < deadline) {
    Discard(s.from_runner);
    Discard(s.stdout_fd);
    Discard(s.stderr_fd);
    usleep(2'000);
  }
  if (!s.process.finished()) (void)s.process.Terminate(1000);
  CloseFd(s.from_runner);
  CloseFd(s.stdout_fd);
  CloseFd(s.stderr_fd);
  (void)KillLeftovers(s.process.pid(), 1000);
  kept_.reset();
}

}  // namespace dlbench::orchestrator
