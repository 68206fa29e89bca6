// dlbench-null's fault injection (inject.h): every injected fault after HELLO, at the step it fires
// at and after the loop it ended.
#include "runners/null/inject.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "protocol/wire.h"
#include "record/metrics.h"

namespace dlbench::nullrunner {
namespace {

using protocol::MessageType;
using protocol::RunnerSession;
using record::RunnerErrorKind;

// The fds of the protocol, for faults that write frames the session would never write.
int OutFd() { return std::atoi(std::getenv(protocol::kFdOutEnv)); }
int InFd() { return std::atoi(std::getenv(protocol::kFdInEnv)); }

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

}  // namespace

void SendRawJson(MessageType type, const nlohmann::json& body) {
  std::string bytes;
  protocol::AppendJsonFrame(bytes, type, body);
  (void)protocol::WriteAll(OutFd(), bytes);
}

void WaitUntilProtocolRead() {
  for (int i = 0; i < 10'000; ++i) {
    int unread = 0;
    if (::ioctl(OutFd(), FIONREAD, &unread) != 0 || unread == 0) return;
    usleep(1'000);
  }
}

void WaitUntilCommandArrives() {
  pollfd in{InFd(), POLLIN, 0};
  for (int i = 0; i < 100; ++i) {
    if (::poll(&in, 1, 100) > 0) return;  // bytes, or the pipe's end (POLLHUP)
  }
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

pid_t ForkLingeringChild(bool new_session) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (new_session) (void)setsid();
    for (int i = 0; i < 3600; ++i) sleep(1);
    _exit(0);
  }
  return pid;
}

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

bool ConcludeFault(const Params& p, RunnerSession& session, std::int64_t step, std::int64_t last_end,
                   Leak& leak) {
  if (leak.refused) {
    // Free what was leaked first, so that the report's own allocations succeed under the cap.
    const auto kept = static_cast<std::int64_t>(leak.blocks.size()) * p.leak_bytes_per_step;
    leak.blocks.clear();
    leak.blocks.shrink_to_fit();
    (void)session.SendError(RunnerErrorKind::kOom,
                            "out of memory (inject: leak): tried to allocate " +
                                std::to_string(p.leak_bytes_per_step) + " bytes at step " +
                                std::to_string(step) + ", holding " + std::to_string(kept) +
                                " bytes leaked before it",
                            {{"requested_bytes", p.leak_bytes_per_step}});
    return true;
  }
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
      return true;
    }
    case Fault::kOom: {
      const std::int64_t requested = std::int64_t{80} << 30;
      (void)session.SendError(RunnerErrorKind::kOom, "out of memory (injected): tried to allocate 80.00 GiB",
                              {{"requested_bytes", requested}});
      return true;
    }
    case Fault::kWrongType: {
      nlohmann::json body = {
          {"kind", "oom"}, {"message", "out of memory (injected)"}, {"requested_bytes", 1}};
      BreakField(p.fault_field, body);
      SendRawJson(MessageType::kError, body);
      return true;
    }
    case Fault::kFrameAfterError: {
      (void)session.SendError(RunnerErrorKind::kInternal, "failed (injected), then goes on talking");
      protocol::StepRecord more;
      more.start_ns = last_end;
      more.end_ns = last_end + 1;
      SendRawSteps(&more, 1);
      return true;
    }
    case Fault::kCloseProtocol:
      Say("closing the protocol pipe", step);
      ::close(OutFd());
      HangForever(false);
    case Fault::kCloseProtocolExit:
      Say("closing the protocol pipe, then exiting 0", step);
      ::close(OutFd());
      usleep(500'000);
      return true;
    default:
      break;
  }
  return false;
}

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

}  // namespace dlbench::nullrunner
