// Two "hosts" on one machine for the group-run e2e tests (torchrun_group_e2e_test.cc,
// group_hosts_e2e_test.cc): two network namespaces joined by a veth pair. Root only; the tests skip
// without it or without `ip`.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "e2e_util.h"

namespace dlbench::e2e {

inline constexpr const char* kIp = "/usr/sbin/ip";

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

}  // namespace dlbench::e2e
