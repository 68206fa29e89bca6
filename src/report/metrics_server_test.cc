// `dlbench serve`'s HTTP server on a real loopback socket: the routes, an address already in use,
// and idle or half-sent connections that must not hold up a scrape.
#include "report/metrics_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "report/test_store.h"

namespace dlbench::report {
namespace {

using testing::MakeCell;
using testing::MemoryStore;

// How long a client waits for a whole answer; a few seconds, as a scraper would (Prometheus's
// default scrape timeout is 10 s).
constexpr int kClientTimeoutMs = 5000;

int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` on a new connection and reads until the server closes it or the client's
// timeout passes; what arrived (empty on a timeout with nothing read).
std::string Exchange(int port, const std::string& request, bool* timed_out = nullptr) {
  const int fd = Connect(port);
  if (fd < 0) return "";
  std::size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  std::string answer;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kClientTimeoutMs);
  if (timed_out != nullptr) *timed_out = false;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      if (timed_out != nullptr) *timed_out = true;
      break;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[65536];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    answer.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return answer;
}

std::string Get(int port, const std::string& path, bool* timed_out = nullptr) {
  return Exchange(port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                  timed_out);
}

class MetricsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto run_id = store_.BeginRun(store::RunRecord{});
    ASSERT_TRUE(run_id.ok());
    ASSERT_TRUE(store_.PutCell(MakeCell(*run_id, 0, "resnet50", 32, 412.5)).ok());
  }
  void Start() {
    ServeOptions options;
    options.listen = {"127.0.0.1", 0};
    options.db_path = "/nonexistent/dlbench-test.db";  // no progress file
    server_ = std::make_unique<MetricsServer>(store_, options);
    Status bound = server_->Bind();
    ASSERT_TRUE(bound.ok()) << bound.error().message;
    ASSERT_GT(server_->port(), 0);
    thread_ = std::thread([this] { served_ = server_->Run(); });
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
    EXPECT_TRUE(served_.ok()) << served_.error().message;
  }
  MemoryStore store_;
  std::unique_ptr<MetricsServer> server_;
  std::thread thread_;
  Status served_;
};

TEST_F(MetricsServerTest, AnswersMetricsTheIndexAndNothingElse) {
  Start();
  const std::string metrics = Get(server_->port(), "/metrics");
  EXPECT_EQ(metrics.rfind("HTTP/1.1 200", 0), 0u) << metrics;
  EXPECT_NE(metrics.find("text/plain; version=0.0.4; charset=utf-8"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("dlbench_samples_per_second{"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("dlbench_build_info{"), std::string::npos) << metrics;

  const std::string index = Get(server_->port(), "/");
  EXPECT_EQ(index.rfind("HTTP/1.1 200", 0), 0u) << index;
  EXPECT_NE(index.find("<a href=\"/metrics\">"), std::string::npos) << index;

  EXPECT_EQ(Get(server_->port(), "/nothing-here").rfind("HTTP/1.1 404", 0), 0u);
  const std::string post = Exchange(server_->port(),
                                    "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
                                    "Connection: close\r\n\r\nabc");
  EXPECT_EQ(post.rfind("HTTP/1.1 405", 0), 0u) << post;
  const std::string head =
      Exchange(server_->port(), "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
  EXPECT_EQ(head.find("dlbench_build_info"), std::string::npos) << "HEAD answers without a body";

  // Two requests on one connection are answered in order.
  const std::string both = Exchange(server_->port(),
                                    "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
                                    "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const auto second = both.find("HTTP/1.1 200", 1);
  ASSERT_NE(second, std::string::npos) << both;
  EXPECT_NE(both.find("dlbench_build_info", second), std::string::npos);

  // A failing store is a 500 with its message, not a dead server.
  store_.fail_reads = true;
  const std::string failing = Get(server_->port(), "/metrics");
  EXPECT_EQ(failing.rfind("HTTP/1.1 500", 0), 0u) << failing;
  EXPECT_NE(failing.find("test store: reads fail"), std::string::npos) << failing;
  store_.fail_reads = false;
  EXPECT_EQ(Get(server_->port(), "/metrics").rfind("HTTP/1.1 200", 0), 0u);
}

TEST_F(MetricsServerTest, OversizedRequestIsRefusedAndTheServerGoesOn) {
  Start();
  const std::string huge_header = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(1 << 20, 'a') +
                                  "\r\nConnection: close\r\n\r\n";
  const std::string answer = Exchange(server_->port(), huge_header);
  EXPECT_TRUE(answer.empty() || answer.rfind("HTTP/1.1 4", 0) == 0) << answer.substr(0, 200);
  // Just over the request memory: the documented answers (docs/limits.md).
  const std::string big_header =
      "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(kRequestMemoryBytes, 'a') + "\r\n\r\n";
  EXPECT_EQ(Exchange(server_->port(), big_header).rfind("HTTP/1.1 431", 0), 0u);
  const std::string long_uri =
      "GET /" + std::string(kRequestMemoryBytes, 'm') + " HTTP/1.1\r\nHost: x\r\n\r\n";
  EXPECT_EQ(Exchange(server_->port(), long_uri).rfind("HTTP/1.1 414", 0), 0u);
  EXPECT_EQ(Get(server_->port(), "/metrics").rfind("HTTP/1.1 200", 0), 0u);
}

TEST_F(MetricsServerTest, IdleAndHalfSentConnectionsDoNotHoldUpAScrape) {
  Start();
  // Sixteen connections that send nothing and sixteen that stop in the middle of a request line:
  // a server with a fixed pool of workers blocked on them answered nothing for many seconds.
  std::vector<int> idle;
  for (int i = 0; i < 16; ++i) {
    const int fd = Connect(server_->port());
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  for (int i = 0; i < 16; ++i) {
    const int fd = Connect(server_->port());
    ASSERT_GE(fd, 0);
    const std::string partial = "GET /metr";
    ASSERT_EQ(::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL), static_cast<ssize_t>(partial.size()));
    idle.push_back(fd);
  }
  for (int scrape = 0; scrape < 3; ++scrape) {
    bool timed_out = false;
    const std::string answer = Get(server_->port(), "/metrics", &timed_out);
    EXPECT_FALSE(timed_out) << "scrape " << scrape << " waited behind idle connections";
    EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer.substr(0, 200);
    EXPECT_NE(answer.find("dlbench_build_info"), std::string::npos);
  }
  for (int fd : idle) ::close(fd);
}

TEST_F(MetricsServerTest, AtTheConnectionLimitANewConnectionIsServedOnceOthersClose) {
  Start();
  std::vector<int> held;
  for (unsigned i = 0; i < kMaxConnections; ++i) {
    const int fd = Connect(server_->port());
    ASSERT_GE(fd, 0) << i;
    held.push_back(fd);
  }
  // Beyond the limit a connection waits in the listen backlog; its request is answered as soon as
  // slots free up (this stalled for good when the event loop slept without a deadline).
  const int waiting = Connect(server_->port());
  ASSERT_GE(waiting, 0);
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(::send(waiting, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  for (int fd : held) ::close(fd);
  std::string answer;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kClientTimeoutMs);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{waiting, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[65536];
    const ssize_t n = ::recv(waiting, buf, sizeof buf, 0);
    if (n <= 0) break;
    answer.append(buf, static_cast<std::size_t>(n));
  }
  ::close(waiting);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer.substr(0, 200);
}

TEST_F(MetricsServerTest, ASecondServerOnTheSameAddressFailsWithAddressInUse) {
  Start();
  ServeOptions options;
  options.listen = {"127.0.0.1", server_->port()};
  MetricsServer second(store_, options);
  Status bound = second.Bind();
  ASSERT_FALSE(bound.ok()) << "a second server bound the same address (SO_REUSEPORT?)";
  EXPECT_EQ(bound.error().kind, ErrorKind::kIo);
  EXPECT_NE(bound.error().message.find("127.0.0.1:" + std::to_string(server_->port())), std::string::npos)
      << bound.error().message;
  EXPECT_NE(bound.error().message.find("address already in use"), std::string::npos) << bound.error().message;
  // The first one is unharmed.
  EXPECT_EQ(Get(server_->port(), "/metrics").rfind("HTTP/1.1 200", 0), 0u);
}

TEST(MetricsServerBindTest, AnAddressOfAnotherHostIsAClearError) {
  MemoryStore store;
  ServeOptions options;
  options.listen = {"192.0.2.1", 0};  // TEST-NET-1: never an address of this host
  MetricsServer server(store, options);
  Status bound = server.Bind();
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.error().kind, ErrorKind::kIo);
  EXPECT_NE(bound.error().message.find("192.0.2.1"), std::string::npos) << bound.error().message;
}

}  // namespace
}  // namespace dlbench::report
