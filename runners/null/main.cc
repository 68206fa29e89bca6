// dlbench-null: a runner that does no model work. Its steps take a configured time drawn from a
// configured distribution (runners/null/synthetic_steps.h), either busy-waited in real time, so the
// harness can be measured (its own overhead), or reported on a virtual clock (virtual_time: true),
// so a long cell is simulated in milliseconds and tests get exact step times. Every way a runner
// can fail is injectable on purpose (inject: runners/null/faults.h). It speaks the protocol
// exactly like the torch runner, through protocol::RunnerSession.
//
// Usage: dlbench-null [--inject FAULT [--fault-field FRAME.field]]
// The options inject a fault from the very start, before HELLO (faults of HELLO itself: no_hello,
// wrong_protocol, wrong_type with a HELLO field), since cell parameters arrive only after HELLO.
//
// This file is the serving loop: HELLO, then per CONFIGURE one cell (READY, the step loop in real
// or virtual time, EXTRAS, DONE), and the next CONFIGURE while dlbench reuses the process. A cell's
// parameters are read in cell_params.h, every fault after HELLO is injected through inject.h, and
// a cell with `load` is served by virtual_load.h (ServeLoad).
#include <errno.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/version.h"
#include "config/cuda_alloc_conf.h"
#include "config/host_allocator.h"
#include "protocol/runner_session.h"
#include "record/metrics.h"
#include "runners/null/cell_params.h"
#include "runners/null/faults.h"
#include "runners/null/inject.h"
#include "runners/null/memory_model.h"
#include "runners/null/synthetic_steps.h"
#include "runners/null/virtual_load.h"

namespace dlbench::nullrunner {
namespace {

using protocol::MessageType;
using protocol::RunnerSession;
using record::RunnerErrorKind;

// Real time draws its durations ahead of the loop, so the timed region does nothing but wait; the
// drift reads the nominal elapsed time, and the series repeats after kRealDurations steps.
constexpr std::size_t kRealDurations = 1 << 16;

std::vector<std::int64_t> DrawDurations(const synthetic::StepShape& shape, std::uint64_t seed,
                                        std::int64_t max_steps) {
  synthetic::StepTimeGenerator generator(shape, seed);
  std::vector<std::int64_t> out(static_cast<std::size_t>(
      std::clamp<std::int64_t>(max_steps, 1, static_cast<std::int64_t>(kRealDurations))));
  std::int64_t elapsed = 0;
  for (auto& d : out) {
    d = generator.NextDurationNs(elapsed);
    elapsed += d;
  }
  return out;
}

inline void BusyWaitNs(std::int64_t ns) {
  if (ns <= 0) return;
  const std::int64_t until = MonotonicNowNs() + ns;
  while (MonotonicNowNs() < until) {
  }
}

void SleepNs(std::int64_t ns) {
  if (ns <= 0) return;
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// The loop on a virtual clock: records start at the real CLOCK_MONOTONIC of READY and advance by
// the drawn durations; the loop sleeps (never spins) so that virtual time runs at most
// virtual_speedup times faster than real time, which bounds how far it runs past a STOP. The same
// ceilings as RunStepLoop, on the virtual clock.
protocol::LoopResult RunVirtualLoop(
    RunnerSession& session, const protocol::RunnerLimits& limits, synthetic::VirtualClockSteps& steps,
    double speedup, const std::function<StepAction(std::int64_t, const protocol::StepRecord&)>& on_step) {
  const std::int64_t virtual_begin = steps.now_ns();
  const std::int64_t real_begin = MonotonicNowNs();
  const std::int64_t max_time_ns = static_cast<std::int64_t>(std::min(limits.max_time_s * 1e9, 9e18));
  // Batches close on virtual time only (RunnerSession flushes by the records' end), so the frames,
  // and the policy's decisions made per frame, are the same on every run.
  session.FlushSteps(virtual_begin);
  protocol::LoopResult result;
  for (;;) {
    const protocol::StepRecord r = steps.Next();
    session.Record(r);
    ++result.steps;
    if (on_step(result.steps, r) == StepAction::kEndLoop) {
      result.end = protocol::LoopEnd::kStepFailed;
      break;
    }
    if (session.stop_requested()) {
      result.end = protocol::LoopEnd::kStopped;
      break;
    }
    if (result.steps >= limits.max_steps) {
      result.end = protocol::LoopEnd::kMaxSteps;
      break;
    }
    if (r.end_ns - virtual_begin >= max_time_ns) {
      result.end = protocol::LoopEnd::kMaxTime;
      break;
    }
    const std::int64_t ahead =
        real_begin + static_cast<std::int64_t>(static_cast<double>(r.end_ns - virtual_begin) / speedup) -
        MonotonicNowNs();
    if (ahead > 200'000) SleepNs(ahead);
  }
  session.FlushSteps(steps.now_ns());
  return result;
}

struct Options {
  std::optional<Fault> inject;
  std::string fault_field;
};

// Parses argv; nullopt (with a message on stderr) on anything unknown.
std::optional<Options> ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--inject" || arg == "--fault-field") && i + 1 < argc) {
      const std::string value = argv[++i];
      if (arg == "--fault-field") {
        o.fault_field = value;
        continue;
      }
      o.inject = ParseFault(value);
      if (!o.inject) {
        std::fprintf(stderr, "dlbench-null: unknown --inject '%s' (%s)\n", value.c_str(),
                     FaultNames().c_str());
        return std::nullopt;
      }
      continue;
    }
    std::fprintf(stderr, "usage: dlbench-null [--inject FAULT [--fault-field FRAME.field]]\n");
    return std::nullopt;
  }
  return o;
}

// One cell, from its CONFIGURE to its DONE (or the fault it injects). `serve_more` is set when it
// ended without an injected fault that must end the process, so the process may serve the next
// cell: a runner that said multi_cell must not exit after a DONE that dlbench may keep it after.
int ServeCell(RunnerSession& session, const protocol::CellConfig* cell, const Options* options,
              const Params& early, const nlohmann::json& hello, bool& serve_more) {
  session.set_rank(static_cast<std::uint32_t>(cell->rank));
  Params p;
  std::string error;
  if (!ParseParams(cell->params, p, error) || !ParseShapeAndFaultParams(cell->params, p, error)) {
    (void)session.SendError(RunnerErrorKind::kInvalid, error);
    return 0;
  }
  if (options->inject) {
    p.inject = early.inject;
    if (!early.fault_field.empty()) p.fault_field = early.fault_field;
  }
  if (p.inject_rank && *p.inject_rank != cell->rank) p.inject = Fault::kNone;
  synthetic::StepShape shape = ShapeOf(p);
  if (p.shift_attempts && cell->attempt > *p.shift_attempts) shape.shift_at_step.reset();
  if (auto st = synthetic::ValidateShape(shape); !st.ok()) {
    (void)session.SendError(RunnerErrorKind::kInvalid, st.error().message);
    return 0;
  }
  if (p.memory_model) {
    // The model "builds" before READY, as a real model's first allocations happen in setup.
    const synthetic::InputShape input{p.batch_size, p.seq_len, p.image_size};
    if (const auto oom = synthetic::ModelledOom(*p.memory_model, input, p.memory_cap_bytes)) {
      // Nothing was allocated: the process can serve the next cell (process_usable).
      (void)session.SendError(
          RunnerErrorKind::kOom, *oom,
          {{"requested_bytes", synthetic::NeededBytes(*p.memory_model, input)}, {"process_usable", true}});
      serve_more = p.inject == Fault::kNone;
      return 0;
    }
  }
  if (load::LoadRequested(cell->params)) {
    const int code = ServeLoad(session, *cell, p.inject, p.inject_at_step);
    serve_more = p.inject == Fault::kNone;
    return code;
  }
  if (p.inject == Fault::kHelloTwice) (void)session.SendHello(hello);
  BusyWaitNs(static_cast<std::int64_t>(p.setup_ms * 1e6));
  Leak leaked;
  if (p.inject == Fault::kLeak) leaked.blocks.reserve(1 << 16);
  pid_t child = 0;
  if (p.inject == Fault::kChildHoldsPipe || p.inject == Fault::kSetsidChild) {
    child = ForkLingeringChild(p.inject == Fault::kSetsidChild);
  }
  if (p.inject == Fault::kStepsBeforeReady) {
    protocol::StepRecord early_step;
    early_step.start_ns = MonotonicNowNs();
    early_step.end_ns = early_step.start_ns + 1;
    SendRawSteps(&early_step, 1);
  }

  nlohmann::json effective = cell->params;
  effective["samples_per_step"] = p.samples_per_step;
  effective["seed"] = cell->seed;
  // The orchestrator reads this to know the step times are simulated (docs/protocol.md, READY).
  if (p.virtual_time) effective["virtual_time"] = true;
  if (p.memory_model) {
    effective["memory_model_bytes"] =
        synthetic::NeededBytes(*p.memory_model, synthetic::InputShape{p.batch_size, p.seq_len, p.image_size});
  }
  // What this process's environment holds, not the parameter: the orchestrator sets it before the
  // exec from cuda_alloc_conf (docs/memory.md), and this shows it arrived.
  if (const char* conf = std::getenv(config::kCudaAllocConfEnv))
    effective[config::kCudaAllocConfEffective] = conf;
  // The allocator this process found itself running with (host_allocator; docs/memory.md).
  effective[config::kHostAllocatorEffective] = config::DetectHostAllocator();
  nlohmann::json ready = {{"effective", effective}};
  if (BreaksFrame(p, "READY")) {
    BreakField(p.fault_field, ready);
    SendRawJson(MessageType::kReady, ready);
  } else {
    (void)session.SendReady(effective);
  }
  if (p.inject == Fault::kReadyTwice) (void)session.SendReady(effective);

  const auto samples = static_cast<std::uint32_t>(shape.samples_per_step);
  std::int64_t last_end = 0;
  protocol::LoopResult result;
  auto on_step = [&](std::int64_t step, const protocol::StepRecord& last) {
    last_end = last.end_ns;
    return OnStep(p, session, step, last, leaked);
  };
  if (p.virtual_time) {
    synthetic::VirtualClockSteps steps(shape, cell->seed, MonotonicNowNs());
    result = RunVirtualLoop(session, cell->limits, steps, p.virtual_speedup, on_step);
  } else {
    const std::vector<std::int64_t> durations = DrawDurations(shape, cell->seed, cell->limits.max_steps);
    std::int64_t step = 0;
    bool end_loop = false;
    result = protocol::RunStepLoop(session, cell->limits, [&](protocol::StepRecord& r) {
      BusyWaitNs(durations[static_cast<std::size_t>(step) % durations.size()]);
      r.samples = samples;
      ++step;
      if (p.inject == Fault::kNone) return true;
      protocol::StepRecord last;  // faults that shape a record take "now" as the last step's end
      last.start_ns = MonotonicNowNs() - 1'000'000'000;
      last.end_ns = MonotonicNowNs();
      last.samples = samples;
      end_loop = on_step(step, last) == StepAction::kEndLoop;
      return !end_loop;
    });
    last_end = MonotonicNowNs();
  }
  const std::int64_t step = result.steps;

  if (result.end == protocol::LoopEnd::kStepFailed && ConcludeFault(p, session, step, last_end, leaked))
    return 0;
  if (result.end == protocol::LoopEnd::kStopped) {
    if (p.inject == Fault::kHangAfterStop) {
      Say("ignoring STOP and hanging", step);
      HangForever(true);
    }
    if (p.inject == Fault::kStepFlood) FloodSteps(last_end, samples);
  }

  nlohmann::json memory = {{std::string(record::memory::kLabel), std::string(record::memory::kEndLabel)},
                           {std::string(record::memory::kHostRssBytes), 0}};
  if (BreaksFrame(p, "MEMORY")) {
    BreakField(p.fault_field, memory);
    SendRawJson(MessageType::kMemory, memory);
  }
  nlohmann::json extras = {{"info", {{"steps_run", result.steps}, {"leaked_blocks", leaked.blocks.size()}}}};
  if (child > 0) extras["info"]["child_pid"] = child;
  if (BreaksFrame(p, "EXTRAS")) {
    extras["metrics"] = nlohmann::json::array();
    BreakField(p.fault_field, extras);
    SendRawJson(MessageType::kExtras, extras);
  } else {
    (void)session.SendExtras(extras);
  }
  if (p.inject == Fault::kExitWithoutDone) return 0;
  nlohmann::json done = {{"reason", protocol::LoopEndName(result.end)}, {"steps", result.steps}};
  if (BreaksFrame(p, "DONE")) {
    BreakField(p.fault_field, done);
    SendRawJson(MessageType::kDone, done);
    return 0;
  }
  (void)session.SendDone(protocol::LoopEndName(result.end), result.steps);
  serve_more = p.inject != Fault::kDoneTwice && p.inject != Fault::kStepsAfterDone;
  if (p.inject == Fault::kDoneTwice) (void)session.SendDone(protocol::LoopEndName(result.end), result.steps);
  if (p.inject == Fault::kStepsAfterDone) {
    protocol::StepRecord more;
    more.start_ns = last_end;
    more.end_ns = last_end + 1;
    more.samples = samples;
    SendRawSteps(&more, 1);
  }
  if (p.inject == Fault::kLateSteps || p.inject == Fault::kLateAfterConfig) {
    // A runner that says one thing too many after its DONE, once dlbench has taken the DONE (and,
    // under --runner-reuse, released the process), or later still, once dlbench has sent the next
    // cell's CONFIGURE (or closed the pipe): it then reads the next CONFIGURE as usual.
    // Without serve_more no CONFIGURE comes (the process exits after this cell): the frame goes out
    // once dlbench has read the DONE, as late_steps_after_done's.
    if (p.inject == Fault::kLateAfterConfig && cell->serve_more) {
      WaitUntilCommandArrives();
    } else {
      WaitUntilProtocolRead();
    }
    protocol::StepRecord more;
    more.start_ns = last_end;
    more.end_ns = last_end + 1;
    more.samples = samples;
    SendRawSteps(&more, 1);
  }
  return 0;
}

int Main(int argc, char** argv) {
  const std::optional<Options> options = ParseOptions(argc, argv);
  if (!options) return 2;
  auto connected = RunnerSession::Connect();
  if (!connected.ok()) {
    std::fprintf(stderr, "dlbench-null: %s\n", connected.error().message.c_str());
    return 2;
  }
  RunnerSession& session = **connected;
  Params early;  // what the options inject before the cell's parameters arrive
  if (options->inject) early.inject = *options->inject;
  early.fault_field = options->fault_field;

  nlohmann::json hello = {{"runner", "null"},
                          {"runner_version", kVersion},
                          {"framework", {{"name", "none"}}},
                          {"devices", nlohmann::json::array({{{"type", "cpu"}}})},
                          {"multi_cell", true}};  // serves several cells when CONFIGURE says serve_more
  if (early.inject == Fault::kNoHello) {
    SendRawJson(MessageType::kReady, {{"effective", nlohmann::json::object()}});
    HangForever(false);
  }
  if (early.inject == Fault::kWrongProtocol || BreaksFrame(early, "HELLO")) {
    hello["protocol"] = protocol::kProtocolVersion + 1;
    hello["pid"] = static_cast<long>(getpid());
    if (BreaksFrame(early, "HELLO")) {
      hello["protocol"] = protocol::kProtocolVersion;
      BreakField(early.fault_field, hello);
    }
    SendRawJson(MessageType::kHello, hello);
  } else {
    (void)session.SendHello(hello);
  }
  // A CONFIGURE with serve_more (docs/adr/0011-runner-reuse.md) is followed, after this cell's
  // DONE, by the next cell's CONFIGURE or by the end of the command pipe.
  for (int served = 0;; ++served) {
    if (served > 0) session.BeginNextCell();
    auto cell = session.ReceiveConfigure();
    if (!cell.ok()) {
      // EOF before CONFIGURE is how the orchestrator probes a runner's HELLO, and how it ends a
      // process that served its cells: not an error.
      if (cell.error().kind == ErrorKind::kIo) return 0;
      std::fprintf(stderr, "dlbench-null: %s\n", cell.error().message.c_str());
      return 2;
    }
    bool serve_more = false;
    const int code = ServeCell(session, &*cell, &*options, early, hello, serve_more);
    if (!serve_more || !cell->serve_more) return code;
  }
}

}  // namespace
}  // namespace dlbench::nullrunner

int main(int argc, char** argv) { return dlbench::nullrunner::Main(argc, argv); }
