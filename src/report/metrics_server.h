// `dlbench serve`: the Prometheus exposition over HTTP (R17). GET /metrics answers
// RenderExposition over the store's latest cells and the active run's progress, read afresh on
// every scrape; GET / answers a short page that links to it.
//
// The server is event-driven (GNU libmicrohttpd with epoll, driven by Run() on one thread), so an
// idle or slow client costs a file descriptor, never a worker: a scrape is answered while any
// number of connections up to kMaxConnections sit idle. Limits (docs/limits.md): kMaxConnections
// open connections (more are closed at once), kConnectionTimeoutS of inactivity closes a
// connection, and a request's line and headers must fit kRequestMemoryBytes (a larger one gets
// 431, or 414 for its URI). Bodies are discarded; only GET and HEAD are answered (405 otherwise).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"
#include "store/result_store.h"

struct MHD_Daemon;

namespace dlbench::report {

inline constexpr unsigned kMaxConnections = 256;
inline constexpr unsigned kConnectionTimeoutS = 10;
inline constexpr std::size_t kRequestMemoryBytes = std::size_t{32} * 1024;

struct ListenAddress {
  std::string host = "127.0.0.1";  // loopback unless asked otherwise: results can be private
  int port = 9464;                 // the port registered for dlbench in Prometheus's port list
};

// "127.0.0.1:9464", "0.0.0.0:9464", "[::1]:9464", "localhost:0" (0: any free port).
// kInvalidInput naming the expected form.
Result<ListenAddress> ParseListenAddress(const std::string& text);

struct ServeOptions {
  ListenAddress listen;
  std::string db_path;  // for the progress file next to it
  double regression_threshold = 0.05;
  // Seconds of inactivity after which a connection is closed (at least 1). The fuzz target
  // shortens it: a request libmicrohttpd neither answers nor closes on end of input (an unknown
  // Transfer-Encoding) is let go only by this timeout.
  unsigned connection_timeout_s = kConnectionTimeoutS;
};

class MetricsServer {
 public:
  // The store is read under a mutex (Scrape() may be called from any thread); it must outlive the
  // server.
  MetricsServer(store::ResultStore& store, ServeOptions options);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds and listens on the address (without SO_REUSEPORT: a second server on an address in use
  // fails here) and prepares the server. kIo naming the address and the reason ("address already
  // in use", "not an address of this host", ...). Call once, before Run().
  Status Bind();
  // The bound port (the chosen one when the address asked for port 0). Valid after Bind().
  int port() const { return port_; }
  // Serves on the calling thread until Stop() is called; kIo when the event loop fails.
  Status Run();
  // Ends Run() from any thread (not from a signal handler). Safe to call more than once, and
  // before Run() (which then returns at once).
  void Stop();
  // Serves an already connected stream socket as if it had been accepted from the listening one
  // (the HTTP fuzz target and tests hand it one end of a socketpair). Takes ownership of fd; may
  // be called from any thread after Bind(); Run()'s loop picks it up.
  void AddConnection(int fd);
  // What GET /metrics answers; kStore when the store cannot be read.
  Result<std::string> Scrape();

  struct Answer {
    unsigned status = 200;
    std::string content_type;
    std::string body;
    bool allow_header = false;  // 405: "Allow: GET, HEAD"
  };
  // The answer to a request for `path` (without its query) by `method`: the routes. Called by the
  // HTTP layer on Run()'s thread.
  Answer Respond(const std::string& method, const std::string& path);

 private:
  void AddPendingConnections();

  store::ResultStore& store_;
  ServeOptions options_;
  std::mutex store_mutex_;
  int port_ = 0;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: Stop() and AddConnection() wake Run()'s poll
  MHD_Daemon* daemon_ = nullptr;
  std::atomic<bool> stop_{false};
  std::mutex pending_mutex_;
  std::vector<int> pending_fds_;  // from AddConnection, for Run()'s thread
};

}  // namespace dlbench::report
