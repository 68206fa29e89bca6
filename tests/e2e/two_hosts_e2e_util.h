// Two "hosts" on one machine for the group-run e2e tests (torchrun_group_e2e_test.cc,
// group_hosts_e2e_test.cc): two network namespaces joined by a veth pair. Root only; the tests skip
// without it or without `ip`.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/subprocess.h"
#include "e2e_util.h"
#include "launcher_e2e_util.h"

namespace dlbench::e2e {

inline constexpr const char* kIp = "/usr/sbin/ip";
inline constexpr const char* kTorchrun = "/usr/bin/torchrun";

// torchrun 1.13's options as torchrun_e2e_test.cc explains them (underscores; `-r 1 -t 1
// --log_dir` against its crash under Python 3.11; a 0.1 s monitor interval), then `rendezvous`.
inline std::vector<std::string> TorchrunArgs(const TempDir& dir, const std::string& logs,
                                             const std::vector<std::string>& rendezvous) {
  std::vector<std::string> argv = {kTorchrun, "--no_python", "--monitor_interval", "0.1",     "-r", "1",
                                   "-t",      "1",           "--log_dir",          dir / logs};
  argv.insert(argv.end(), rendezvous.begin(), rendezvous.end());
  return argv;
}

// Two "hosts": network namespaces joined by a veth pair, 10.231.N.1 and 10.231.N.2 (N from the
// test's pid), their loopbacks up. The namespaces (and with them the veth pair) are deleted when
// the object goes, whatever happened.
class TwoHosts {
 public:
  explicit TwoHosts(const TempDir& dir) : dir_(dir) {
    const std::string tag = std::to_string(::getpid() % 100000);
    ns_[0] = "dlbench" + tag + "a";
    ns_[1] = "dlbench" + tag + "b";
    const std::string net = "10.231." + std::to_string(::getpid() % 250) + ".";
    addr_[0] = net + "1";
    addr_[1] = net + "2";
  }
  ~TwoHosts() {
    for (const std::string& ns : ns_) (void)RunCommand({kIp, "netns", "del", ns}, dir_);
  }
  TwoHosts(const TwoHosts&) = delete;
  TwoHosts& operator=(const TwoHosts&) = delete;

  ::testing::AssertionResult Start() {
    const std::string veth0 = "v" + ns_[0].substr(7), veth1 = "v" + ns_[1].substr(7);
    const std::vector<std::vector<std::string>> steps = {
        {kIp, "netns", "add", ns_[0]},
        {kIp, "netns", "add", ns_[1]},
        {kIp, "link", "add", veth0, "netns", ns_[0], "type", "veth", "peer", "name", veth1, "netns", ns_[1]},
        {kIp, "-n", ns_[0], "addr", "add", addr_[0] + "/24", "dev", veth0},
        {kIp, "-n", ns_[1], "addr", "add", addr_[1] + "/24", "dev", veth1},
        {kIp, "-n", ns_[0], "link", "set", veth0, "up"},
        {kIp, "-n", ns_[1], "link", "set", veth1, "up"},
        {kIp, "-n", ns_[0], "link", "set", "lo", "up"},
        {kIp, "-n", ns_[1], "link", "set", "lo", "up"}};
    for (const auto& argv : steps) {
      auto r = RunCommand(argv, dir_);
      if (r.exit_code != 0)
        return ::testing::AssertionFailure() << argv[1] << " " << argv[2] << ": " << r.err;
    }
    return ::testing::AssertionSuccess();
  }
  // `argv` run inside host i's namespace.
  std::vector<std::string> In(int i, const std::vector<std::string>& argv) const {
    std::vector<std::string> out = {kIp, "netns", "exec", ns_[static_cast<std::size_t>(i)]};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }
  const std::string& addr(int i) const { return addr_[static_cast<std::size_t>(i)]; }

 private:
  const TempDir& dir_;
  std::string ns_[2];
  std::string addr_[2];
};

// `dlbench_argv` under one torchrun per host of `hosts`, one rank each (host 0 the master:
// torchrun's static rendezvous on port 29500), host 1's in the background; success when both exit
// 0 (host 0 within `host0_timeout_s`, host 1 within 30 s after), else what each printed.
inline ::testing::AssertionResult RunOneTorchrunPerHost(const TwoHosts& hosts, const TempDir& dir,
                                                        const std::vector<std::string>& dlbench_argv,
                                                        int host0_timeout_s) {
  std::vector<std::string> argv[2];
  for (int i = 0; i < 2; ++i) {
    argv[i] = TorchrunArgs(dir, "logs" + std::to_string(i),
                           {"--nnodes", "2", "--node_rank", std::to_string(i), "--nproc_per_node", "1",
                            "--master_addr", hosts.addr(0), "--master_port", "29500"});
    argv[i].insert(argv[i].end(), dlbench_argv.begin(), dlbench_argv.end());
    argv[i] = hosts.In(i, argv[i]);
  }
  SpawnOptions second;
  second.argv = argv[1];
  second.stdout_path = dir / "host1.out";
  second.stderr_path = dir / "host1.err";
  auto host1 = Subprocess::Spawn(second);
  if (!host1.ok()) return ::testing::AssertionFailure() << host1.error().message;
  auto host0 = RunFor(argv[0], dir, {}, "host0", host0_timeout_s);
  std::optional<ExitStatus> st;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!(st = host1->TryWait()) && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!st) host1->Terminate(2000);
  const std::string host1_err = ReadFile(dir / "host1.err").ok() ? *ReadFile(dir / "host1.err") : "";
  if (host0.exit_code != 0) {
    return ::testing::AssertionFailure() << "host 0 exited " << host0.exit_code << "\n"
                                         << host0.out << host0.err << "\n--- host 1:\n"
                                         << host1_err;
  }
  if (!st || !st->success()) return ::testing::AssertionFailure() << "host 1 failed:\n" << host1_err;
  return ::testing::AssertionSuccess();
}

}  // namespace dlbench::e2e
