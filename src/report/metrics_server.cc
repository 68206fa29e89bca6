#include "report/metrics_server.h"

#include <fmt/format.h>
#include <httplib.h>

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

MetricsServer::MetricsServer(store::ResultStore& store, ServeOptions options)
    : store_(store), options_(std::move(options)), server_(std::make_unique<httplib::Server>()) {
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    auto text = Scrape();
    if (!text.ok()) {
      res.status = 500;
      res.set_content(text.error().message + "\n", "text/plain; charset=utf-8");
      return;
    }
    res.set_content(*text, "text/plain; version=0.0.4; charset=utf-8");
  });
  server_->Get("/", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        fmt::format("<!doctype html><html><head><meta charset=\"utf-8\"><title>dlbench {}</title></head>"
                    "<body><h1>dlbench serve</h1><p>Store: {}</p>"
                    "<p><a href=\"/metrics\">/metrics</a> (Prometheus text format)</p></body></html>\n",
                    EscapeHtml(kVersion), EscapeHtml(store_.Describe())),
        "text/html; charset=utf-8");
  });
}

MetricsServer::~MetricsServer() { Stop(); }

Status MetricsServer::Bind() {
  if (options_.listen.port == 0) {
    port_ = server_->bind_to_any_port(options_.listen.host);
    if (port_ <= 0) {
      return MakeError(ErrorKind::kIo, fmt::format("cannot listen on {}:0", options_.listen.host));
    }
    return Status::Ok();
  }
  if (!server_->bind_to_port(options_.listen.host, options_.listen.port)) {
    return MakeError(ErrorKind::kIo,
                     fmt::format("cannot listen on {}:{} (in use, or not an address of this host)",
                                 options_.listen.host, options_.listen.port));
  }
  port_ = options_.listen.port;
  return Status::Ok();
}

Status MetricsServer::Run() {
  if (!server_->listen_after_bind()) {
    return MakeError(ErrorKind::kIo, fmt::format("serving on {}:{} failed", options_.listen.host, port_));
  }
  return Status::Ok();
}

void MetricsServer::Stop() {
  if (server_) server_->stop();
}

Result<std::string> MetricsServer::Scrape() {
  ExpositionInput input;
  {
    // One store handle serves every worker thread; SQLite connections are not shared concurrently.
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
