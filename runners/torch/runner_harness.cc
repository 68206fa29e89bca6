#include "runner_harness.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>

#include "common/clock.h"

namespace dlbench::torchrunner::testing {
namespace {

constexpr int kRunnerReadsFd = 4;
constexpr int kRunnerWritesFd = 3;

struct Spawned {
  Subprocess child;
  int to_runner;    // we write commands here
  int from_runner;  // we read messages here
};

Result<Spawned> SpawnRunner(const std::string& binary,
                            const std::vector<std::pair<std::string, std::string>>& env) {
  // A runner that exits early must show up as a failed write, not kill the test.
  signal(SIGPIPE, SIG_IGN);
  auto commands = MakePipe();
  if (!commands.ok()) return commands.error();
  auto messages = MakePipe();
  if (!messages.ok()) return messages.error();
  SpawnOptions options;
  options.argv = {binary};
  options.extra_env = env;
  options.extra_env.emplace_back(protocol::kFdInEnv, std::to_string(kRunnerReadsFd));
  options.extra_env.emplace_back(protocol::kFdOutEnv, std::to_string(kRunnerWritesFd));
  options.fd_map = {{kRunnerReadsFd, commands->first}, {kRunnerWritesFd, messages->second}};
  auto child = Subprocess::Spawn(options);
  close(commands->first);
  close(messages->second);
  if (!child.ok()) {
    close(commands->second);
    close(messages->first);
    return child.error();
  }
  return Spawned{std::move(*child), commands->second, messages->first};
}

Status SendFrame(int fd, protocol::MessageType type, const nlohmann::json& body) {
  std::string frame;
  protocol::AppendJsonFrame(frame, type, body);
  return protocol::WriteAll(fd, frame);
}

}  // namespace

Result<CellTranscript> RunCell(const std::string& runner_binary, const protocol::CellConfig& config,
                               const HarnessOptions& options) {
  auto spawned = SpawnRunner(runner_binary, options.extra_env);
  if (!spawned.ok()) return spawned.error();
  Spawned& s = *spawned;
  CellTranscript t;
  protocol::FrameReader reader;
  bool stop_sent = false;
  const std::int64_t deadline = MonotonicNowNs() + SecondsToNs(options.timeout_s);
  auto fail = [&](ErrorKind kind, std::string message) -> Result<CellTranscript> {
    close(s.to_runner);
    close(s.from_runner);
    s.child.Terminate(2000);
    return MakeError(kind, std::move(message));
  };

  for (;;) {
    auto frame = reader.Next();
    if (!frame.ok()) return fail(ErrorKind::kProtocol, frame.error().message);
    if (frame->has_value()) {
      const protocol::Frame& f = **frame;
      if (f.type == protocol::MessageType::kSteps) {
        auto batch = protocol::DecodeSteps(f);
        if (!batch.ok()) return fail(ErrorKind::kProtocol, batch.error().message);
        t.steps.insert(t.steps.end(), batch->records.begin(), batch->records.end());
        if (!stop_sent && static_cast<std::int64_t>(t.steps.size()) >= options.stop_after_steps) {
          (void)SendFrame(s.to_runner, protocol::MessageType::kStop, nlohmann::json::object());
          stop_sent = true;
        }
        continue;
      }
      if (f.type == protocol::MessageType::kQueries) {
        auto batch = protocol::DecodeQueries(f);
        if (!batch.ok()) return fail(ErrorKind::kProtocol, batch.error().message);
        t.queries.insert(t.queries.end(), batch->records.begin(), batch->records.end());
        if (!stop_sent && static_cast<std::int64_t>(t.queries.size()) >= options.stop_after_queries) {
          (void)SendFrame(s.to_runner, protocol::MessageType::kStop, nlohmann::json::object());
          stop_sent = true;
        }
        continue;
      }
      auto body = protocol::DecodeJson(f);
      if (!body.ok()) return fail(ErrorKind::kProtocol, body.error().message);
      switch (f.type) {
        case protocol::MessageType::kHello:
          t.hello = *body;
          if (auto st = SendFrame(s.to_runner, protocol::MessageType::kConfigure,
                                  protocol::ConfigureToJson(config));
              !st.ok()) {
            return fail(ErrorKind::kIo, "could not send CONFIGURE: " + st.error().message);
          }
          break;
        case protocol::MessageType::kReady:
          t.ready = body->value("effective", nlohmann::json::object());
          break;
        case protocol::MessageType::kMemory:
          t.memory.push_back(*body);
          break;
        case protocol::MessageType::kExtras:
          t.extras.push_back(*body);
          break;
        case protocol::MessageType::kError:
          t.error = *body;
          break;
        case protocol::MessageType::kDone:
          t.done = *body;
          break;
        default:
          return fail(ErrorKind::kProtocol,
                      fmt::format("unexpected {} from the runner", protocol::MessageTypeName(f.type)));
      }
      continue;
    }
    const std::int64_t left_ms = (deadline - MonotonicNowNs()) / 1'000'000;
    if (left_ms <= 0)
      return fail(ErrorKind::kIo, fmt::format("the runner did not finish within {} s", options.timeout_s));
    pollfd p{s.from_runner, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left_ms, 1000)));
    if (ready <= 0) continue;
    auto n = protocol::ReadInto(s.from_runner, reader);
    if (!n.ok()) return fail(ErrorKind::kIo, n.error().message);
    if (*n == 0) break;
  }
  close(s.to_runner);
  close(s.from_runner);
  t.exit = s.child.Wait();
  return t;
}

Result<nlohmann::json> ReadHello(const std::string& runner_binary) {
  auto spawned = SpawnRunner(runner_binary, {});
  if (!spawned.ok()) return spawned.error();
  Spawned& s = *spawned;
  protocol::FrameReader reader;
  std::optional<nlohmann::json> hello;
  const std::int64_t deadline = MonotonicNowNs() + SecondsToNs(120.0);
  while (!hello && MonotonicNowNs() < deadline) {
    auto frame = reader.Next();
    if (!frame.ok()) break;
    if (frame->has_value()) {
      if ((*frame)->type == protocol::MessageType::kHello) {
        auto body = protocol::DecodeJson(**frame);
        if (body.ok()) hello = *body;
      }
      continue;
    }
    pollfd p{s.from_runner, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) continue;
    auto n = protocol::ReadInto(s.from_runner, reader);
    if (!n.ok() || *n == 0) break;
  }
  // Closing the command pipe before CONFIGURE makes the runner end by itself.
  close(s.to_runner);
  close(s.from_runner);
  s.child.Terminate(5000);
  if (!hello) return MakeError(ErrorKind::kProtocol, "the runner sent no HELLO");
  return *hello;
}

}  // namespace dlbench::torchrunner::testing
