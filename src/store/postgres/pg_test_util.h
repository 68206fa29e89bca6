// Tests against a real PostgreSQL server (docs/storage.md, "The test cluster"): the cluster the
// CTest fixture "postgres" started (scripts/pg-test-cluster.sh, tests/e2e/postgres.cmake), a
// fresh database per test, and private clusters for tests that stop and start their server.
//
// $DLBENCH_TEST_PG_URL (a superuser's URL) names another server instead of the fixture's. Without
// a server the tests skip, saying why; with $DLBENCH_REQUIRE_POSTGRES=1 (scripts/test.sh, CI) they
// fail instead.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <variant>

#include "common/files.h"
#include "common/subprocess.h"
#include "store/postgres/pg_connection.h"

namespace dlbench::store::testing {

struct PgCluster {
  std::string admin_url;     // a superuser on database "postgres"
  std::string password_url;  // role dlbench_pw, which must give `password` (empty: no such role)
  std::string password;
  std::string state_dir;  // empty for an external server

  // The superuser's URL of database `name` on this server.
  std::string DatabaseUrl(const std::string& name) const {
    const std::string base = admin_url.substr(0, admin_url.find('?'));
    return base.substr(0, base.rfind('/') + 1) + name;
  }
};

inline bool PostgresRequired() {
  const char* required = std::getenv("DLBENCH_REQUIRE_POSTGRES");
  return required != nullptr && std::string(required) == "1";
}

// KEY=VALUE lines of a cluster.env file.
inline std::map<std::string, std::string> ReadClusterEnv(const std::string& state_dir) {
  std::map<std::string, std::string> env;
  auto text = ReadFile(state_dir + "/cluster.env");
  if (!text.ok()) return env;
  std::size_t start = 0;
  while (start < text->size()) {
    std::size_t end = text->find('\n', start);
    if (end == std::string::npos) end = text->size();
    const std::string line = text->substr(start, end - start);
    const std::size_t eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
    start = end + 1;
  }
  return env;
}

// The cluster the fixture started (or $DLBENCH_TEST_PG_URL), or why there is none.
inline std::variant<PgCluster, std::string> TestCluster() {
  if (const char* url = std::getenv("DLBENCH_TEST_PG_URL"); url != nullptr && *url != '\0') {
    PgCluster cluster;
    cluster.admin_url = url;
    return cluster;
  }
  const std::string state_dir = DLBENCH_PG_TEST_STATE;
  if (auto why = ReadFile(state_dir + "/unavailable"); why.ok()) {
    return "no PostgreSQL test server: " + why->substr(0, why->find('\n'));
  }
  auto env = ReadClusterEnv(state_dir);
  if (env.count("DLBENCH_PG_URL") == 0) {
    return "no PostgreSQL test server: " + state_dir +
           "/cluster.env is missing (the CTest fixture PostgresTestClusterStart starts one; run "
           "through ctest, or set DLBENCH_TEST_PG_URL)";
  }
  PgCluster cluster;
  cluster.admin_url = env["DLBENCH_PG_URL"];
  cluster.password_url = env["DLBENCH_PG_PW_URL"];
  cluster.password = env["DLBENCH_PG_PASSWORD"];
  cluster.state_dir = state_dir;
  return cluster;
}

// Declares `const PgCluster& name` in a test body, or skips (fails when PostgreSQL is required).
#define DLBENCH_PG_CLUSTER_OR_SKIP(name)                                                \
  auto name##_found = ::dlbench::store::testing::TestCluster();                         \
  if (std::holds_alternative<std::string>(name##_found)) {                              \
    if (::dlbench::store::testing::PostgresRequired()) {                                \
      FAIL() << std::get<std::string>(name##_found) << " (DLBENCH_REQUIRE_POSTGRES=1)"; \
    }                                                                                   \
    GTEST_SKIP() << std::get<std::string>(name##_found);                                \
  }                                                                                     \
  const ::dlbench::store::testing::PgCluster& name =                                    \
      std::get<::dlbench::store::testing::PgCluster>(name##_found)

// A database of its own for one test, dropped (with its connections) when destroyed.
class ScratchDatabase {
 public:
  explicit ScratchDatabase(const PgCluster& cluster, const std::string& tag = "t") : cluster_(cluster) {
    static std::atomic<int> counter{0};
    std::random_device random;
    name_ = "dlbench_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
            std::to_string(random() % 100000);
    auto admin = pg::Connection::Open(cluster_.admin_url);
    if (!admin.ok()) {
      error_ = admin.error().message;
      return;
    }
    // Test code: the name is made above from digits and letters; DDL takes no parameters.
    Status made = admin->Execute("CREATE DATABASE " + name_);
    if (!made.ok()) error_ = made.error().message;
  }
  ~ScratchDatabase() {
    if (!error_.empty()) return;
    auto admin = pg::Connection::Open(cluster_.admin_url);
    if (admin.ok()) (void)admin->Execute("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  }
  ScratchDatabase(const ScratchDatabase&) = delete;
  ScratchDatabase& operator=(const ScratchDatabase&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& name() const { return name_; }
  std::string url() const { return cluster_.DatabaseUrl(name_); }

 private:
  PgCluster cluster_;
  std::string name_;
  std::string error_;
};

// A cluster of the test's own (scripts/pg-test-cluster.sh in a scratch folder), for tests that stop
// and start their server; stopped and removed when destroyed.
class PrivateCluster {
 public:
  PrivateCluster() {
    state_dir_ = (std::filesystem::temp_directory_path() /
                  ("dlbench-pg-private-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++)))
                     .string();
    const int rc = Script("start");
    if (rc == 77) {
      auto why = ReadFile(state_dir_ + "/unavailable");
      skip_reason_ = "no PostgreSQL server: " + (why.ok() ? why->substr(0, why->find('\n')) : "unknown");
      return;
    }
    if (rc != 0) {
      error_ =
          "scripts/pg-test-cluster.sh start failed with " + std::to_string(rc) + ": " + TailLines(log_, 20);
      return;
    }
    auto env = ReadClusterEnv(state_dir_);
    cluster_.admin_url = env["DLBENCH_PG_URL"];
    cluster_.password_url = env["DLBENCH_PG_PW_URL"];
    cluster_.password = env["DLBENCH_PG_PASSWORD"];
    cluster_.state_dir = state_dir_;
  }
  ~PrivateCluster() {
    if (skip_reason_.empty()) (void)Script("stop");
    std::error_code ec;
    std::filesystem::remove_all(state_dir_, ec);
  }
  PrivateCluster(const PrivateCluster&) = delete;
  PrivateCluster& operator=(const PrivateCluster&) = delete;

  const std::string& skip_reason() const { return skip_reason_; }
  const std::string& error() const { return error_; }
  const PgCluster& cluster() const { return cluster_; }
  // Stops the server (fast shutdown: connections are closed) and starts it again on its port.
  bool Pause() { return Script("pause") == 0; }
  bool Resume() { return Script("resume") == 0; }

 private:
  int Script(const std::string& command) {
    SpawnOptions options;
    options.argv = {std::string(DLBENCH_SOURCE_DIR) + "/scripts/pg-test-cluster.sh", command, state_dir_};
    log_ = state_dir_ + ".log";
    options.stdout_path = log_;
    options.stderr_path = log_ + "." + command;
    auto child = Subprocess::Spawn(options);
    if (!child.ok()) return -1;
    const ExitStatus status = child->Wait();
    if (status.code != 0) log_ = options.stderr_path;
    return status.signaled ? 128 + status.signal : status.code;
  }

  static inline std::atomic<int> counter_{0};
  std::string state_dir_;
  std::string log_;
  std::string skip_reason_;
  std::string error_;
  PgCluster cluster_;
};

// Declares `PrivateCluster name` in a test body that has started, or skips/fails as above.
#define DLBENCH_PRIVATE_PG_CLUSTER_OR_SKIP(name)                       \
  ::dlbench::store::testing::PrivateCluster name;                      \
  if (!name.skip_reason().empty()) {                                   \
    if (::dlbench::store::testing::PostgresRequired()) {               \
      FAIL() << name.skip_reason() << " (DLBENCH_REQUIRE_POSTGRES=1)"; \
    }                                                                  \
    GTEST_SKIP() << name.skip_reason();                                \
  }                                                                    \
  ASSERT_TRUE(name.error().empty()) << name.error()

}  // namespace dlbench::store::testing
