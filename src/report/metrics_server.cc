#include "report/metrics_server.h"

#include <fmt/format.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "common/version.h"
#include "report/escape.h"
#include "report/prometheus.h"

namespace dlbench::report {

Result<ListenAddress> ParseListenAddress(const std::string& text) {
  const auto bad = [&text]() {
    return MakeError(
        ErrorKind::kInvalidInput,
        fmt::format("--listen '{}': expected HOST:PORT, e.g. 127.0.0.1:9464 or [::1]:9464", text));
  };
  ListenAddress out;
  std::string port_text;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') return bad();
    out.host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || text.find(':') != colon) return bad();
    out.host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  if (out.host.empty() || port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos) {
    return bad();
  }
  out.port = std::atoi(port_text.c_str());
  if (out.port > 65535) return bad();
  return out;
}

namespace {

// What each errno of bind() means to someone starting `serve`.
std::string BindProblem(int err) {
  switch (err) {
    case EADDRINUSE:
      return "address already in use (another `dlbench serve` or another program listens there)";
    case EADDRNOTAVAIL:
      return "not an address of this host";
    case EACCES:
      return "permission denied (ports below 1024 need privileges)";
    default:
      return strerror(err);
  }
}

// libmicrohttpd's request callback. It is called once when the headers are in, then once per
// piece of body, then once more with no data: GET and HEAD are answered on that last call, after
// any body is discarded; other methods at once.
MHD_Result OnRequest(void* self, MHD_Connection* connection, const char* url, const char* method,
                     const char* /*version*/, const char* /*upload_data*/, std::size_t* upload_data_size,
                     void** request_state) {
  static int headers_seen = 0;
  const std::string method_text = method != nullptr ? method : "";
  const bool readable = method_text == "GET" || method_text == "HEAD";
  if (*request_state == nullptr && readable) {
    *request_state = &headers_seen;
    return MHD_YES;
  }
  if (*upload_data_size != 0) {
    *upload_data_size = 0;
    return MHD_YES;
  }
  const MetricsServer::Answer answer =
      static_cast<MetricsServer*>(self)->Respond(method_text, url != nullptr ? url : "");
  MHD_Response* response = MHD_create_response_from_buffer(
      answer.body.size(), const_cast<char*>(answer.body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, answer.content_type.c_str());
  if (answer.allow_header) MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  const MHD_Result queued = MHD_queue_response(connection, answer.status, response);
  MHD_destroy_response(response);
  return queued;
}

}  // namespace

MetricsServer::MetricsServer(store::ResultStore& store, ServeOptions options)
    : store_(store), options_(std::move(options)) {}

MetricsServer::~MetricsServer() {
  // libmicrohttpd closes its connections and the listening socket it was given.
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  for (int fd : pending_fds_) ::close(fd);
}

Status MetricsServer::Bind() {
  const std::string where = fmt::format("{}:{}", options_.listen.host, options_.listen.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port_text = std::to_string(options_.listen.port);
  const int gai = ::getaddrinfo(options_.listen.host.c_str(), port_text.c_str(), &hints, &found);
  if (gai != 0) {
    return MakeError(ErrorKind::kIo, fmt::format("cannot listen on {}: cannot resolve '{}': {}", where,
                                                 options_.listen.host, gai_strerror(gai)));
  }
  int err = EADDRNOTAVAIL;
  for (addrinfo* ai = found; ai != nullptr && listen_fd_ < 0; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    // SO_REUSEADDR lets a restarted server bind while old connections linger in TIME_WAIT; on Linux
    // it does not let two sockets listen on one address. SO_REUSEPORT would, and scrapes would
    // then alternate between two servers (two databases): it is deliberately not set.
    const int yes = 1;
    (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (ai->ai_family == AF_INET6) (void)::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &yes, sizeof yes);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
      err = errno;
      ::close(fd);
      continue;
    }
    listen_fd_ = fd;
  }
  ::freeaddrinfo(found);
  if (listen_fd_ < 0)
    return MakeError(ErrorKind::kIo, fmt::format("cannot listen on {}: {}", where, BindProblem(err)));

  sockaddr_storage bound{};
  socklen_t bound_len = sizeof bound;
  if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &bound_len) == 0) {
    port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                        : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  }
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return MakeError(ErrorKind::kIo, fmt::format("serve: eventfd: {}", strerror(errno)));

  // External epoll mode: Run() polls libmicrohttpd's epoll descriptor and calls MHD_run, so every
  // call into the library happens on Run()'s thread.
  daemon_ = MHD_start_daemon(MHD_USE_EPOLL, 0, nullptr, nullptr, &OnRequest, this, MHD_OPTION_LISTEN_SOCKET,
                             static_cast<MHD_socket>(listen_fd_), MHD_OPTION_CONNECTION_TIMEOUT,
                             std::max(options_.connection_timeout_s, 1u), MHD_OPTION_CONNECTION_LIMIT,
                             kMaxConnections, MHD_OPTION_CONNECTION_MEMORY_LIMIT, kRequestMemoryBytes,
                             MHD_OPTION_END);
  if (daemon_ == nullptr) {
    return MakeError(ErrorKind::kIo, fmt::format("cannot serve on {}: the HTTP server did not start", where));
  }
  listen_fd_ = -1;  // the daemon's now
  return Status::Ok();
}

Status MetricsServer::Run() {
  if (daemon_ == nullptr) return MakeError(ErrorKind::kIo, "serve: Run() before a successful Bind()");
  const MHD_DaemonInfo* info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_EPOLL_FD);
  if (info == nullptr) return MakeError(ErrorKind::kIo, "serve: the HTTP server has no epoll descriptor");
  const int epoll_fd = info->epoll_fd;
  while (!stop_.load()) {
    AddPendingConnections();
    // libmicrohttpd's own deadline (a connection timing out, data already buffered), else sleep
    // until a socket or Stop()/AddConnection() wakes us, but never longer than kIdleTickMs: at the
    // connection limit the library takes the listening socket out of its epoll set and puts it
    // back only at the start of a later MHD_run, which no socket event would bring about.
    constexpr MHD_UNSIGNED_LONG_LONG kIdleTickMs = 250;
    MHD_UNSIGNED_LONG_LONG timeout_ms = kIdleTickMs;
    MHD_UNSIGNED_LONG_LONG mhd_timeout = 0;
    if (MHD_get_timeout(daemon_, &mhd_timeout) == MHD_YES) timeout_ms = std::min(mhd_timeout, kIdleTickMs);
    pollfd fds[2] = {{epoll_fd, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(timeout_ms));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return MakeError(ErrorKind::kIo, fmt::format("serving on {}:{} failed: poll: {}", options_.listen.host,
                                                   port_, strerror(errno)));
    }
    if ((fds[1].revents & POLLIN) != 0) {
      std::uint64_t count = 0;
      (void)!::read(wake_fd_, &count, sizeof count);
    }
    if (stop_.load()) break;
    AddPendingConnections();
    if (MHD_run(daemon_) != MHD_YES) {
      return MakeError(ErrorKind::kIo, fmt::format("serving on {}:{} failed", options_.listen.host, port_));
    }
  }
  return Status::Ok();
}

void MetricsServer::Stop() {
  stop_.store(true);
  if (wake_fd_ >= 0) {
    const std::uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
}

void MetricsServer::AddConnection(int fd) {
  {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    pending_fds_.push_back(fd);
  }
  if (wake_fd_ >= 0) {
    const std::uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
}

void MetricsServer::AddPendingConnections() {
  std::vector<int> fds;
  {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    fds.swap(pending_fds_);
  }
  for (int fd : fds) {
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0 || peer_len == 0) {
      // A socketpair's peer has no address worth the name; libmicrohttpd wants one all the same.
      peer = {};
      peer.ss_family = AF_UNIX;
      peer_len = sizeof(sa_family_t);
    }
    // libmicrohttpd owns (and closes) fd from here, whether it accepts it or not.
    (void)MHD_add_connection(daemon_, fd, reinterpret_cast<sockaddr*>(&peer), peer_len);
  }
}

MetricsServer::Answer MetricsServer::Respond(const std::string& method, const std::string& url) {
  Answer answer;
  if (url != "/metrics" && url != "/") {
    answer.status = 404;
    answer.content_type = "text/plain; charset=utf-8";
    answer.body = "not found: dlbench serve answers /metrics and /\n";
    return answer;
  }
  if (method != "GET" && method != "HEAD") {
    answer.status = 405;
    answer.content_type = "text/plain; charset=utf-8";
    answer.body = "method not allowed: GET or HEAD\n";
    answer.allow_header = true;
    return answer;
  }
  if (url == "/") {
    answer.content_type = "text/html; charset=utf-8";
    answer.body = fmt::format(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>dlbench {}</title></head>"
        "<body><h1>dlbench serve</h1><p>Store: {}</p>"
        "<p><a href=\"/metrics\">/metrics</a> (Prometheus text format)</p></body></html>\n",
        EscapeHtml(kVersion), EscapeHtml(store_.Describe()));
    return answer;
  }
  auto text = Scrape();
  if (!text.ok()) {
    answer.status = 500;
    answer.content_type = "text/plain; charset=utf-8";
    answer.body = text.error().message + "\n";
    return answer;
  }
  answer.content_type = "text/plain; version=0.0.4; charset=utf-8";
  answer.body = std::move(*text);
  return answer;
}

Result<std::string> MetricsServer::Scrape() {
  ExpositionInput input;
  {
    // The store handle is not for concurrent use; Scrape() is public, so it may be.
    std::lock_guard<std::mutex> lock(store_mutex_);
    auto collected = CollectLatestCells(store_);
    if (!collected.ok()) return collected.error();
    input = std::move(collected).value();
  }
  input.with_progress = true;
  input.progress = ReadActiveProgress(options_.db_path);
  input.regression_threshold = options_.regression_threshold;
  return RenderExposition(input);
}

}  // namespace dlbench::report
