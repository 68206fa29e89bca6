#include "orchestrator/cell_runner.h"

#include <fmt/core.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include "common/clock.h"
#include "common/files.h"
#include "common/subprocess.h"
#include "measure/policy.h"
#include "monitor/analysis.h"
#include "monitor/gpu_attribution.h"
#include "orchestrator/cell_metrics.h"
#include "protocol/runner_session.h"
#include "protocol/wire.h"

namespace dlbench::orchestrator {

namespace {

using protocol::Frame;
using protocol::MessageType;

constexpr int kChildFdOut = 3;  // the runner writes its messages here
constexpr int kChildFdIn = 4;   // the runner reads commands here
constexpr int kStderrTailLines = 15;

bool IsExecutable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

// Closes an fd once; -1 means already closed.
void CloseFd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

// Everything one protocol conversation learns, filled as frames arrive.
struct Conversation {
  bool hello_seen = false;
  bool ready_seen = false;
  bool stop_sent = false;
  bool done_seen = false;
  std::string done_reason;
  std::optional<std::string> violation;
  std::optional<record::RunnerErrorKind> error_kind;
  std::string error_message;
  nlohmann::json error_details = nlohmann::json::object();
  std::optional<std::string> stop_decision;
  std::int64_t max_step_ns = 0;
  CellTimeline timeline;
};

// Energy, utilisation, throttling and leak verdicts from the sampled series over the measured
// window (monitor/analysis.h).
void AddMonitorAnalysis(std::vector<record::SeriesPoint> idle_series, record::CellRecord& rec) {
  monitor::AnalysisInput in;
  in.series = std::move(rec.series);
  in.steps = std::move(rec.steps);
  in.window = rec.window.value_or(record::MeasuredWindow{});
  in.scenario = rec.params.value("scenario", std::string("train")) == "infer" ? monitor::Scenario::kInfer
                                                                              : monitor::Scenario::kTrain;
  const std::int64_t samples = rec.effective.value("samples_per_step", rec.params.value("batch_size", 1));
  in.samples_per_step = static_cast<std::uint32_t>(std::max<std::int64_t>(samples, 1));
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

namespace {

struct Spawned {
  Subprocess process;
  int to_runner = -1;    // we write commands here
  int from_runner = -1;  // we read messages here
};

Result<Spawned> SpawnRunner(const RunnerCommand& runner, const std::string& stdout_path,
                            const std::string& stderr_path) {
  auto to_runner = MakePipe();
  if (!to_runner.ok()) return to_runner.error();
  auto from_runner = MakePipe();
  if (!from_runner.ok()) {
    ::close(to_runner->first);
    ::close(to_runner->second);
    return from_runner.error();
  }
  SpawnOptions opts;
  opts.argv = runner.argv;
  opts.stdout_path = stdout_path;
  opts.stderr_path = stderr_path;
  opts.fd_map = {{kChildFdIn, to_runner->first}, {kChildFdOut, from_runner->second}};
  opts.extra_env = {{protocol::kFdInEnv, std::to_string(kChildFdIn)},
                    {protocol::kFdOutEnv, std::to_string(kChildFdOut)}};
  auto process = Subprocess::Spawn(opts);
  ::close(to_runner->first);
  ::close(from_runner->second);
  if (!process.ok()) {
    ::close(to_runner->second);
    ::close(from_runner->first);
    return process.error();
  }
  Spawned s{std::move(process).value(), to_runner->second, from_runner->first};
  return s;
}

}  // namespace

Result<nlohmann::json> ProbeRunner(const RunnerCommand& runner, double timeout_s) {
  auto spawned = SpawnRunner(runner, "/dev/null", "");
  if (!spawned.ok()) return spawned.error();
  protocol::FrameReader reader;
  const std::int64_t deadline = MonotonicNowNs() + SecondsToNs(timeout_s);
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
  if (!hello) {
    return MakeError(ErrorKind::kIo,
                     "runner " + runner.argv.front() + " did not introduce itself: " + problem);
  }
  return *hello;
}

record::CellRecord RunCell(const plan::Cell& cell, const CellRunOptions& o) {
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
  const std::string base = fmt::format("{}/cell-{:04d}", o.log_dir, cell.index);
  rec.stdout_path = base + ".stdout.log";
  rec.stderr_path = base + ".stderr.log";
  rec.verdict = record::Verdict::kNotApplicable;
  auto finish = [&](record::Outcome outcome, const std::string& message) {
    rec.outcome = outcome;
    rec.message = message;
    rec.finished_wall_ns = WallNowNs();
    return rec;
  };

  // Idle baseline: the machine sampled with no runner, so energy can be reported above idle.
  std::vector<record::SeriesPoint> idle_series;
  if (o.monitor != nullptr && o.measure.idle_baseline_s && *o.measure.idle_baseline_s > 0) {
    o.monitor->Start(0);
    usleep(static_cast<useconds_t>(*o.measure.idle_baseline_s * 1e6));
    idle_series = o.monitor->Stop();
  }

  auto spawned = SpawnRunner(o.runner, rec.stdout_path, rec.stderr_path);
  if (!spawned.ok()) return finish(record::Outcome::kError, spawned.error().message);
  Subprocess& process = spawned->process;
  const std::int64_t spawn_ns = MonotonicNowNs();
  const std::int64_t deadline_ns = spawn_ns + SecondsToNs(o.timeout_s);
  if (o.monitor != nullptr) o.monitor->Start(process.pid());

  measure::MeasurePolicy policy(o.measure);
  protocol::FrameReader reader;
  Conversation conv;
  conv.timeline.spawn_ns = spawn_ns;
  bool timed_out = false;
  bool interrupted = false;
  bool eof = false;
  std::int64_t stop_deadline_ns = 0;
  std::int64_t last_progress_ns = spawn_ns;

  auto send = [&](MessageType type, const nlohmann::json& body) {
    std::string bytes;
    protocol::AppendJsonFrame(bytes, type, body);
    // A runner that has gone shows up as EOF on the other pipe; a failed write needs no action.
    (void)protocol::WriteAll(spawned->to_runner, bytes);
  };
  auto send_stop = [&](const std::string& why) {
    if (conv.stop_sent) return;
    conv.stop_sent = true;
    send(MessageType::kStop, {{"reason", why}});
    // A step in flight must be allowed to finish: at least 10 s, or 3 of the longest steps.
    stop_deadline_ns = MonotonicNowNs() + std::max<std::int64_t>(10'000'000'000LL, 3 * conv.max_step_ns);
  };

  auto handle = [&](const Frame& f) {
    if (!conv.hello_seen && f.type != MessageType::kHello) {
      conv.violation = std::string("first message was ") + protocol::MessageTypeName(f.type) + ", not HELLO";
      return;
    }
    switch (f.type) {
      case MessageType::kHello: {
        auto body = protocol::DecodeJson(f);
        if (!body.ok()) {
          conv.violation = body.error().message;
          return;
        }
        if (conv.hello_seen) {
          conv.violation = "HELLO sent twice";
          return;
        }
        conv.timeline.hello_ns = MonotonicNowNs();
        conv.hello_seen = true;
        rec.hello = *body;
        const int version = rec.hello.value("protocol", 0);
        if (version != protocol::kProtocolVersion) {
          conv.violation = fmt::format("runner speaks protocol {}, dlbench speaks {}", version,
                                       protocol::kProtocolVersion);
          return;
        }
        protocol::CellConfig cfg;
        cfg.params = rec.params;
        cfg.seed = cell.seed;
        cfg.cell_key = cell.key;
        cfg.world_size = rec.params.value("world_size", 1);
        // The runner's own ceilings sit past ours so that our STOP, not its ceiling, ends a
        // healthy cell; they only matter when we are gone.
        cfg.limits.max_steps = o.measure.max_steps + std::max<std::int64_t>(1000, o.measure.max_steps / 10);
        cfg.limits.max_time_s = std::max(o.measure.max_time_s * 2 + 10, o.timeout_s);
        send(MessageType::kConfigure, protocol::ConfigureToJson(cfg));
        return;
      }
      case MessageType::kReady: {
        auto body = protocol::DecodeJson(f);
        if (!body.ok()) {
          conv.violation = body.error().message;
          return;
        }
        conv.ready_seen = true;
        conv.timeline.ready_ns = MonotonicNowNs();
        rec.effective = body->value("effective", nlohmann::json::object());
        return;
      }
      case MessageType::kSteps: {
        auto batch = protocol::DecodeSteps(f);
        if (!batch.ok()) {
          conv.violation = batch.error().message;
          return;
        }
        if (!conv.ready_seen) {
          conv.violation = "STEPS before READY";
          return;
        }
        for (const auto& r : batch->records) {
          rec.steps.push_back({batch->rank, r});
          conv.max_step_ns = std::max(conv.max_step_ns, r.end_ns - r.start_ns);
        }
        if (batch->rank == 0) {
          policy.Add(batch->records.data(), batch->records.size());
          if (!conv.stop_sent) {
            auto decision = policy.Evaluate();
            if (decision.stop) {
              conv.stop_decision = decision.reason;
              send_stop(decision.reason);
            }
          }
        }
        return;
      }
      case MessageType::kMemory: {
        auto body = protocol::DecodeJson(f);
        if (!body.ok()) {
          conv.violation = body.error().message;
          return;
        }
        rec.extras["memory"].push_back(*body);
        return;
      }
      case MessageType::kExtras: {
        auto body = protocol::DecodeJson(f);
        if (!body.ok()) {
          conv.violation = body.error().message;
          return;
        }
        AbsorbExtras(*body, rec);
        return;
      }
      case MessageType::kError: {
        auto body = protocol::DecodeJson(f);
        if (!body.ok()) {
          conv.violation = body.error().message;
          return;
        }
        const std::string kind =
            body->value("kind", std::string(record::Name(record::RunnerErrorKind::kInternal)));
        conv.error_kind = record::ParseRunnerErrorKind(kind).value_or(record::RunnerErrorKind::kInternal);
        conv.error_message = body->value("message", std::string("(no message)"));
        conv.error_details = *body;
        return;
      }
      case MessageType::kDone: {
        auto body = protocol::DecodeJson(f);
        if (!body.ok()) {
          conv.violation = body.error().message;
          return;
        }
        conv.done_seen = true;
        conv.done_reason = body->value("reason", std::string());
        return;
      }
      case MessageType::kConfigure:
      case MessageType::kStop:
        conv.violation = std::string("runner sent ") + protocol::MessageTypeName(f.type) +
                         ", which only the orchestrator sends";
        return;
    }
  };

  while (!eof && !conv.violation) {
    const std::int64_t now = MonotonicNowNs();
    if (o.interrupted != nullptr && o.interrupted->load() && !interrupted) {
      interrupted = true;
      send_stop("interrupted");
      stop_deadline_ns = now + 2'000'000'000LL;
    }
    if (now >= deadline_ns || (conv.stop_sent && now >= stop_deadline_ns)) {
      timed_out = !interrupted;
      break;
    }
    if (o.on_progress && now - last_progress_ns >= 1'000'000'000LL) {
      last_progress_ns = now;
      o.on_progress(fmt::format("{} steps, {:.0f} s", policy.steps_seen(), NsToSeconds(now - spawn_ns)));
    }
    const std::int64_t until = conv.stop_sent ? std::min(deadline_ns, stop_deadline_ns) : deadline_ns;
    const int wait_ms = static_cast<int>(std::clamp<std::int64_t>((until - now) / 1'000'000, 1, 200));
    pollfd p{spawned->from_runner, POLLIN, 0};
    const int ready = ::poll(&p, 1, wait_ms);
    if (ready <= 0) continue;  // timeout or EINTR (Ctrl-C): loop to re-check the deadlines
    auto n = protocol::ReadInto(spawned->from_runner, reader);
    if (!n.ok() || *n == 0) {
      eof = true;
    }
    for (;;) {
      auto frame = reader.Next();
      if (!frame.ok()) {
        conv.violation = frame.error().message;
        break;
      }
      if (!frame->has_value()) break;
      handle(**frame);
      if (conv.violation) break;
    }
  }

  CloseFd(spawned->to_runner);
  CloseFd(spawned->from_runner);
  ExitStatus status;
  if (timed_out || conv.violation) {
    status = process.Terminate(0);
  } else {
    // After EOF the runner should exit promptly; a runner that lingers is ended.
    const std::int64_t exit_deadline = MonotonicNowNs() + 10'000'000'000LL;
    while (!process.TryWait() && MonotonicNowNs() < exit_deadline) usleep(2'000);
    status = process.finished() ? *process.TryWait() : process.Terminate(1000);
  }
  conv.timeline.exit_ns = MonotonicNowNs();
  // The runner's children (if any) must not outlive the cell.
  process.SignalGroup(SIGKILL);
  if (o.monitor != nullptr) {
    rec.series = o.monitor->Stop();
    // Only the cell's own GPUs count towards its utilisation, power and energy.
    const nlohmann::json description = o.monitor->Describe();
    if (description.contains("nvml") && description["nvml"].value("state", std::string()) == "ok") {
      const monitor::GpuAttribution gpus = monitor::AttributeGpus(rec.effective, description);
      if (gpus.nvml_indices) monitor::KeepGpuSeries(rec.series, *gpus.nvml_indices);
      rec.extras["monitor"]["gpu_attribution"] = gpus.note;
    }
  }

  const std::string stderr_tail = TailLines(rec.stderr_path, kStderrTailLines);
  auto with_tail = [&](std::string message) {
    if (!stderr_tail.empty())
      message += "\n--- last lines of stderr (" + rec.stderr_path + ") ---\n" + stderr_tail;
    return message;
  };

  const std::string stop_reason =
      conv.stop_decision.value_or(conv.done_reason.empty() ? "runner_exit" : conv.done_reason);
  const measure::Outcome measured = policy.Finish(stop_reason);
  if (!rec.steps.empty()) {
    rec.warmup_rule = measured.warmup_rule;
    rec.stop_reason = measured.stop_reason;
    AddStepMetrics(measured, rec);
    AddTimelineMetrics(conv.timeline, measured.warmup_steps, rec);
    if (!rec.series.empty()) AddMonitorAnalysis(std::move(idle_series), rec);
  }

  if (timed_out) {
    const std::string what = conv.stop_sent && MonotonicNowNs() < deadline_ns
                                 ? "the runner did not stop within the grace period after STOP"
                                 : fmt::format("no result within timeout_s={:g}", o.timeout_s);
    return finish(record::Outcome::kTimeout, with_tail(what + "; killed its process group"));
  }
  if (conv.violation) return finish(record::Outcome::kInvalid, "protocol violation: " + *conv.violation);
  if (conv.error_kind) {
    const record::RunnerErrorKind kind = *conv.error_kind;
    const record::Outcome outcome = record::OutcomeOf(kind);
    std::string message = conv.error_message;
    if (kind == record::RunnerErrorKind::kOom && conv.error_details.contains("requested_bytes")) {
      rec.extras["oom_requested_bytes"] = conv.error_details["requested_bytes"];
    }
    if (kind == record::RunnerErrorKind::kInvalid) message = "invalid configuration: " + message;
    if (kind == record::RunnerErrorKind::kInternal) message = with_tail("runner error: " + message);
    return finish(outcome, message);
  }
  if (interrupted) return finish(record::Outcome::kInterrupted, "stopped by Ctrl-C");
  if (status.signaled) return finish(record::Outcome::kCrashed, with_tail("runner " + status.Describe()));
  if (status.code != 0)
    return finish(record::Outcome::kError, with_tail("runner ended with " + status.Describe()));
  if (!conv.done_seen)
    return finish(record::Outcome::kInvalid, with_tail("runner exited without sending DONE"));
  if (!measured.enough_data)
    return finish(record::Outcome::kInvalid, "too little data: " + measured.insufficiency);

  ApplyVerdict(measured, o.measure, rec);
  return finish(record::Outcome::kOk, "");
}

}  // namespace dlbench::orchestrator
