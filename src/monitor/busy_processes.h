// Which other processes used the CPU while a cell ran, so a `contended` verdict can name them
// (issue 17: "naming what else ran"). Two snapshots of every /proc/<pid>/stat, before and after
// the cell; their difference per process, outside the driver's own process tree.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "monitor/procfs_sampler.h"

namespace dlbench::monitor {

struct ProcessCpu {
  pid_t pid = 0;
  pid_t ppid = 0;
  std::string comm;         // the name in /proc/<pid>/stat's parentheses
  std::uint64_t ticks = 0;  // utime + stime
};

// Every process /proc lists whose stat could be read (one that ends while it is read is skipped).
std::vector<ProcessCpu> SnapshotProcesses(const ProcFs& fs);

struct BusyProcess {
  pid_t pid = 0;
  std::string comm;
  double cpu_s = 0;
};

// The at most `n` processes that used the most CPU between `before` and `after`, at least
// `min_cpu_s` each, most first. A process that started in between counts from zero (it is
// absent from `before`, or present with another name: a reused pid); one that ended in between
// is not seen. `self` and every process whose parent chain in either snapshot reaches it are left
// out: the driver and the runner it started are not "other".
std::vector<BusyProcess> BusiestOthers(const std::vector<ProcessCpu>& before,
                                       const std::vector<ProcessCpu>& after, pid_t self, long ticks_per_s,
                                       std::size_t n, double min_cpu_s);

// "cc1plus (pid 4242) 3.1 CPU-s, python3 (pid 77) 0.8 CPU-s"; empty for none.
std::string DescribeBusiest(const std::vector<BusyProcess>& busiest);

}  // namespace dlbench::monitor
