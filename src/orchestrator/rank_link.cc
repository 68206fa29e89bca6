#include "orchestrator/rank_link.h"

#include <arpa/inet.h>
#include <fmt/core.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"

namespace dlbench::orchestrator {
namespace {

// Rank 0's wait between tries of a group port in use (Form).
constexpr std::int64_t kBindRetryNs = 250'000'000;
constexpr std::uint32_t kJsonKind = 1;
constexpr std::uint32_t kStepsKind = 2;
constexpr std::size_t kHeadBytes = 8;

std::string Numeric(const sockaddr_storage& sa) {
  char host[NI_MAXHOST] = {};
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&sa), sizeof(sa), host, sizeof(host), nullptr, 0,
                  NI_NUMERICHOST) != 0)
    return "?";
  return host;
}

std::string ThisHost() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

void PutU32(std::string& out, std::uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out.append(b, 4);
}

std::uint32_t GetU32(const char* p) {
  std::uint32_t v = 0;
  std::memcpy(&v, p, 4);
  return v;
}

Status SendAll(int fd, const std::string& bytes) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return MakeError(ErrorKind::kIo, fmt::format("send: {}", std::strerror(errno)));
    off += static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

// The IPv4 address `addr` names (a number or a host name), with `port`.
Result<sockaddr_in> Resolve(const std::string& addr, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(addr.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    return MakeError(ErrorKind::kInvalidInput,
                     fmt::format("the rendezvous host '{}' does not resolve to an IPv4 address: {}", addr,
                                 gai_strerror(rc)));
  }
  sockaddr_in sa{};
  std::memcpy(&sa, found->ai_addr, sizeof(sa));
  freeaddrinfo(found);
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  return sa;
}

// A `beat` frame, as SendBeat sends it and DrainBeats drops it.
const std::string& BeatFrame() {
  static const std::string frame = [] {
    const std::string body = R"({"type":"beat"})";
    std::string out;
    PutU32(out, static_cast<std::uint32_t>(body.size()));
    PutU32(out, kJsonKind);
    return out + body;
  }();
  return frame;
}

int MsUntil(std::int64_t deadline_ns) {
  const std::int64_t left = (deadline_ns - MonotonicNowNs()) / 1'000'000;
  return static_cast<int>(std::clamp<std::int64_t>(left, 0, 1000));
}

}  // namespace

Result<double> ParseGroupSilence(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || !(v >= kMinGroupSilenceS && v <= kMaxGroupSilenceS)) {
    return MakeError(
        ErrorKind::kInvalidInput,
        fmt::format("DLBENCH_GROUP_SILENCE_S='{}': want seconds from {:.0f} to {:.0f} (how long a "
                    "task of a group run may hear nothing from another before it takes it for gone)",
                    text, kMinGroupSilenceS, kMaxGroupSilenceS));
  }
  return v;
}

RankLink::RankLink(int fd) : fd_(fd), heard_ns_(MonotonicNowNs()) {
  const int one = 1;
  (void)setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_storage sa{};
  socklen_t len = sizeof(sa);
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len) == 0) local_addr_ = Numeric(sa);
  len = sizeof(sa);
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&sa), &len) == 0) peer_addr_ = Numeric(sa);
}

RankLink::~RankLink() {
  if (fd_ >= 0) ::close(fd_);
}

Status RankLink::SendFrame(const std::string& frame) {
  const std::lock_guard<std::mutex> hold(send_mutex_);
  return SendAll(fd_, frame);
}

Status RankLink::Send(const nlohmann::json& message) {
  const std::string body = message.dump();
  std::string frame;
  PutU32(frame, static_cast<std::uint32_t>(body.size()));
  PutU32(frame, kJsonKind);
  frame += body;
  return SendFrame(frame);
}

Status RankLink::SendSteps(const std::vector<record::StepRecord>& steps, std::int64_t cell_seq) {
  std::string frame;
  const std::size_t bytes = sizeof(cell_seq) + steps.size() * sizeof(record::StepRecord);
  if (bytes > kMaxLinkFrameBytes)
    return MakeError(ErrorKind::kInternal, "too many step records for one frame");
  PutU32(frame, static_cast<std::uint32_t>(bytes));
  PutU32(frame, kStepsKind);
  frame.append(reinterpret_cast<const char*>(&cell_seq), sizeof(cell_seq));
  frame.append(reinterpret_cast<const char*>(steps.data()), steps.size() * sizeof(record::StepRecord));
  return SendFrame(frame);
}

Status RankLink::SendBeat() {
  const std::string& beat = BeatFrame();
  const std::lock_guard<std::mutex> hold(send_mutex_);
  const ssize_t n = ::send(fd_, beat.data(), beat.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return Status::Ok();
  if (n < 0) return MakeError(ErrorKind::kIo, fmt::format("send: {}", std::strerror(errno)));
  // A frame cut short by a full buffer is finished, so that the next frame starts where it should.
  if (static_cast<std::size_t>(n) < beat.size())
    return SendAll(fd_, beat.substr(static_cast<std::size_t>(n)));
  return Status::Ok();
}

void RankLink::Close() {
  if (!closed_) (void)::shutdown(fd_, SHUT_RDWR);
  closed_ = true;
}

std::int64_t RankLink::silent_ns() const { return MonotonicNowNs() - heard_ns_.load(); }

void RankLink::DrainBeats() {
  const std::unique_lock<std::mutex> hold(receive_mutex_, std::try_to_lock);
  if (!hold.owns_lock() || closed_ || malformed_) return;
  // At most 64 KiB a round: a peer that floods is Receive's to read, not the beat thread's.
  char buf[4096];
  for (int i = 0; i < 16; ++i) {
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n <= 0) break;  // nothing more now; a close or an error, Receive reports (recv says it again)
    in_.append(buf, static_cast<std::size_t>(n));
    heard_ns_ = MonotonicNowNs();
  }
  const std::string& beat = BeatFrame();
  std::size_t at = 0;
  while (in_.compare(at, beat.size(), beat) == 0) at += beat.size();
  in_.erase(0, at);
}

std::optional<LinkMessage> RankLink::Parse() {
  if (in_.size() < kHeadBytes) return std::nullopt;
  const std::uint32_t size = GetU32(in_.data());
  const std::uint32_t kind = GetU32(in_.data() + 4);
  constexpr std::size_t kSeqBytes = sizeof(std::int64_t);
  if (size > kMaxLinkFrameBytes || (kind != kJsonKind && kind != kStepsKind) ||
      (kind == kStepsKind && (size < kSeqBytes || (size - kSeqBytes) % sizeof(record::StepRecord) != 0))) {
    malformed_ = true;
    return std::nullopt;
  }
  if (in_.size() < kHeadBytes + size) return std::nullopt;
  LinkMessage m;
  m.bytes = size;
  if (kind == kStepsKind) {
    m.is_steps = true;
    std::memcpy(&m.cell_seq, in_.data() + kHeadBytes, kSeqBytes);
    m.steps.resize((size - kSeqBytes) / sizeof(record::StepRecord));
    std::memcpy(m.steps.data(), in_.data() + kHeadBytes + kSeqBytes, size - kSeqBytes);
  } else {
    m.json = nlohmann::json::parse(in_.begin() + kHeadBytes, in_.begin() + kHeadBytes + size, nullptr, false);
    if (m.json.is_discarded() || !m.json.is_object() || !m.json.contains("type") ||
        !m.json["type"].is_string()) {
      malformed_ = true;
      return std::nullopt;
    }
    const auto seq = m.json.find("cell_seq");
    if (seq != m.json.end() && seq->is_number_integer()) m.cell_seq = seq->get<std::int64_t>();
  }
  in_.erase(0, kHeadBytes + size);
  return m;
}

Result<std::optional<LinkMessage>> RankLink::Receive(int wait_ms) {
  const std::lock_guard<std::mutex> hold(receive_mutex_);
  for (;;) {
    if (auto m = Parse()) {
      if (!m->is_steps && m->json["type"] == "beat") continue;
      return std::optional<LinkMessage>(std::move(*m));
    }
    if (malformed_) {
      closed_ = true;
      return MakeError(ErrorKind::kProtocol, "a malformed frame from " + peer_addr_);
    }
    if (closed_) return MakeError(ErrorKind::kIo, "the connection with " + peer_addr_ + " is closed");
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) return std::optional<LinkMessage>();
    if (ready <= 0) return std::optional<LinkMessage>();
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return std::optional<LinkMessage>();
    if (n <= 0) {
      closed_ = true;
      return MakeError(ErrorKind::kIo, "the connection with " + peer_addr_ + " closed");
    }
    in_.append(buf, static_cast<std::size_t>(n));
    heard_ns_ = MonotonicNowNs();
    wait_ms = 0;
  }
}

Result<nlohmann::json> RankLink::Expect(const std::string& type, std::int64_t deadline_ns,
                                        const std::string& what) {
  for (;;) {
    auto m = Receive(MsUntil(deadline_ns));
    if (!m.ok()) return MakeError(m.error().kind, what + ": " + m.error().message);
    if (m->has_value()) {
      const LinkMessage& msg = **m;
      const std::string got = msg.is_steps ? "steps" : msg.json["type"].get<std::string>();
      if (got == "refused")
        return MakeError(ErrorKind::kInvalidInput, what + ": refused: " + msg.json.value("message", ""));
      if (got != type)
        return MakeError(ErrorKind::kProtocol, fmt::format("{}: '{}' where '{}' was due", what, got, type));
      return msg.json;
    }
    if (MonotonicNowNs() >= deadline_ns) return MakeError(ErrorKind::kIo, what + ": timed out");
  }
}

LinkBeat::LinkBeat(std::vector<RankLink*> links, bool drain) : links_(std::move(links)), drain_(drain) {
  // A draining thread reads kDrainsPerBeat times a beat interval: a peer's beat then counts as
  // heard at most a quarter interval after it arrives, so the longest silence seen from a live peer
  // is about 1.25 intervals plus scheduling, not two (a beat that arrived just after a drain waited
  // a whole interval for the next), well inside the smallest silence limit (kMinGroupSilenceS).
  // Beats are still sent once an interval.
  constexpr int kDrainsPerBeat = 4;
  thread_ = std::thread([this] {
    const int rounds_per_beat = drain_ ? kDrainsPerBeat : 1;
    std::unique_lock<std::mutex> hold(mutex_);
    for (std::int64_t round = 0; !stop_; ++round) {
      for (RankLink* link : links_) {
        if (round % rounds_per_beat == 0) (void)link->SendBeat();
        if (drain_) link->DrainBeats();
      }
      wake_.wait_for(hold, std::chrono::nanoseconds(kLinkBeatIntervalNs / rounds_per_beat),
                     [this] { return stop_; });
    }
  });
}

LinkBeat::~LinkBeat() {
  {
    const std::lock_guard<std::mutex> hold(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

Result<int> FreeTcpPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return MakeError(ErrorKind::kIo, fmt::format("socket: {}", std::strerror(errno)));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(sa);
  const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok)
    return MakeError(ErrorKind::kIo,
                     fmt::format("no free TCP port for the ranks' store: {}", std::strerror(err)));
  return static_cast<int>(ntohs(sa.sin_port));
}

std::string PlanHash(const std::string& matrix_text, const std::string& selection,
                     const std::vector<plan::Cell>& cells, const std::set<std::string>& finished) {
  std::uint64_t h = Fnv1a64(matrix_text);
  h = Fnv1a64(std::string(1, '\0') + selection, h);
  for (const plan::Cell& c : cells) h = Fnv1a64(std::string(1, '\0') + c.id, h);
  // A new run's hash is what it was before resumes were hashed.
  if (!finished.empty()) h = Fnv1a64(std::string("\0finished", 9), h);
  for (const std::string& id : finished) h = Fnv1a64(std::string(1, '\0') + id, h);
  return fmt::format("{:016x}", h);
}

Result<std::unique_ptr<RankGroupLinks>> RankGroupLinks::Form(const GroupSettings& s) {
  std::unique_ptr<RankGroupLinks> g(new RankGroupLinks());
  g->world_size_ = s.world_size;
  g->addr_ = s.addr;
  g->host_ = ThisHost();
  g->local_rank_ = s.local_rank;
  g->silence_ns_ = static_cast<std::int64_t>(s.silence_s * 1e9);
  g->report_slack_ns_ = static_cast<std::int64_t>(s.report_slack_s * 1e9);
  g->join_timeout_s_ = s.join_timeout_s;
  auto sa = Resolve(s.addr, s.port);
  if (!sa.ok()) return sa.error();
  char numeric[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &sa->sin_addr, numeric, sizeof(numeric));
  g->bind_addr_ = numeric;
  const std::int64_t tried_from = MonotonicNowNs();
  const std::int64_t deadline = tried_from + static_cast<std::int64_t>(s.join_timeout_s * 1e9);
  // A port in use may be only for a while: a client connection's TIME_WAIT holds its local port for
  // 60 s, and the port under torchrun (MASTER_PORT + 1) is in the range the kernel gives outgoing
  // connections (a CI run of session 30 met one there, with a browser test's connections beside
  // it). So EADDRINUSE is tried again every 250 ms until the join timeout; the other tasks retry
  // their connections as long.
  int lfd = -1;
  int err = 0;
  bool said = false;
  for (;;) {
    lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0) return MakeError(ErrorKind::kIo, fmt::format("socket: {}", std::strerror(errno)));
    const int one = 1;
    (void)setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(lfd, reinterpret_cast<const sockaddr*>(&*sa), sizeof(*sa)) == 0 &&
        ::listen(lfd, s.world_size) == 0)
      break;
    err = errno;
    ::close(lfd);
    lfd = -1;
    if (err != EADDRINUSE || MonotonicNowNs() + kBindRetryNs >= deadline) break;
    if (!said) {
      LogWarning(
          "rank 0: {}:{} is in use; trying again every 250 ms for up to {:.0f} s (a closed "
          "connection holds its port for 60 s)",
          s.addr, s.port, s.join_timeout_s);
      said = true;
    }
    ::usleep(static_cast<useconds_t>(kBindRetryNs / 1000));
  }
  if (lfd < 0) {
    return MakeError(ErrorKind::kIo,
                     fmt::format("rank 0 cannot listen for the group's other {} task(s) on {}:{} "
                                 "({} resolves to {}): {}{}; set DLBENCH_GROUP_PORT to a free port",
                                 s.world_size - 1, s.addr, s.port, s.addr, numeric, std::strerror(err),
                                 said ? fmt::format(" through {:.1f} s of tries",
                                                    static_cast<double>(MonotonicNowNs() - tried_from) / 1e9)
                                      : ""));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{lfd};
  std::vector<std::unique_ptr<RankLink>> pending;
  g->members_.resize(static_cast<std::size_t>(s.world_size - 1));
  int joined = 0;
  while (joined < s.world_size - 1) {
    pollfd p{lfd, POLLIN, 0};
    const int ready = ::poll(&p, 1, MsUntil(deadline));
    if (ready <= 0) {
      if (MonotonicNowNs() < deadline) continue;
      std::string missing;
      for (int r = 1; r < s.world_size; ++r) {
        if (!g->members_[static_cast<std::size_t>(r - 1)].link)
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
      return MakeError(ErrorKind::kIo,
                       fmt::format("rank 0 waited {:.0f} s on {}:{} for the group's other tasks; "
                                   "rank(s) {} never connected",
                                   s.join_timeout_s, s.addr, s.port, missing));
    }
    const int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    auto link = std::make_unique<RankLink>(fd);
    auto hello = link->Expect("hello", std::min(deadline, MonotonicNowNs() + std::int64_t{10'000'000'000}),
                              "a task's hello from " + link->peer_addr());
    if (!hello.ok()) continue;  // not one of ours (a port scan, a task that died): ignored
    const int rank = hello->value("rank", -1);
    const int world = hello->value("world_size", -1);
    const std::string hash = hello->value("plan_hash", "");
    const std::string host = hello->value("host", "?");
    const std::string resume = hello->value("resume", "");
    auto resuming = [](const std::string& r) {
      return r.empty() ? std::string("starts a new run") : "resumes run " + r;
    };
    std::string why;
    if (world != s.world_size) {
      why = fmt::format("task {} on {} says the group has {} tasks; rank 0's launcher says {}", rank, host,
                        world, s.world_size);
    } else if (rank < 1 || rank >= s.world_size) {
      why = fmt::format("a task on {} says it is rank {}, not one of 1..{}", host, rank, s.world_size - 1);
    } else if (g->members_[static_cast<std::size_t>(rank - 1)].link) {
      why = fmt::format("rank {} connected twice (the second from {})", rank, host);
    } else if (hash != s.plan_hash) {
      why = fmt::format(
          "task {} on {} has a different plan (hash {}) from rank 0's ({}): every task must be given "
          "the same matrix file, --only and --set",
          rank, host, hash, s.plan_hash);
    } else if (resume != s.resume) {
      why = fmt::format("task {} on {} {}, and rank 0 {}: every task must be given the same --resume", rank,
                        host, resuming(resume), resuming(s.resume));
    }
    if (!why.empty()) {
      (void)link->Send({{"type", "refused"}, {"message", why}});
      return MakeError(ErrorKind::kInvalidInput, "the group of tasks is refused: " + why);
    }
    GroupMember& m = g->members_[static_cast<std::size_t>(rank - 1)];
    m.rank = rank;
    m.host = host;
    m.local_rank = hello->value("local_rank", std::int64_t{0});
    m.link = std::move(link);
    ++joined;
  }
  for (GroupMember& m : g->members_) {
    if (auto st = m.link->Send({{"type", "welcome"}}); !st.ok()) return st.error();
    m.clock_rtt_ns = std::numeric_limits<std::int64_t>::max();
    for (int i = 0; i < kClockPings; ++i) {
      const std::int64_t t0 = MonotonicNowNs();
      if (auto st = m.link->Send({{"type", "ping"}}); !st.ok()) return st.error();
      auto pong =
          m.link->Expect("pong", t0 + std::int64_t{10'000'000'000}, fmt::format("rank {}'s clock", m.rank));
      const std::int64_t t2 = MonotonicNowNs();
      if (!pong.ok()) return pong.error();
      if (t2 - t0 < m.clock_rtt_ns) {
        m.clock_rtt_ns = t2 - t0;
        m.clock_offset_ns = pong->value("t_ns", std::int64_t{0}) - (t0 + (t2 - t0) / 2);
      }
    }
  }
  std::vector<RankLink*> links;
  for (GroupMember& m : g->members_) links.push_back(m.link.get());
  g->beat_ = std::make_unique<LinkBeat>(std::move(links), /*drain=*/true);
  return g;
}

Status RankGroupLinks::AgreePlan(const GroupPlan& plan) {
  const nlohmann::json message = {{"type", "plan"},
                                  {"run_id", plan.run_id},
                                  {"resumed", plan.resumed},
                                  {"only", plan.selection.only},
                                  {"shard", plan.selection.shard},
                                  {"set", plan.selection.set},
                                  {"finished", plan.finished},
                                  {"plan_hash", plan.plan_hash}};
  for (GroupMember& m : members_) {
    if (auto st = m.link->Send(message); !st.ok())
      return MakeError(ErrorKind::kIo,
                       fmt::format("rank {}'s task on {}: {}", m.rank, m.host, st.error().message));
  }
  const std::int64_t deadline = MonotonicNowNs() + static_cast<std::int64_t>(join_timeout_s_ * 1e9);
  for (GroupMember& m : members_) {
    auto ok = m.link->Expect("plan_ok", deadline,
                             fmt::format("rank {}'s task on {} checking rank 0's plan", m.rank, m.host));
    if (!ok.ok()) return ok.error();
  }
  return Status::Ok();
}

RankGroupLinks::~RankGroupLinks() {
  if (ended_) return;
  try {
    End(false, "rank 0 ended early");
  } catch (...) {
    // Out of memory while saying goodbye: the tasks see their connections close instead.
    for (GroupMember& m : members_) m.link.reset();
  }
}

void RankGroupLinks::End(bool ok, const std::string& message) {
  ended_ = true;
  beat_.reset();
  for (GroupMember& m : members_) {
    if (m.link && !m.link->closed()) (void)m.link->Send({{"type", "end"}, {"ok", ok}, {"message", message}});
    m.link.reset();
  }
}

Result<std::unique_ptr<RankLink>> JoinGroup(const GroupSettings& s) {
  auto sa = Resolve(s.addr, s.port);
  if (!sa.ok()) return sa.error();
  const std::int64_t deadline = MonotonicNowNs() + static_cast<std::int64_t>(s.join_timeout_s * 1e9);
  std::string last;
  for (;;) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return MakeError(ErrorKind::kIo, fmt::format("socket: {}", std::strerror(errno)));
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&*sa), sizeof(*sa)) == 0) {
      auto link = std::make_unique<RankLink>(fd);
      const nlohmann::json hello = {
          {"type", "hello"},          {"rank", s.rank},     {"world_size", s.world_size},
          {"plan_hash", s.plan_hash}, {"host", ThisHost()}, {"local_rank", s.local_rank},
          {"resume", s.resume}};
      if (auto st = link->Send(hello); !st.ok()) return st.error();
      auto welcome =
          link->Expect("welcome", MonotonicNowNs() + static_cast<std::int64_t>(s.join_timeout_s * 1e9),
                       fmt::format("rank {} joining rank 0 at {}:{}", s.rank, s.addr, s.port));
      if (!welcome.ok()) return welcome.error();
      return link;
    }
    last = std::strerror(errno);
    ::close(fd);
    if (MonotonicNowNs() >= deadline) {
      return MakeError(ErrorKind::kIo,
                       fmt::format("rank {} could not reach rank 0 at {}:{} within {:.0f} s: {}", s.rank,
                                   s.addr, s.port, s.join_timeout_s, last));
    }
    ::usleep(100'000);
  }
}

}  // namespace dlbench::orchestrator
