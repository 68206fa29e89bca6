// `dlbench serve`: the Prometheus exposition over HTTP (R17). GET /metrics answers
// RenderExposition over the store's latest cells and the active run's progress, read afresh on
// every scrape; GET / answers a short page that links to it.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "common/error.h"
#include "store/result_store.h"

namespace httplib {
class Server;
}

namespace dlbench::report {

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
};

class MetricsServer {
 public:
  // The store is read under a mutex from the server's worker threads; it must outlive the server.
  MetricsServer(store::ResultStore& store, ServeOptions options);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds the listening socket. kIo naming the address when it cannot (in use, not local).
  Status Bind();
  // The bound port (the chosen one when the address asked for port 0). Valid after Bind().
  int port() const { return port_; }
  // Serves until Stop() is called; kIo when the server fails.
  Status Run();
  // Ends Run() from any thread (not from a signal handler). Safe to call more than once.
  void Stop();
  // What GET /metrics answers; kStore when the store cannot be read.
  Result<std::string> Scrape();

 private:
  store::ResultStore& store_;
  ServeOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::mutex store_mutex_;
  int port_ = 0;
};

}  // namespace dlbench::report
