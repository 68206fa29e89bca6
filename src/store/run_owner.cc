#include <fmt/core.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>

#include "common/clock.h"
#include "store/result_store.h"

namespace dlbench::store {

RunLockOwner ThisProcessAsOwner() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0) name[0] = '\0';
  return RunLockOwner{static_cast<std::int64_t>(getpid()), name, WallNowNs()};
}

std::string DescribeHolder(const RunLockOwner& owner) {
  std::string who = owner.pid > 0 ? fmt::format("pid {}", owner.pid) : "another process";
  if (!owner.host.empty()) who += " on host " + owner.host;
  if (owner.since_wall_ns > 0) {
    who +=
        fmt::format(" (since {:.0f} s ago)", std::max(0.0, NsToSeconds(WallNowNs() - owner.since_wall_ns)));
  }
  return who;
}

}  // namespace dlbench::store
