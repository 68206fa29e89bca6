#include "protocol/runner_session.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string_view>

namespace dlbench::protocol {

const char* LoopEndName(LoopEnd end) {
  switch (end) {
    case LoopEnd::kStopped:
      return "stopped";
    case LoopEnd::kMaxSteps:
      return "max_steps";
    case LoopEnd::kMaxTime:
      return "max_time";
    case LoopEnd::kStepFailed:
      return "step_failed";
  }
  return "stopped";
}

Result<CellConfig> ParseConfigure(const nlohmann::json& body) {
  CellConfig c;
  try {
    if (body.contains("params")) c.params = body.at("params");
    if (!c.params.is_object()) return MakeError(ErrorKind::kProtocol, "CONFIGURE params must be an object");
    c.seed = body.value("seed", std::uint64_t{0});
    c.rank = body.value("rank", 0);
    c.world_size = body.value("world_size", 1);
    c.cell_key = body.value("cell_key", std::string());
    c.serve_more = body.value("serve_more", false);
    c.attempt = body.value("attempt", 1);
    if (c.attempt < 1) return MakeError(ErrorKind::kProtocol, "CONFIGURE attempt must be >= 1");
    if (body.contains("limits")) {
      const auto& l = body.at("limits");
      c.limits.max_steps = l.value("max_steps", c.limits.max_steps);
      c.limits.max_time_s = l.value("max_time_s", c.limits.max_time_s);
    }
    if (body.contains("rendezvous")) {
      const auto& r = body.at("rendezvous");
      Rendezvous rv;
      rv.local_rank = r.value("local_rank", c.rank);
      rv.local_world_size = r.value("local_world_size", c.world_size);
      if (r.contains("file")) {
        rv.file = r.at("file").get<std::string>();
        if (rv.file.empty() || rv.file.front() != '/' || rv.file.size() > 4096)
          return MakeError(ErrorKind::kProtocol,
                           "CONFIGURE rendezvous.file must be an absolute path (at most 4096 bytes)");
      } else {
        rv.addr = r.at("addr").get<std::string>();
        rv.port = r.at("port").get<int>();
        if (rv.port <= 0 || rv.port > 65535)
          return MakeError(ErrorKind::kProtocol, "CONFIGURE rendezvous.port must be 1..65535");
      }
      c.rendezvous = rv;
    }
  } catch (const nlohmann::json::exception& e) {
    return MakeError(ErrorKind::kProtocol, std::string("malformed CONFIGURE: ") + e.what());
  }
  return c;
}

nlohmann::json ConfigureToJson(const CellConfig& c) {
  nlohmann::json j = {{"params", c.params},
                      {"seed", c.seed},
                      {"rank", c.rank},
                      {"world_size", c.world_size},
                      {"cell_key", c.cell_key},
                      {"limits", {{"max_steps", c.limits.max_steps}, {"max_time_s", c.limits.max_time_s}}}};
  if (c.serve_more) j["serve_more"] = true;
  if (c.attempt > 1) j["attempt"] = c.attempt;
  if (c.rendezvous) {
    j["rendezvous"] = {{"local_rank", c.rendezvous->local_rank},
                       {"local_world_size", c.rendezvous->local_world_size}};
    if (!c.rendezvous->file.empty()) {
      j["rendezvous"]["file"] = c.rendezvous->file;
    } else {
      j["rendezvous"]["addr"] = c.rendezvous->addr;
      j["rendezvous"]["port"] = c.rendezvous->port;
    }
  }
  return j;
}

RunnerSession::RunnerSession(int in_fd, int out_fd)
    : in_fd_(in_fd), out_fd_(out_fd), spare_(std::make_unique<StepsFrame>()) {
  frame_ = spare_.get();
  last_flush_ns_ = MonotonicNowNs();
  // The ring of frames handed to a pipe by reference (the header says why and how it is safe).
  const char* off = std::getenv("DLBENCH_NO_VMSPLICE");
  if (off != nullptr && std::string_view(off) == "1") return;
  struct stat st {};
  if (::fstat(out_fd_, &st) != 0 || !S_ISFIFO(st.st_mode)) return;
  const long page = ::sysconf(_SC_PAGESIZE);
  if (page <= 0) return;
  const auto page_bytes = static_cast<std::size_t>(page);
  ring_stride_ = (sizeof(StepsFrame) + page_bytes - 1) / page_bytes * page_bytes;
  ring_bytes_ = ring_stride_ * kRingFrames;
  void* memory = ::mmap(nullptr, ring_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return;  // frames are written by copy, as without a pipe
  ring_memory_ = memory;
  ring_at_ = 0;
  frame_ = RingFrame(0);
  splice_ = true;
}

RunnerSession::~RunnerSession() {
  // Pages the pipe still holds stay the pipe's until it is read (the header's comment).
  if (ring_memory_ != nullptr) ::munmap(ring_memory_, ring_bytes_);
}

RunnerSession::StepsFrame* RunnerSession::RingFrame(std::size_t i) const {
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the ring is raw mmap'd pages
  return reinterpret_cast<StepsFrame*>(static_cast<char*>(ring_memory_) + i * ring_stride_);
}

bool RunnerSession::Consumed(std::uint64_t end) const {
  if (end == 0) return true;
  int unread = 0;
  if (::ioctl(out_fd_, FIONREAD, &unread) != 0 || unread < 0) return false;
  return bytes_out_ - static_cast<std::uint64_t>(unread) >= end;
}

Status RunnerSession::SendFrame(std::size_t bytes) {
  const char* data = frame_->head;
  std::size_t left = bytes;
  const bool in_ring = frame_ != spare_.get();
  while (in_ring && splice_ && left > 0) {
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): vmsplice reads the pages, never writes them
    iovec iov{const_cast<char*>(data), left};
    const ssize_t n = ::vmsplice(out_fd_, &iov, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // EINVAL, ENOSYS, a seccomp filter's EPERM...: copy from here on. A closed pipe (EPIPE) says
      // so again in the write below, which reports it.
      splice_ = false;
      break;
    }
    data += n;
    left -= static_cast<std::size_t>(n);
    bytes_out_ += static_cast<std::uint64_t>(n);
  }
  if (left > 0) {
    auto st = WriteAll(out_fd_, data, left);
    if (!st.ok()) return st;
    bytes_out_ += left;
  }
  ++(left == bytes ? frame_counts_.copied : frame_counts_.spliced);
  if (!splice_) {
    frame_ = spare_.get();  // a frame already spliced in part stays as it is: spare_ is filled next
    return Status::Ok();
  }
  if (in_ring) {
    ring_end_[ring_at_] = bytes_out_;
    ring_at_ = (ring_at_ + 1) % kRingFrames;
  }
  // The ring's next buffer once the pipe has handed on what it last held; else spare_, and the
  // same buffer is tried again at the next flush.
  frame_ = Consumed(ring_end_[ring_at_]) ? RingFrame(ring_at_) : spare_.get();
  return Status::Ok();
}

Result<std::unique_ptr<RunnerSession>> RunnerSession::Connect() {
  const char* in = std::getenv(kFdInEnv);
  const char* out = std::getenv(kFdOutEnv);
  if (in == nullptr || out == nullptr) {
    return MakeError(ErrorKind::kInvalidInput,
                     "this program is a dlbench runner: start it through 'dlbench run' "
                     "(DLBENCH_PROTOCOL_FD_IN/_OUT are not set)");
  }
  // A vanished orchestrator must show up as a failed write, not kill the runner mid-report.
  signal(SIGPIPE, SIG_IGN);
  return FromFds(std::atoi(in), std::atoi(out));
}

std::unique_ptr<RunnerSession> RunnerSession::FromFds(int in_fd, int out_fd) {
  return std::unique_ptr<RunnerSession>(new RunnerSession(in_fd, out_fd));
}

Status RunnerSession::SendJson(MessageType type, const nlohmann::json& body) {
  std::string frame;
  AppendJsonFrame(frame, type, body);
  auto st = WriteAll(out_fd_, frame);
  if (st.ok()) bytes_out_ += frame.size();
  if (!st.ok()) stop_requested_ = orchestrator_gone_ = true;
  return st;
}

Status RunnerSession::SendHello(nlohmann::json hello) {
  hello["protocol"] = kProtocolVersion;
  hello["pid"] = static_cast<long>(getpid());
  return SendJson(MessageType::kHello, hello);
}

Result<CellConfig> RunnerSession::ReceiveConfigure() {
  for (;;) {
    auto frame = reader_.Next();
    if (!frame.ok()) return frame.error();
    if (frame->has_value()) {
      const Frame& f = **frame;
      if (f.type == MessageType::kStop) continue;  // the previous cell's, crossed with its DONE
      if (f.type != MessageType::kConfigure) {
        return MakeError(ErrorKind::kProtocol,
                         std::string("expected CONFIGURE, got ") + MessageTypeName(f.type));
      }
      auto body = DecodeJson(f);
      if (!body.ok()) return body.error();
      return ParseConfigure(*body);
    }
    auto n = ReadInto(in_fd_, reader_);
    if (!n.ok()) return n.error();
    if (*n == 0)
      return MakeError(ErrorKind::kIo, "the orchestrator closed the protocol pipe before CONFIGURE");
  }
}

void RunnerSession::BeginNextCell() {
  stop_requested_ = orchestrator_gone_;
  count_ = 0;
  last_flush_ns_ = MonotonicNowNs();
}

Status RunnerSession::SendReady(const nlohmann::json& effective) {
  return SendJson(MessageType::kReady, {{"effective", effective}});
}
Status RunnerSession::SendMemory(const nlohmann::json& snapshot) {
  return SendJson(MessageType::kMemory, snapshot);
}
Status RunnerSession::SendExtras(const nlohmann::json& extras) {
  return SendJson(MessageType::kExtras, extras);
}

Status RunnerSession::SendError(RunnerErrorKind kind, const std::string& message,
                                const nlohmann::json& details) {
  nlohmann::json body = details.is_object() ? details : nlohmann::json::object();
  body["kind"] = record::Name(kind);
  body["message"] = message;
  return SendJson(MessageType::kError, body);
}

Status RunnerSession::SendDone(const std::string& reason, std::int64_t steps) {
  return SendJson(MessageType::kDone, {{"reason", reason}, {"steps", steps}});
}

void RunnerSession::FlushSteps(std::int64_t now_ns) {
  last_flush_ns_ = now_ns;
  if (count_ > 0 && !stop_requested_) {
    const std::size_t bytes = EncodeStepsHead(frame_->head, rank_, count_);
    if (!SendFrame(bytes).ok()) stop_requested_ = orchestrator_gone_ = true;
  }
  count_ = 0;
  PollCommands();
}

void RunnerSession::PollCommands() {
  // Frames may already sit in the reader (read together with CONFIGURE): look there first.
  auto drain = [this] {
    for (;;) {
      auto frame = reader_.Next();
      if (!frame.ok()) {
        stop_requested_ = orchestrator_gone_ = true;
        return;
      }
      if (!frame->has_value()) return;
      if ((*frame)->type == MessageType::kStop) stop_requested_ = true;
    }
  };
  drain();
  pollfd p{in_fd_, POLLIN, 0};
  while (!stop_requested_ && ::poll(&p, 1, 0) > 0) {
    if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) return;
    auto n = ReadInto(in_fd_, reader_);
    if (!n.ok() || *n == 0) {  // the orchestrator is gone: stop by ourselves
      stop_requested_ = orchestrator_gone_ = true;
      return;
    }
    drain();
  }
}

}  // namespace dlbench::protocol
