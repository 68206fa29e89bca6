#include "orchestrator/cell_driver.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <utility>

#include "common/clock.h"
#include "measure/policy.h"
#include "monitor/analysis.h"
#include "monitor/gpu_attribution.h"
#include "orchestrator/cell_metrics.h"
#include "orchestrator/converge_verdict.h"
#include "orchestrator/load_cell.h"
#include "orchestrator/memory_cap.h"
#include "orchestrator/process_tree.h"
#include "protocol/runner_session.h"

namespace dlbench::orchestrator {
namespace {

constexpr int kChildFdOut = 3;  // the runner writes its messages here
constexpr int kChildFdIn = 4;   // the runner reads commands here
constexpr int kStderrTailLines = 15;
constexpr std::int64_t kNsPerS = 1'000'000'000;
constexpr std::size_t kReadChunk = 1 << 16;
// After the runner exited, at most this much more is read from a pipe a child may still hold.
constexpr std::size_t kDrainLimitBytes = std::size_t{64} << 20;

// Closes an fd once; -1 means already closed.
void CloseFd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

void SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) (void)fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// A descriptor that becomes readable when `pid` exits (pidfd_open, Linux 5.3), or -1: the loop
// then polls the exit with a short timeout instead.
int OpenPidFd(pid_t pid) {
#ifdef SYS_pidfd_open
  const long fd = syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    (void)fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    return static_cast<int>(fd);
  }
#endif
  return -1;
}

// Energy, utilisation, throttling and leak verdicts from the sampled series over the measured
// window (monitor/analysis.h).
void AddMonitorAnalysis(std::vector<record::SeriesPoint> idle_series, record::CellRecord& rec) {
  monitor::AnalysisInput in;
  if (rec.extras.contains("monitor") && rec.extras["monitor"].is_object() &&
      rec.extras["monitor"].contains("busiest_elsewhere") &&
      rec.extras["monitor"]["busiest_elsewhere"].is_string()) {
    in.busiest_elsewhere = rec.extras["monitor"]["busiest_elsewhere"].get<std::string>();
  }
  in.series = std::move(rec.series);
  in.steps = std::move(rec.steps);
  in.window = rec.window.value_or(record::MeasuredWindow{});
  in.window_holds_warmup = rec.warmup_rule == measure::kWholeRunRule;
  const auto scenario = rec.params.find("scenario");
  in.scenario =
      scenario != rec.params.end() && scenario->is_string() && scenario->get<std::string>() == "infer"
          ? monitor::Scenario::kInfer
          : monitor::Scenario::kTrain;
  // READY's effective.samples_per_step is type-checked (an integer >= 1); batch_size comes from
  // the registry-validated parameters.
  std::int64_t samples = 1;
  if (rec.effective.contains("samples_per_step")) {
    samples = rec.effective["samples_per_step"].get<std::int64_t>();
  } else if (auto b = rec.params.find("batch_size"); b != rec.params.end() && b->is_number_integer()) {
    samples = b->get<std::int64_t>();
  }
  in.samples_per_step = static_cast<std::uint32_t>(std::clamp<std::int64_t>(samples, 1, UINT32_MAX));
  in.idle_series = std::move(idle_series);
  monitor::CellAnalysis analysis = monitor::AnalyzeCell(in);
  rec.series = std::move(in.series);
  rec.steps = std::move(in.steps);
  for (const auto& m : analysis.metrics) record::SetMetric(rec, m.name, m.value);
  for (const auto& r : analysis.verdict_reasons) rec.verdict_reasons.push_back(r);
  for (const auto& w : analysis.warnings) rec.extras["warnings"].push_back(w);
  for (const auto& [k, v] : analysis.info.items()) rec.extras["monitor"][k] = v;
}

}  // namespace

CellMonitoring::CellMonitoring(monitor::Monitor* monitor, pid_t pid,
                               std::vector<monitor::GpuProcess> gpu_before)
    : monitor_(monitor), gpu_before_(std::move(gpu_before)) {
  if (monitor_ == nullptr) return;
  // Which other processes ran meanwhile: two snapshots of /proc around the cell (a few ms each).
  before_ = monitor::SnapshotProcesses(monitor::RealProcFs());
  monitor_->Start(pid);
}

void CellMonitoring::Finish(record::CellRecord& rec, const nlohmann::json& effective) {
  if (monitor_ == nullptr) return;
  rec.series = monitor_->Stop();
  const auto busiest = monitor::BusiestOthers(before_, monitor::SnapshotProcesses(monitor::RealProcFs()),
                                              ::getpid(), ::sysconf(_SC_CLK_TCK), 3, 0.1);
  if (!busiest.empty()) rec.extras["monitor"]["busiest_elsewhere"] = monitor::DescribeBusiest(busiest);
  // Only the cell's own GPUs count towards its utilisation, power and energy.
  const nlohmann::json description = monitor_->Describe();
  if (description.contains("nvml") && description["nvml"].value("state", std::string()) == "ok") {
    const monitor::GpuAttribution gpus = monitor::AttributeGpus(effective, description);
    if (gpus.nvml_indices) monitor::KeepGpuSeries(rec.series, *gpus.nvml_indices);
    rec.extras["monitor"]["gpu_attribution"] = gpus.note;
    const auto device = rec.params.find("device");
    const bool on_cuda =
        device != rec.params.end() && device->is_string() && device->get<std::string>().rfind("cuda", 0) == 0;
    for (const std::string& w : monitor::OtherGpuProcessWarnings(gpu_before_, gpus.nvml_indices, on_cuda))
      rec.extras["warnings"].push_back(w);
  }
}

std::int64_t Ns(double seconds) {
  return static_cast<std::int64_t>(std::clamp(seconds, 0.0, 1e9) * 1e9);  // 1e9 s: beyond any cell
}

Result<Spawned> SpawnRunner(const RunnerCommand& runner, bool with_logs) {
  std::vector<std::pair<int, int>> ours;  // {read, write} of each pipe made so far
  auto fail = [&](const Error& e) -> Error {
    for (auto& [r, w] : ours) {
      ::close(r);
      ::close(w);
    }
    return e;
  };
  for (int i = 0; i < (with_logs ? 4 : 2); ++i) {
    auto pipe = MakePipe();
    if (!pipe.ok()) return fail(pipe.error());
    ours.push_back(*pipe);
  }
  SpawnOptions opts;
  opts.argv = runner.argv;
  opts.fd_map = {{kChildFdIn, ours[0].first}, {kChildFdOut, ours[1].second}};
  if (with_logs) {
    opts.fd_map.push_back({STDOUT_FILENO, ours[2].second});
    opts.fd_map.push_back({STDERR_FILENO, ours[3].second});
  } else {
    opts.stdout_path = "/dev/null";
  }
  opts.unset_env = LauncherVariables();
  opts.die_with_parent = true;  // a runner whose dlbench was killed has no one to report to
  opts.core_dump = runner.core_dumps;
  opts.extra_env = runner.env;
  opts.extra_env.emplace_back(protocol::kFdInEnv, std::to_string(kChildFdIn));
  opts.extra_env.emplace_back(protocol::kFdOutEnv, std::to_string(kChildFdOut));
  auto process = Subprocess::Spawn(opts);
  if (!process.ok()) return fail(process.error());
  Spawned s{std::move(process).value(), ours[0].second, ours[1].first, -1, -1};
  ::close(ours[0].first);
  ::close(ours[1].second);
  if (with_logs) {
    s.stdout_fd = ours[2].first;
    s.stderr_fd = ours[3].first;
    ::close(ours[2].second);
    ::close(ours[3].second);
  }
  return s;
}

void CellDriver::Signal(SignalLevel level, const char* why) {
  if (exited_ || level <= signalled_) return;
  if (signalled_ == SignalLevel::kNone) signal_reason_ = why;
  signalled_ = level;
  if (level == SignalLevel::kTerm) term_ns_ = MonotonicNowNs();
  s_.process.SignalGroup(level == SignalLevel::kTerm ? SIGTERM : SIGKILL);
}

void CellDriver::Send(const std::string& bytes) {
  if (bytes.empty() || commands_closed_) return;
  outbox_ += bytes;
  FlushOutbox();
}

void CellDriver::FlushOutbox() {
  while (!outbox_.empty() && !commands_closed_ && s_.to_runner >= 0) {
    const ssize_t n = ::write(s_.to_runner, outbox_.data(), outbox_.size());
    if (n > 0) {
      outbox_.erase(0, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;  // the pipe is full: poll for POLLOUT
    // EPIPE (SIGPIPE is ignored) or another error: the runner is gone or no longer listens. What
    // happened is decided from its exit and the conversation, as for any runner.
    commands_closed_ = true;
    outbox_.clear();
  }
}

void CellDriver::HandleFrames() {
  for (;;) {
    if (conv_.ending() == orchestrator::Ending::kViolation) return;
    auto frame = s_.reader.Next();
    if (!frame.ok()) {
      conv_.OnStreamError(frame.error().message);
      return;
    }
    if (!frame->has_value()) return;
    const FrameResult result = conv_.OnFrame(**frame, MonotonicNowNs());
    Send(result.reply);
  }
}

void CellDriver::ReadProtocol(bool drain) {
  std::size_t read = 0;
  while (s_.from_runner >= 0 && conv_.ending() != orchestrator::Ending::kViolation) {
    char buf[kReadChunk];
    const ssize_t n = ::read(s_.from_runner, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // EAGAIN: nothing more now
    if (n == 0) {
      protocol_eof_ = true;
      protocol_eof_ns_ = MonotonicNowNs();
      CloseFd(s_.from_runner);
      return;
    }
    s_.reader.Feed(buf, static_cast<std::size_t>(n));
    HandleFrames();
    read += static_cast<std::size_t>(n);
    if (!drain || read >= kDrainLimitBytes) return;
  }
}

void CellDriver::ReadLog(int& fd, CappedLog& log, bool drain) {
  std::size_t read = 0;
  while (fd >= 0) {
    char buf[kReadChunk];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;
    if (n == 0) {
      CloseFd(fd);
      return;
    }
    log.Append(buf, static_cast<std::size_t>(n));
    read += static_cast<std::size_t>(n);
    if (!drain || read >= kDrainLimitBytes) return;
  }
}

void CellDriver::CheckClocks(std::int64_t now) {
  // Ctrl-C: STOP, SIGTERM halfway through the grace, SIGKILL at its end; a second one at once.
  const int pressed = o_.interrupts != nullptr ? o_.interrupts->load() : 0;
  if (pressed > 0 && interrupts_seen_ == 0) {
    interrupt_ns_ = now;
    Send(conv_.RequestStop("interrupted", now));
  }
  if (pressed >= 2 && interrupts_seen_ < 2) Signal(SignalLevel::kKill, "a second Ctrl-C");
  interrupts_seen_ = pressed;
  if (interrupt_ns_ > 0) {
    const std::int64_t grace = Ns(o_.interrupt_grace_s);
    if (now >= interrupt_ns_ + grace / 2) Signal(SignalLevel::kTerm, "Ctrl-C");
    if (now >= interrupt_ns_ + grace) Signal(SignalLevel::kKill, "Ctrl-C");
    return;
  }
  // A violation ends the cell now: nothing the runner says next can be trusted.
  if (conv_.ending() == orchestrator::Ending::kViolation) {
    Signal(SignalLevel::kKill, "a protocol violation");
    return;
  }
  const bool concluded = conv_.state() == ConversationState::kDone;
  if (concluded && concluded_ns_ == 0) concluded_ns_ = now;
  // The runner has said all it will say: it must now exit. After DONE or ERROR it has the whole
  // exit grace; after closing its pipe without either, no more than its timeout leaves.
  if (concluded || protocol_eof_) {
    const std::int64_t since = concluded ? concluded_ns_ : protocol_eof_ns_;
    std::int64_t due = since + Ns(o_.exit_grace_s);
    if (!concluded) due = std::min(due, std::max(deadline_ns_, since));
    if (now >= due && !exit_overdue_) {
      exit_overdue_ = true;
      overdue_after_s_ = NsToSeconds(now - since);
      Signal(SignalLevel::kTerm, "not exiting");
    }
    if (signalled_ == SignalLevel::kTerm && now >= term_ns_ + kNsPerS)
      Signal(SignalLevel::kKill, "not exiting");
    return;
  }
  if (now >= deadline_ns_) {
    timed_out_ = true;
    Signal(SignalLevel::kKill, "the timeout");
    return;
  }
  if (conv_.stop_sent()) {
    // A step in flight must be allowed to finish: at least stop_grace_s, or 3 of the longest steps.
    const std::int64_t grace = std::max(Ns(o_.stop_grace_s), 3 * conv_.max_step_ns());
    if (now >= conv_.stop_sent_ns() + grace) {
      stop_timed_out_ = true;
      Signal(SignalLevel::kKill, "no DONE after STOP");
    }
  }
}

CellDriver::CellDriver(const plan::Cell& cell, const CellRunOptions& o, record::CellRecord& rec, Spawned& s,
                       DriverRole role)
    : o_(o),
      rec_(rec),
      s_(s),
      role_(std::move(role)),
      conv_(cell,
            ConversationSettings{o.measure, o.timeout_s, o.limits, role_.rank, role_.rendezvous,
                                 o.offer_reuse, o.attempt},
            rec),
      stdout_log_(rec.stdout_path, o.log_head_bytes, o.log_tail_bytes),
      stderr_log_(rec.stderr_path, o.log_head_bytes, o.log_tail_bytes) {}

Status CellDriver::OpenLogs() {
  DLBENCH_RETURN_IF_ERROR(stdout_log_.Open());
  return stderr_log_.Open();
}

void CellDriver::RequestStop(const std::string& reason) { Send(conv_.RequestStop(reason, MonotonicNowNs())); }

void CellDriver::Abort(const char* why) { Signal(SignalLevel::kKill, why); }

void CellDriver::Drive() {
  Start();
  while (!Poll(100)) {
  }
  Finish(/*kill_leftovers=*/true);
}

void CellDriver::Start() {
  Subprocess& process = s_.process;
  spawn_ns_ = MonotonicNowNs();
  conv_.timeline().spawn_ns = spawn_ns_;
  deadline_ns_ = spawn_ns_ + Ns(o_.timeout_s);
  pid_fd_ = OpenPidFd(process.pid());
  for (int fd : {s_.from_runner, s_.stdout_fd, s_.stderr_fd, s_.to_runner}) SetNonBlocking(fd);
  last_progress_ns_ = spawn_ns_;
  // A process that served an earlier cell gets this cell's CONFIGURE now: its HELLO came long ago.
  if (s_.cells_served > 0) Send(conv_.Resume(s_.hello, spawn_ns_).reply);
}

bool CellDriver::MaybeRelease() {
  if (released_) return true;
  if (!conv_.serve_more() || conv_.state() != ConversationState::kDone) return false;
  const bool usable_oom = o_.keep_after_usable_oom && conv_.ending() == orchestrator::Ending::kError &&
                          conv_.error() && conv_.error()->kind == record::RunnerErrorKind::kOom &&
                          conv_.error()->details.value("process_usable", false);
  const bool clean = (conv_.ending() == orchestrator::Ending::kDone || usable_oom) &&
                     signalled_ == SignalLevel::kNone && interrupt_ns_ == 0 && !commands_closed_ &&
                     !protocol_eof_ && s_.to_runner >= 0;
  if (clean) {
    released_ = true;
    return true;
  }
  // Not kept: the end of its command pipe, where it waits for the next CONFIGURE, makes it exit.
  CloseFd(s_.to_runner);
  commands_closed_ = true;
  outbox_.clear();
  return false;
}

bool CellDriver::Poll(int max_wait_ms) {
  if (exited_ || released_) return true;
  if (auto status = s_.process.TryWait()) {
    exited_ = true;
    status_ = *status;
    return true;
  }
  if (MaybeRelease()) return true;
  const std::int64_t now = MonotonicNowNs();
  CheckClocks(now);
  if (o_.on_progress && role_.rank == 0 && now - last_progress_ns_ >= kNsPerS) {
    last_progress_ns_ = now;
    // A load cell's progress counts its queries.
    const std::int64_t records =
        conv_.load() != nullptr ? conv_.load()->record_count() : conv_.policy().steps_seen();
    o_.on_progress(CellProgress{records, NsToSeconds(now - spawn_ns_), conv_.state()});
  }

  pollfd fds[5];
  int n = 0;
  const bool read_protocol = s_.from_runner >= 0 && conv_.ending() != orchestrator::Ending::kViolation;
  const int i_protocol = read_protocol ? n : -1;
  if (read_protocol) fds[n++] = {s_.from_runner, POLLIN, 0};
  const int i_out = s_.stdout_fd >= 0 ? n : -1;
  if (s_.stdout_fd >= 0) fds[n++] = {s_.stdout_fd, POLLIN, 0};
  const int i_err = s_.stderr_fd >= 0 ? n : -1;
  if (s_.stderr_fd >= 0) fds[n++] = {s_.stderr_fd, POLLIN, 0};
  const int i_cmd = !outbox_.empty() && !commands_closed_ ? n : -1;
  if (i_cmd >= 0) fds[n++] = {s_.to_runner, POLLOUT, 0};
  if (pid_fd_ >= 0) fds[n++] = {pid_fd_, POLLIN, 0};
  // Without a pidfd the exit is noticed by the next TryWait, so the wait stays short.
  const int wait_ms = std::min(max_wait_ms, pid_fd_ >= 0 ? 100 : 10);
  const int ready = ::poll(fds, static_cast<nfds_t>(n), wait_ms);
  if (ready <= 0) return false;  // timeout or EINTR (Ctrl-C): the next call checks the clocks
  auto fired = [&](int i) {
    return i >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR | POLLOUT)) != 0;
  };
  if (fired(i_protocol)) ReadProtocol(/*drain=*/false);
  if (fired(i_out)) ReadLog(s_.stdout_fd, stdout_log_, false);
  if (fired(i_err)) ReadLog(s_.stderr_fd, stderr_log_, false);
  if (fired(i_cmd)) FlushOutbox();
  return MaybeRelease();
}

void CellDriver::Finish(bool kill_leftovers) {
  conv_.timeline().exit_ns = MonotonicNowNs();
  if (released_) {
    // The process goes on to the next cell: what it wrote so far is this cell's log; its pipes stay.
    ReadLog(s_.stdout_fd, stdout_log_, true);
    ReadLog(s_.stderr_fd, stderr_log_, true);
    CloseFd(pid_fd_);
    stdout_log_.Close();
    stderr_log_.Close();
    return;
  }
  // What the runner wrote before it exited is all in the pipes now; a child of it may still hold
  // them open, so read what is there without waiting for their end.
  ReadProtocol(/*drain=*/true);
  ReadLog(s_.stdout_fd, stdout_log_, true);
  ReadLog(s_.stderr_fd, stderr_log_, true);
  CloseFd(s_.to_runner);
  CloseFd(s_.from_runner);
  CloseFd(s_.stdout_fd);
  CloseFd(s_.stderr_fd);
  CloseFd(pid_fd_);
  // The runner's children (if any) must not outlive the cell.
  if (kill_leftovers) leftovers_ = KillLeftovers(s_.process.pid(), 2000);
  stdout_log_.Close();
  stderr_log_.Close();
}

std::string CellDriver::WithTail(std::string message) const {
  const std::string tail = stderr_log_.LastLines(kStderrTailLines);
  if (!tail.empty()) message += "\n--- last lines of stderr (" + rec_.stderr_path + ") ---\n" + tail;
  return message;
}

void CellDriver::Conclude(std::vector<record::SeriesPoint> idle_series) {
  auto finish = [&](record::Outcome outcome, const std::string& message) {
    rec_.outcome = outcome;
    rec_.message = message;
    rec_.finished_wall_ns = WallNowNs();
  };
  for (const CappedLog* log : {&stdout_log_, &stderr_log_}) {
    const char* stream = log == &stdout_log_ ? "stdout" : "stderr";
    nlohmann::json facts = {{"path", log->path()}, {"bytes", log->total_bytes()}};
    if (log->dropped_bytes() > 0) facts["dropped_bytes"] = log->dropped_bytes();
    if (log->write_error()) {
      facts["error"] = *log->write_error();
      rec_.extras["warnings"].push_back(
          fmt::format("the runner's {} could not be logged to {}: {}; the rest was dropped", stream,
                      log->path(), *log->write_error()));
    }
    rec_.extras["logs"][stream] = facts;
  }
  if (leftovers_ > 0) {
    rec_.extras["warnings"].push_back(
        fmt::format("killed {} process{} the runner left running", leftovers_, leftovers_ == 1 ? "" : "es"));
  }

  const measure::MeasurePolicy& policy = conv_.policy();
  const std::string stop_reason =
      conv_.stop_decision().value_or(conv_.done_reason().empty() ? "runner_exit" : conv_.done_reason());
  const measure::Outcome measured = policy.Finish(stop_reason);
  std::optional<LoadConclusion> load;
  if (conv_.load() != nullptr) {
    load = ConcludeLoad(*conv_.load(), conv_.done_steps(), stop_reason, conv_.done_reason(), rec_);
  }
  const bool measures = role_.rank == 0;
  if (measures && !rec_.steps.empty()) {
    rec_.warmup_rule = measured.warmup_rule;
    rec_.stop_reason = measured.stop_reason;
    AddStepMetrics(measured, rec_);
    AddTimelineMetrics(conv_.timeline(), measured.warmup_steps, rec_);
    if (conv_.virtual_time()) {
      // The steps are on a virtual clock that runs ahead of the samples' real one: the samples
      // cover a few real milliseconds of a window that claims minutes, so no figure from them
      // would mean anything.
      rec_.extras["monitor"]["analysis"] = "skipped: the runner reported virtual step times (virtual_time)";
    } else if (!rec_.series.empty()) {
      AddMonitorAnalysis(std::move(idle_series), rec_);
    }
  }

  const bool by_us = signalled_ != SignalLevel::kNone;
  if (interrupt_ns_ > 0) {
    // A cell that the policy had finished measuring and that ended by itself is complete.
    const bool complete = conv_.stop_decision() && conv_.done_seen() && (exited_ || released_) && !by_us &&
                          status_.success() && measured.enough_data;
    if (!complete) {
      return finish(record::Outcome::kInterrupted,
                    interrupts_seen_ >= 2
                        ? "stopped by a second Ctrl-C (its process group was killed at once)"
                        : "stopped by Ctrl-C");
    }
  }
  if (conv_.violation())
    return finish(record::Outcome::kInvalid, "protocol violation: " + *conv_.violation());
  if (timed_out_) {
    return finish(
        record::Outcome::kTimeout,
        WithTail(fmt::format("no result within timeout_s={:g}; killed its process group", o_.timeout_s)));
  }
  if (stop_timed_out_) {
    return finish(
        record::Outcome::kTimeout,
        WithTail("the runner did not stop within the grace period after STOP; killed its process group"));
  }
  if (conv_.error()) {
    const RunnerError& e = *conv_.error();
    std::string message = e.message;
    if (e.kind == record::RunnerErrorKind::kOom && e.details.contains("requested_bytes")) {
      rec_.extras["oom_requested_bytes"] = e.details["requested_bytes"];
    }
    if (e.kind == record::RunnerErrorKind::kOom) message += MemoryCapNote(rec_);
    if (e.kind == record::RunnerErrorKind::kInvalid) message = "invalid configuration: " + message;
    if (e.kind == record::RunnerErrorKind::kInternal) message = WithTail("runner error: " + message);
    return finish(record::OutcomeOf(e.kind), message);
  }
  if (exit_overdue_ && !conv_.done_seen()) {
    // The runner's death here is ours: it is never recorded as the runner's crash.
    return finish(
        record::Outcome::kInvalid,
        WithTail(fmt::format("the runner closed its protocol pipe without sending DONE and was still "
                             "running {:.1f} s later; dlbench ended its process group",
                             overdue_after_s_)));
  }
  if (exit_overdue_) {
    rec_.extras["warnings"].push_back(
        fmt::format("the runner sent {} but had not exited {:.1f} s later; dlbench ended its process group",
                    conv_.error() ? "ERROR" : "DONE", overdue_after_s_));
  } else {
    if (status_.signaled) {
      if (const std::optional<std::string> oom = CrashTakenAsOom(rec_, status_.signal))
        return finish(record::Outcome::kOom, WithTail(*oom));
      return finish(record::Outcome::kCrashed, WithTail("runner " + status_.Describe()));
    }
    if (status_.code != 0) {
      return finish(record::Outcome::kError, WithTail("runner ended with " + status_.Describe()));
    }
  }
  if (!conv_.done_seen()) {
    // A pipe that closed well before the exit was closed by the runner, not by its exit.
    const std::int64_t early_ns = protocol_eof_ ? conv_.timeline().exit_ns - protocol_eof_ns_ : 0;
    std::string what = "runner exited without sending DONE";
    if (early_ns > 100'000'000) {
      what +=
          fmt::format("; it had closed its protocol pipe {:.1f} s before it exited", NsToSeconds(early_ns));
    }
    return finish(record::Outcome::kInvalid, WithTail(what));
  }
  if (!measures) return finish(record::Outcome::kOk, "");
  if (load) {
    if (load->invalid) return finish(record::Outcome::kInvalid, *load->invalid);
    rec_.verdict_reasons = load->reasons;
    rec_.verdict = record::HeadlineVerdict(load->reasons);
    return finish(record::Outcome::kOk, "");
  }
  if (!measured.enough_data)
    return finish(record::Outcome::kInvalid, "too little data: " + measured.insufficiency);
  if (o_.measure.whole_run) {
    AbsorbConvergeCurves(rec_);
    ApplyConvergeVerdict(rec_);
  } else {
    ApplyVerdict(measured, o_.measure, rec_);
  }
  finish(record::Outcome::kOk, "");
}

}  // namespace dlbench::orchestrator
