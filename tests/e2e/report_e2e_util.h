// Shared by the report end-to-end tests: a results database written through the store API with
// known numbers and hostile names, free loopback ports, and bounded HTTP polling.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "e2e_util.h"
#include "store/result_store.h"

namespace dlbench::e2e {

inline constexpr char kHostileModel[] = "<script>alert(1)</script>";

// A path to an executable named `name` in PATH, or "" when there is none.
inline std::string FindInPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = dirs.find(':', start);
    const std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

// A loopback port nobody listens on now (the kernel's choice; a race with another process is
// possible but harmless for tests that fail loudly on bind errors).
inline int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// Polls `done` every 200 ms until it returns true or `timeout_s` passes.
inline bool WaitFor(const std::function<bool()>& done, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return done();
}

// 40 steps of rank 0, the first 3 warm-up (2.5x the measured time; the very first takes
// `first_step_ms` instead when that is positive, as an autotuning step would).
inline record::CellRecord ReportCell(int index, const std::string& model, const std::string& scenario,
                                     int batch, double samples_per_s, std::int64_t t0_ns,
                                     double first_step_ms = 0) {
  record::CellRecord c;
  c.index = index;
  c.params = {{"model", model},      {"scenario", scenario}, {"batch_size", batch},
              {"precision", "fp32"}, {"device", "cpu"},      {"strategy", "none"}};
  c.key = "batch_size=" + std::to_string(batch) + ",device=cpu,model=" + model +
          ",precision=fp32,scenario=" + scenario + ",strategy=none";
  c.cell_id = c.key + "#r0";
  c.label = model + " " + scenario + " bs=" + std::to_string(batch);
  c.outcome = record::Outcome::kOk;
  c.verdict = record::Verdict::kValid;
  c.window = record::MeasuredWindow{3, 37};  // 40 steps below
  c.warmup_rule = "mser5";
  c.started_wall_ns = 1'760'000'000'000'000'000;
  c.finished_wall_ns = c.started_wall_ns + 2'000'000'000;
  const double step_ns = 1e9 * batch / samples_per_s;
  std::int64_t t = t0_ns;
  for (int i = 0; i < 40; ++i) {
    auto d = static_cast<std::int64_t>(i < 3 ? step_ns * 2.5 : step_ns * (1.0 + 0.01 * (i % 5)));
    if (i == 0 && first_step_ms > 0) d = static_cast<std::int64_t>(first_step_ms * 1e6);
    record::StepRecord r{t,
                         t + d,
                         d / 10,
                         d * 8 / 10,
                         d / 20,
                         static_cast<std::uint32_t>(batch),
                         record::kHasDataWait | record::kHasCompute | record::kHasComm};
    c.steps.push_back({0, r});
    t += d + 50'000;
  }
  for (int k = 0; k < 10; ++k) {
    const std::int64_t ts = t0_ns + k * (t - t0_ns) / 10;
    c.series.push_back({ts, "gpu0.sm_util_pct", 60.0 + k});
    c.series.push_back({ts, "gpu0.power_w", 200.0 + 3 * k});
    c.series.push_back({ts, "gpu0.mem_used_bytes", 2.0e9 + 1e7 * k});
  }
  c.metrics = {{"samples_per_s", samples_per_s, "1/s"},    {"step_time_mean_ns", step_ns, "ns"},
               {"step_time_p50_ns", step_ns * 1.01, "ns"}, {"step_time_p99_ns", step_ns * 1.04, "ns"},
               {"energy_per_sample_j", 0.25, "J"},         {"gpu_util_mean_pct", 64.5, "%"}};
  return c;
}

struct ReportDb {
  std::int64_t baseline_run = 0;
  std::int64_t run = 0;
};

// Two runs of one matrix (a hostile model name and a plain one; training over four batch sizes,
// inference over two). The second run's plain model at batch 8 is 20% slower: a regression.
// `first_step_ms` > 0 makes every cell's first warm-up step that long (ReportCell).
inline ReportDb WriteReportDb(const std::string& db_path, double first_step_ms = 0) {
  ReportDb out;
  auto opened = store::OpenSqliteStore(db_path);
  EXPECT_TRUE(opened.ok()) << (opened.ok() ? "" : opened.error().message);
  if (!opened.ok()) return out;
  store::ResultStore& s = **opened;
  for (int r = 0; r < 2; ++r) {
    record::RunRecord run;
    run.name = r == 0 ? "baseline" : "nightly </title><script>alert(3)</script>";
    run.matrix_path = "matrix.yaml";
    run.matrix_text = "name: report-e2e\n";
    run.started_wall_ns = 1'760'000'000'000'000'000 + r * 86'400'000'000'000;
    run.environment = {{"host", {{"hostname", "e2e-host"}, {"os", "Debian GNU/Linux 12"}}},
                       {"warnings", {"log line <img src=x onerror=alert(4)>"}}};
    run.environment_hash = r == 0 ? "env-a" : "env-b";
    run.tool_version = "0.1.0";
    run.total_cells = 12;
    auto id = s.BeginRun(run);
    EXPECT_TRUE(id.ok());
    if (!id.ok()) return out;
    (r == 0 ? out.baseline_run : out.run) = *id;
    int index = 0;
    std::int64_t t0 = 10'000'000'000;
    for (const char* model_name : {kHostileModel, "resnet50"}) {
      const std::string model = model_name;
      const std::pair<int, double> curve[] = {{8, 400}, {16, 700}, {32, 900}, {64, 920}};
      for (const auto& [bs, tput] : curve) {
        const double slowdown = (r == 1 && model == "resnet50" && bs == 8) ? 0.8 : 1.0;
        auto c = ReportCell(index++, model, "train", bs, tput * slowdown, t0, first_step_ms);
        c.run_id = *id;
        t0 += 5'000'000'000;
        EXPECT_TRUE(s.PutCell(c).ok());
      }
      for (int bs : {1, 4}) {
        auto c = ReportCell(index++, model, "infer", bs, 100.0 * bs, t0, first_step_ms);
        c.run_id = *id;
        t0 += 5'000'000'000;
        EXPECT_TRUE(s.PutCell(c).ok());
      }
    }
    EXPECT_TRUE(
        s.SetRunStatus(*id, record::RunStatus::kCompleted, run.started_wall_ns + 60'000'000'000).ok());
  }
  return out;
}

}  // namespace dlbench::e2e
