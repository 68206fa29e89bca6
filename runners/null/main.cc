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
#include <errno.h>
#include <signal.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/version.h"
#include "config/cuda_alloc_conf.h"
#include "config/host_allocator.h"
#include "config/runner_params.h"
#include "protocol/runner_session.h"
#include "record/metrics.h"
#include "runners/null/faults.h"
#include "runners/null/memory_model.h"
#include "runners/null/synthetic_steps.h"
#include "runners/null/virtual_load.h"

namespace dlbench::nullrunner {
namespace {

using protocol::MessageType;
using protocol::RunnerSession;
using record::RunnerErrorKind;

struct Params {
  double step_ms = 1.0;
  double jitter_pct = 0.0;
  std::string jitter_dist = "normal";
  Fault inject = Fault::kNone;
  std::int64_t inject_at_step = 20;
  std::optional<std::int64_t> inject_rank;  // only this rank injects; absent: every rank
  std::int64_t leak_bytes_per_step = 65536;
  int exit_code = 3;
  std::int64_t samples_per_step = 1;
  double setup_ms = 0.0;
  std::int64_t warmup_steps = 0;
  double warmup_factor = 3.0;
  // Read by ParseShapeAndFaultParams.
  bool virtual_time = false;
  double virtual_speedup = 1000.0;
  double bimodal_fraction = 0.0;
  double bimodal_factor = 2.0;
  double drift_pct_per_s = 0.0;
  std::optional<std::int64_t> shift_at_step;
  double shift_factor = 1.0;
  std::optional<std::int64_t> shift_attempts;  // the shift in the first this many attempts only
  std::string fault_field;
  std::int64_t flood_bytes = std::int64_t{80} << 20;
  // The memory model: present when the cell sets either of its keys.
  std::optional<synthetic::MemoryModel> memory_model;
  std::int64_t batch_size = 1;
  std::int64_t seq_len = 0;     // 0: the cell sets none
  std::int64_t image_size = 0;  // 0: the cell sets none
  std::optional<std::int64_t> memory_cap_bytes;
};

// Reads the parameters this runner knows. The registry validates them here too (a runner must
// not trust its input) with the same specs that validated the matrix, and supplies the defaults.
bool ParseParams(const nlohmann::json& p, Params& out, std::string& error) {
  auto parsed = config::RunnerParams::Parse(p, "null");
  if (!parsed.ok()) {
    error = parsed.error().message;
    return false;
  }
  const config::RunnerParams& params = *parsed;
  const std::string inject = params.Text("inject").value();
  const std::optional<Fault> fault = ParseFault(inject);
  if (fault) out.inject = *fault;
  if (!fault) {
    // The registry allows a failure this runner cannot inject: a drift runner_params_test finds.
    error = "parameter 'inject': '" + inject + "' is not implemented by this runner";
    return false;
  }
  out.step_ms = params.Number("step_ms").value();
  out.jitter_pct = params.Number("jitter_pct").value();
  out.jitter_dist = params.Text("jitter_dist").value();
  if (out.jitter_dist != "normal" && out.jitter_dist != "uniform" && out.jitter_dist != "lognormal") {
    error = "parameter 'jitter_dist': '" + out.jitter_dist + "' is not implemented by this runner";
    return false;
  }
  out.inject_at_step = params.Int("inject_at_step").value();
  out.inject_rank = params.Int("inject_rank");
  out.leak_bytes_per_step = params.Int("leak_bytes_per_step").value();
  out.exit_code = static_cast<int>(params.Int("exit_code").value());  // 1..255
  out.samples_per_step = params.Int("samples_per_step").value();      // defaults to batch_size
  out.setup_ms = params.Number("setup_ms").value();
  out.warmup_steps = params.Int("warmup_steps").value();  // names: a parameter, not the metric
  out.warmup_factor = params.Number("warmup_factor").value();
  out.batch_size = params.Int("batch_size").value();
  if (params.Given("memory_base_bytes") || params.Given("memory_per_sample_bytes") ||
      params.Given("memory_per_token_bytes") || params.Given("memory_per_pixel_bytes")) {
    out.memory_model = synthetic::MemoryModel{
        params.Int("memory_base_bytes").value_or(0), params.Int("memory_per_sample_bytes").value_or(0),
        params.Int("memory_per_token_bytes").value_or(0), params.Int("memory_per_pixel_bytes").value_or(0)};
  }
  out.seq_len = params.Int("seq_len").value_or(0);
  out.image_size = params.Int("image_size").value_or(0);
  // The registry validated the text; ParseByteSize reads it.
  if (const std::optional<std::string> cap = params.Text("memory_cap")) {
    out.memory_cap_bytes = config::ParseByteSize(*cap);
  }
  return true;
}

// The parameters of the step-time shape beyond ParseParams', the virtual clock and the faults'
// arguments. Absent keys keep their defaults (none of them has a registry default, so cells that do
// not use them keep their keys).
bool ParseShapeAndFaultParams(const nlohmann::json& p, Params& out, std::string& error) {
  try {
    out.virtual_time = p.value("virtual_time", out.virtual_time);
    out.virtual_speedup = p.value("virtual_speedup", out.virtual_speedup);
    out.bimodal_fraction = p.value("bimodal_fraction", out.bimodal_fraction);
    out.bimodal_factor = p.value("bimodal_factor", out.bimodal_factor);
    out.drift_pct_per_s = p.value("drift_pct_per_s", out.drift_pct_per_s);
    if (p.contains("shift_at_step")) out.shift_at_step = p.at("shift_at_step").get<std::int64_t>();
    out.shift_factor = p.value("shift_factor", out.shift_factor);
    if (p.contains("shift_attempts")) out.shift_attempts = p.at("shift_attempts").get<std::int64_t>();
    out.fault_field = p.value("fault_field", out.fault_field);
    out.flood_bytes = p.value("flood_bytes", out.flood_bytes);
  } catch (const nlohmann::json::exception& e) {
    error = std::string("bad parameter type: ") + e.what();
    return false;
  }
  if (!(out.virtual_speedup > 0) || !std::isfinite(out.virtual_speedup)) {
    error = "virtual_speedup must be a finite number > 0";
    return false;
  }
  if (out.flood_bytes < 0) {
    error = "flood_bytes must be >= 0";
    return false;
  }
  if (out.inject == Fault::kWrongType) {
    const auto& fields = WrongTypeFields();
    if (std::find(fields.begin(), fields.end(), out.fault_field) == fields.end()) {
      error = "inject: wrong_type needs fault_field, one of the FRAME.field names (got '" + out.fault_field +
              "')";
      return false;
    }
  }
  return true;
}

synthetic::StepShape ShapeOf(const Params& p) {
  synthetic::StepShape s;
  s.step_ms = p.step_ms;
  s.jitter_pct = p.jitter_pct;
  s.jitter_dist = synthetic::ParseJitterDist(p.jitter_dist).value_or(synthetic::JitterDist::kNormal);
  s.warmup_steps = p.warmup_steps;
  s.warmup_factor = p.warmup_factor;
  s.bimodal_fraction = p.bimodal_fraction;
  s.bimodal_factor = p.bimodal_factor;
  s.drift_pct_per_s = p.drift_pct_per_s;
  s.shift_at_step = p.shift_at_step;
  s.shift_factor = p.shift_factor;
  s.samples_per_step = static_cast<std::uint32_t>(std::min<std::int64_t>(p.samples_per_step, UINT32_MAX));
  return s;
}

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

// The fds of the protocol, for faults that write frames the session would never write.
int OutFd() { return std::atoi(std::getenv(protocol::kFdOutEnv)); }
int InFd() { return std::atoi(std::getenv(protocol::kFdInEnv)); }

void SendRawJson(MessageType type, const nlohmann::json& body) {
  std::string bytes;
  protocol::AppendJsonFrame(bytes, type, body);
  (void)protocol::WriteAll(OutFd(), bytes);
}

void SendRawSteps(const protocol::StepRecord* records, std::size_t count) {
  std::string bytes;
  protocol::AppendStepsFrame(bytes, 0, records, count);
  (void)protocol::WriteAll(OutFd(), bytes);
}

void Say(const char* what, std::int64_t step) {
  std::fprintf(stderr, "dlbench-null: %s on purpose at step %lld\n", what, static_cast<long long>(step));
  std::fflush(stderr);
}

[[noreturn]] void HangForever(bool ignore_sigterm) {
  if (ignore_sigterm) signal(SIGTERM, SIG_IGN);  // a real hang often ignores polite requests too
  for (;;) pause();
}

// The fields a wrong_type fault breaks, frame by frame: `body` is the frame that would be sent.
void BreakField(const std::string& field, nlohmann::json& body) {
  if (field == "HELLO.protocol") body["protocol"] = "1";
  if (field == "HELLO.pid") body["pid"] = "me";
  if (field == "HELLO.runner") body["runner"] = 7;
  if (field == "HELLO.framework") body["framework"] = "none";
  if (field == "HELLO.devices") body["devices"] = {{"type", "cpu"}};
  if (field == "HELLO.multi_cell") body["multi_cell"] = "yes";
  if (field == "READY.effective") body["effective"] = {1, 2};
  if (field == "READY.samples_per_step") body["effective"]["samples_per_step"] = "8";
  if (field == "READY.device_uuids") body["effective"]["device_uuids"] = "GPU-1";
  if (field == "READY.virtual_time") body["effective"]["virtual_time"] = "yes";
  if (field == "MEMORY.label") body["label"] = 7;
  if (field == "MEMORY.bytes") body[std::string(record::memory::kHostRssBytes)] = "lots";
  if (field == "EXTRAS.metrics") body["metrics"] = "many";
  if (field == "EXTRAS.metric") body["metrics"] = {5};
  const std::string compile_time(record::metric::kCompileTimeS);
  if (field == "EXTRAS.name") body["metrics"] = {{{"name", 7}, {"value", 1.0}}};
  if (field == "EXTRAS.value") body["metrics"] = {{{"name", compile_time}, {"value", "fast"}}};
  if (field == "EXTRAS.unit") body["metrics"] = {{{"name", compile_time}, {"value", 1.0}, {"unit", 5}}};
  if (field == "EXTRAS.info") body["info"] = "x";
  if (field == "ERROR.kind") body["kind"] = 5;
  if (field == "ERROR.message") body["message"] = {"x"};
  if (field == "ERROR.requested_bytes") body["requested_bytes"] = "80G";
  if (field == "DONE.reason") body["reason"] = {"x"};
  if (field == "DONE.steps") body["steps"] = "200";
}

bool BreaksFrame(const Params& p, const char* frame) {
  return p.inject == Fault::kWrongType && p.fault_field.rfind(std::string(frame) + ".", 0) == 0;
}

// Starts a process that keeps every fd it inherited (the protocol pipes, stdout, stderr) open
// for an hour, as a data-loader worker left behind would; in a new session with `setsid`.
pid_t ForkLingeringChild(bool new_session) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (new_session) (void)setsid();
    for (int i = 0; i < 3600; ++i) sleep(1);
    _exit(0);
  }
  return pid;
}

void Flood(int fd, std::int64_t bytes) {
  std::string line(1023, 'x');
  line += '\n';
  while (bytes > 0) {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::int64_t>(bytes, static_cast<std::int64_t>(line.size())));
    if (::write(fd, line.data(), n) < 0 && errno != EINTR) return;
    bytes -= static_cast<std::int64_t>(n);
  }
}

enum class StepAction { kContinue, kEndLoop };

// What inject: leak holds: the blocks kept so far, and whether the allocator refused the next one
// (under memory_cap's RLIMIT_DATA, docs/memory.md).
struct Leak {
  std::vector<std::vector<char>> blocks;
  bool refused = false;
};

// What a fault does at step `step` (1-based, after that step was recorded). `last` is the record
// just made. Faults that end the loop are concluded after it (Main).
StepAction OnStep(const Params& p, RunnerSession& session, std::int64_t step,
                  const protocol::StepRecord& last, Leak& leak) {
  if (p.inject == Fault::kLeak) {
    // Touch every page so the growth shows in RSS, as a real leak would. A refused allocation ends
    // the loop; the runner reports it as out of memory after it (Main), as a real runner would.
    try {
      leak.blocks.emplace_back(static_cast<std::size_t>(p.leak_bytes_per_step), '\1');
    } catch (const std::bad_alloc&) {
      leak.refused = true;
      return StepAction::kEndLoop;
    }
  }
  if (step != p.inject_at_step) return StepAction::kContinue;
  switch (p.inject) {
    case Fault::kCrash:
    case Fault::kSigtermSelf:
    case Fault::kHang:
    case Fault::kExit:
    case Fault::kGarbage:
    case Fault::kOom:
    case Fault::kFrameAfterError:
    case Fault::kCloseProtocol:
    case Fault::kCloseProtocolExit:
      return StepAction::kEndLoop;
    case Fault::kWrongType:
      return BreaksFrame(p, "ERROR") ? StepAction::kEndLoop : StepAction::kContinue;
    case Fault::kUnknownFrame: {
      session.FlushSteps(last.end_ns);
      const char header[8] = {0, 0, 0, 0, 77, 0, 0, 0};
      (void)protocol::WriteAll(OutFd(), header, sizeof header);
      return StepAction::kContinue;
    }
    case Fault::kOversizedFrame: {
      session.FlushSteps(last.end_ns);
      const std::uint32_t length = protocol::kMaxPayloadBytes + 1;
      char header[8] = {0, 0, 0, 0, static_cast<char>(MessageType::kMemory), 0, 0, 0};
      std::memcpy(header, &length, 4);
      (void)protocol::WriteAll(OutFd(), header, sizeof header);
      return StepAction::kContinue;
    }
    case Fault::kBadJson: {
      session.FlushSteps(last.end_ns);
      std::string bytes;
      const std::string junk = "{not json";
      const std::uint32_t length = static_cast<std::uint32_t>(junk.size());
      char header[8] = {0, 0, 0, 0, static_cast<char>(MessageType::kMemory), 0, 0, 0};
      std::memcpy(header, &length, 4);
      bytes.append(header, sizeof header);
      bytes += junk;
      (void)protocol::WriteAll(OutFd(), bytes);
      return StepAction::kContinue;
    }
    case Fault::kRunnerStop:
      session.FlushSteps(last.end_ns);
      SendRawJson(MessageType::kStop, {{"reason", "the runner says so"}});
      return StepAction::kContinue;
    case Fault::kStepBackwards:
    case Fault::kStepOverlap: {
      session.FlushSteps(last.end_ns);
      protocol::StepRecord bad = last;
      if (p.inject == Fault::kStepBackwards) {
        bad.start_ns = last.end_ns;
        bad.end_ns = last.end_ns - 1;
      } else {
        bad.start_ns = last.end_ns - 1;  // one nanosecond before the previous step ended
        bad.end_ns = last.end_ns + 1;
      }
      SendRawSteps(&bad, 1);
      return StepAction::kContinue;
    }
    case Fault::kCloseCommands:
      ::close(InFd());
      return StepAction::kContinue;
    case Fault::kStderrFlood:
      Flood(STDERR_FILENO, p.flood_bytes);
      return StepAction::kContinue;
    case Fault::kStdoutFlood:
      Flood(STDOUT_FILENO, p.flood_bytes);
      return StepAction::kContinue;
    case Fault::kJsonFlood: {
      session.FlushSteps(last.end_ns);
      const std::string pad(512 << 10, 'm');
      for (int i = 0; i < 64; ++i) SendRawJson(MessageType::kMemory, {{"label", "flood"}, {"pad", pad}});
      return StepAction::kContinue;
    }
    default:
      return StepAction::kContinue;
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

// After STOP, a step_flood runner goes on sending full STEPS frames as fast as it can.
[[noreturn]] void FloodSteps(std::int64_t start_ns, std::uint32_t samples) {
  std::vector<protocol::StepRecord> batch(RunnerSession::kBatchRecords);
  std::int64_t t = start_ns;
  for (;;) {
    for (auto& r : batch) {
      r.start_ns = t;
      r.end_ns = ++t;
      r.samples = samples;
    }
    std::string bytes;
    protocol::AppendStepsFrame(bytes, 0, batch.data(), batch.size());
    if (!protocol::WriteAll(OutFd(), bytes).ok()) _exit(0);
  }
}

// A cell with `load` serves queries on the virtual clock (virtual_load.h) instead of stepping.
int ServeLoad(RunnerSession& session, const protocol::CellConfig& cell, const Params& p) {
  auto options = LoadOptionsFromParams(cell.params);
  if (!options.ok()) {
    (void)session.SendError(RunnerErrorKind::kInvalid, options.error().message);
    return 0;
  }
  if (p.inject == Fault::kDropQuery || p.inject == Fault::kDuplicateQuery) {
    options->fault = p.inject == Fault::kDropQuery ? QueryStreamFault::kDrop : QueryStreamFault::kDuplicate;
    options->fault_query_id = static_cast<std::uint64_t>(p.inject_at_step);
  } else if (p.inject != Fault::kNone) {
    (void)session.SendError(RunnerErrorKind::kInvalid, "inject: " + std::string(FaultName(p.inject)) +
                                                           " is not implemented for a load cell");
    return 0;
  }
  return ServeLoadCell(session, cell, {{"seed", cell.seed}}, *options);
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
      (void)session.SendError(RunnerErrorKind::kOom, *oom,
                              {{"requested_bytes", synthetic::NeededBytes(*p.memory_model, input)}});
      return 0;
    }
  }
  if (load::LoadRequested(cell->params)) {
    const int code = ServeLoad(session, *cell, p);
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

  if (result.end == protocol::LoopEnd::kStepFailed && leaked.refused) {
    // Free what was leaked first, so that the report's own allocations succeed under the cap.
    const auto kept = static_cast<std::int64_t>(leaked.blocks.size()) * p.leak_bytes_per_step;
    leaked.blocks.clear();
    leaked.blocks.shrink_to_fit();
    (void)session.SendError(RunnerErrorKind::kOom,
                            "out of memory (inject: leak): tried to allocate " +
                                std::to_string(p.leak_bytes_per_step) + " bytes at step " +
                                std::to_string(step) + ", holding " + std::to_string(kept) +
                                " bytes leaked before it",
                            {{"requested_bytes", p.leak_bytes_per_step}});
    return 0;
  }
  if (result.end == protocol::LoopEnd::kStepFailed) {
    switch (p.inject) {
      case Fault::kCrash:
        Say("crashing", step);
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
        break;
      case Fault::kSigtermSelf:
        Say("raising SIGTERM", step);
        signal(SIGTERM, SIG_DFL);
        raise(SIGTERM);
        break;
      case Fault::kHang:
        Say("hanging", step);
        HangForever(true);
      case Fault::kExit:
        std::fprintf(stderr, "dlbench-null: exiting with code %d on purpose at step %lld\n", p.exit_code,
                     static_cast<long long>(step));
        std::fflush(stderr);
        _exit(p.exit_code);
      case Fault::kGarbage: {
        const char junk[] = "\xff\xff\xff\x7f garbage on the protocol pipe";
        (void)protocol::WriteAll(OutFd(), junk, sizeof junk);
        // Keep running so the orchestrator, not our exit, has to notice.
        for (int i = 0; i < 1000; ++i) usleep(10'000);
        return 0;
      }
      case Fault::kOom: {
        const std::int64_t requested = std::int64_t{80} << 30;
        (void)session.SendError(RunnerErrorKind::kOom,
                                "out of memory (injected): tried to allocate 80.00 GiB",
                                {{"requested_bytes", requested}});
        return 0;
      }
      case Fault::kWrongType: {
        nlohmann::json body = {
            {"kind", "oom"}, {"message", "out of memory (injected)"}, {"requested_bytes", 1}};
        BreakField(p.fault_field, body);
        SendRawJson(MessageType::kError, body);
        return 0;
      }
      case Fault::kFrameAfterError: {
        (void)session.SendError(RunnerErrorKind::kInternal, "failed (injected), then goes on talking");
        protocol::StepRecord more;
        more.start_ns = last_end;
        more.end_ns = last_end + 1;
        SendRawSteps(&more, 1);
        return 0;
      }
      case Fault::kCloseProtocol:
        Say("closing the protocol pipe", step);
        ::close(OutFd());
        HangForever(false);
      case Fault::kCloseProtocolExit:
        Say("closing the protocol pipe, then exiting 0", step);
        ::close(OutFd());
        usleep(500'000);
        return 0;
      default:
        break;
    }
  }
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
