// One runner process of a cell and its pipes, clock and Conversation (cell_runner.cc drives one
// per cell; rank_group.cc one per rank of a ddp cell). Internal to the orchestrator module.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/subprocess.h"
#include "launch/launcher.h"
#include "monitor/busy_processes.h"
#include "monitor/sampler.h"
#include "orchestrator/cell_logs.h"
#include "orchestrator/cell_runner.h"
#include "orchestrator/conversation.h"
#include "protocol/wire.h"
#include "record/records.h"

namespace dlbench::orchestrator {

// Launcher variables (torchrun's, Slurm's): a runner that inherits them may try to join the
// group they describe, and hang; no runner dlbench starts gets them (a ddp rank gets its group
// from CONFIGURE's rendezvous). The list is the launcher contract's (launch/launcher.h).
inline const std::vector<std::string>& LauncherVariables() { return launch::InheritedLauncherVariables(); }

// The runner's end of its pipes is mapped onto fixed fds in the child; ours stay above 9.
struct Spawned {
  Subprocess process;
  int to_runner = -1;    // we write commands here
  int from_runner = -1;  // we read messages here
  int stdout_fd = -1;    // the runner's stdout (with_logs only)
  int stderr_fd = -1;    // the runner's stderr (with_logs only)
  // What a process serving several cells (--runner-reuse, docs/adr/0011-runner-reuse.md) keeps
  // from one cell to the next: the bytes read past the last whole frame, the HELLO it sent when it
  // started, and how many cells it has finished.
  protocol::FrameReader reader;
  nlohmann::json hello;
  int cells_served = 0;
};

// `with_logs`: the runner's stdout and stderr are pipes the caller drains into its logs; else
// stdout goes to /dev/null and stderr is inherited (the probe). The launcher variables are not
// passed on.
Result<Spawned> SpawnRunner(const RunnerCommand& runner, bool with_logs);

// Seconds -> nanoseconds, clamped to [0, 1e9 s].
std::int64_t Ns(double seconds);

// The monitor around a cell: started on `pid` (no-op without a monitor) with a /proc snapshot;
// Finish stores the sampled series in `rec`, names the busiest other processes, and keeps only the
// GPUs the cell's effective parameters name.
class CellMonitoring {
 public:
  // `gpu_before`: the GPUs' compute processes taken just before the runner was spawned
  // (Monitor::GpuProcesses); those on the cell's GPUs become the cell's warnings in Finish.
  CellMonitoring(monitor::Monitor* monitor, pid_t pid, std::vector<monitor::GpuProcess> gpu_before = {});
  void Finish(record::CellRecord& rec) { Finish(rec, rec.effective); }
  // The cell's GPUs are those `effective` names (a rank group's: every rank's, RankGroupEffective)
  // rather than rec.effective's.
  void Finish(record::CellRecord& rec, const nlohmann::json& effective);

 private:
  monitor::Monitor* monitor_;
  std::vector<monitor::ProcessCpu> before_;
  std::vector<monitor::GpuProcess> gpu_before_;
};

// Which rank of its cell a driver's runner is. A single-process cell is rank 0 of 1 with no
// rendezvous.
struct DriverRole {
  int rank = 0;
  std::optional<protocol::Rendezvous> rendezvous;
};

// How far the driver went to end the runner; decides whose the runner's death is.
enum class SignalLevel { kNone, kTerm, kKill };

class CellDriver {
 public:
  CellDriver(const plan::Cell& cell, const CellRunOptions& o, record::CellRecord& rec, Spawned& s,
             DriverRole role = {});

  Status OpenLogs();
  // Start, Poll until it returns true, Finish(true).
  void Drive();
  // A runner whose CONFIGURE said serve_more (Conversation::serve_more) is released, not waited
  // for, once its DONE arrived while nothing had gone wrong (no signal, no Ctrl-C, its pipes open):
  // Poll then returns true with the process still running and waiting for the next CONFIGURE, and
  // Finish leaves its pipes open for the next cell's driver. Otherwise the driver closes its
  // command pipe after DONE or ERROR, so the runner exits, and goes on as for any runner.
  bool released() const { return released_; }
  // The steps of Drive, for a caller that drives several runners at once: Start once; Poll waits
  // at most `max_wait_ms` for the runner's pipes and returns true once the runner has exited (it
  // keeps the conversation, the logs and the clocks going); Finish drains and closes the pipes
  // and, with `kill_leftovers`, kills what the runner left (KillLeftovers' contract: only when no
  // other runner of the cell still runs).
  void Start();
  bool Poll(int max_wait_ms);
  void Finish(bool kill_leftovers);
  // Decides the outcome and message and adds the metrics; rec is complete afterwards. A driver of
  // a rank other than 0 adds no step metrics and no verdict (rank 0's steps are the measured ones).
  void Conclude(std::vector<record::SeriesPoint> idle_series);

  // STOP to the runner with `reason` (no-op once sent or once the conversation is over).
  void RequestStop(const std::string& reason);
  // SIGKILL to the runner's group now: another rank of its cell failed.
  void Abort(const char* why);
  void AddLeftovers(int n) { leftovers_ += n; }

  const Conversation& conversation() const { return conv_; }
  bool exited() const { return exited_; }
  const ExitStatus& exit_status() const { return status_; }
  pid_t pid() const { return s_.process.pid(); }
  bool timed_out() const { return timed_out_ || stop_timed_out_; }

 private:
  void Signal(SignalLevel level, const char* why);
  void HandleFrames();
  void ReadProtocol(bool drain);
  void ReadLog(int& fd, CappedLog& log, bool drain);
  void FlushOutbox();
  void Send(const std::string& bytes);
  void CheckClocks(std::int64_t now);
  bool MaybeRelease();
  std::string WithTail(std::string message) const;

  const CellRunOptions& o_;
  record::CellRecord& rec_;
  Spawned& s_;
  DriverRole role_;
  Conversation conv_;
  CappedLog stdout_log_;
  CappedLog stderr_log_;
  std::string outbox_;
  int pid_fd_ = -1;
  std::int64_t spawn_ns_ = 0;
  std::int64_t deadline_ns_ = 0;
  std::int64_t last_progress_ns_ = 0;
  bool exited_ = false;
  ExitStatus status_;
  bool protocol_eof_ = false;
  std::int64_t protocol_eof_ns_ = 0;
  std::int64_t concluded_ns_ = 0;  // DONE, ERROR or a violation arrived
  bool commands_closed_ = false;   // EPIPE: the runner no longer reads its commands
  SignalLevel signalled_ = SignalLevel::kNone;
  std::int64_t term_ns_ = 0;
  std::string signal_reason_;
  bool timed_out_ = false;
  bool stop_timed_out_ = false;
  bool exit_overdue_ = false;
  double overdue_after_s_ = 0;
  int interrupts_seen_ = 0;
  std::int64_t interrupt_ns_ = 0;
  int leftovers_ = 0;
  bool released_ = false;
};

}  // namespace dlbench::orchestrator
