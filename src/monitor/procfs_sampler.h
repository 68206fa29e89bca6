// Host samplers: the runner's process tree and the whole machine through procfs, and CPU package
// energy through the powercap (RAPL) interface. All OS reads go through the ProcFs seam so tests
// feed canned files (FakeProcFs, monitor/fake_procfs.h, in the test-only dlbench::monitor_fakes).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "monitor/sampler.h"

namespace dlbench::monitor {

// The OS seam: reads of procfs and sysfs. Implementations must be safe to call from the monitor
// thread while other threads use other instances.
class ProcFs {
 public:
  virtual ~ProcFs() = default;
  // The whole file; kNotFound when it does not exist, kIo when it cannot be read.
  virtual Result<std::string> Read(const std::string& path) const = 0;
  // The entry names of a directory (no "." or ".."), in no particular order; kNotFound when the
  // directory does not exist.
  virtual Result<std::vector<std::string>> List(const std::string& path) const = 0;
};

// The real filesystem. Reads with read(2) into a reused buffer: procfs files report size 0, so
// stream helpers that trust st_size would read nothing.
class RealProcFs final : public ProcFs {
 public:
  Result<std::string> Read(const std::string& path) const override;
  Result<std::vector<std::string>> List(const std::string& path) const override;
};

// --- parsers (pure; exposed for tests) ---

// The fields of /proc/<pid>/stat that the sampler uses. Times in clock ticks, rss in pages.
struct ProcStat {
  pid_t pid = 0;
  pid_t ppid = 0;
  std::uint64_t utime = 0, stime = 0;    // this process
  std::uint64_t cutime = 0, cstime = 0;  // its reaped descendants
  std::uint64_t rss_pages = 0;
};
// Parses one stat line. The command name is in parentheses and may itself contain spaces and
// ')', so fields are counted from the last ')'. kInvalidInput on a malformed line.
Result<ProcStat> ParseProcStat(const std::string& text);

// The aggregate "cpu" line of /proc/stat, in ticks. busy excludes idle and iowait; guest time is
// already counted in user time by the kernel, so it is not added again.
// Ticks of the aggregate "cpu" line. busy = user + nice + system + irq + softirq: the work this
// machine did. Idle, iowait and steal are not busy; steal (ticks a virtual CPU was ready to run
// while the hypervisor ran something else) is kept apart, since it is time the guest lost.
struct CpuTimes {
  std::uint64_t busy = 0;
  std::uint64_t total = 0;
  std::uint64_t steal = 0;
  bool has_steal = false;  // the line had the steal field (Linux 2.6.11 and later)
  int cpus = 0;            // the per-CPU "cpuN" lines that follow (0 when the text has none)
};
Result<CpuTimes> ParseCpuTimes(const std::string& proc_stat);
// Whole-machine utilisation between two readings in percent of all CPUs; nullopt when no tick
// elapsed (or the counters went backwards).
std::optional<double> CpuUtilPct(const CpuTimes& before, const CpuTimes& after);
// The same share in CPUs: busy ticks over the elapsed ticks of one CPU (total / cpus), so 2.0 is
// two cores fully busy. nullopt as CpuUtilPct, or without a cpu count.
std::optional<double> CpuBusyCores(const CpuTimes& before, const CpuTimes& after);
// Steal between two readings in percent of all CPUs' elapsed ticks; nullopt as CpuUtilPct, or when
// either reading lacks the field.
std::optional<double> CpuStealPct(const CpuTimes& before, const CpuTimes& after);

// How many CPUs the whole host keeps busy over `span_ms` (two /proc/stat readings around a
// sleep): `dlbench env` and `run` warn before measuring on a busy host (issue 17). nullopt when
// /proc/stat cannot be read twice.
std::optional<double> SampleHostBusyCores(const ProcFs& fs, int span_ms);

// /proc/meminfo: MemTotal and MemAvailable in bytes (the file says "kB" and means KiB).
struct MemInfo {
  std::uint64_t total_bytes = 0;
  std::uint64_t available_bytes = 0;
};
Result<MemInfo> ParseMemInfo(const std::string& text);

// The run-queue wait of one task: the second field of /proc/<pid>/task/<tid>/schedstat (ns spent
// runnable but not running). kInvalidInput on a malformed line.
Result<std::uint64_t> ParseSchedStatWaitNs(const std::string& text);

// The process tree rooted at root (root first). Uses /proc/<pid>/task/<tid>/children (every
// thread's children); on kernels without it (CONFIG_PROC_CHILDREN off) falls back to scanning
// every /proc/<pid>/stat for its ppid. Empty when root does not exist.
std::vector<pid_t> ProcessTree(const ProcFs& fs, pid_t root);
// Whether pid is root or descends from it (walks the ppid chain; cheap for a few pids).
bool IsInTree(const ProcFs& fs, pid_t pid, pid_t root);

// Series: "proc.cpu_s" (user+system CPU seconds of the runner's tree, counter; includes reaped
// children), "proc.rss_bytes" (sum of the tree's RSS: shared pages count once per process),
// "host.cpu_util_pct" (all CPUs, since the previous round; absent on the first round),
// "host.mem_used_bytes" (MemTotal - MemAvailable), "proc.runqueue_wait_s" (the tree's live
// threads' run-queue wait, summed; a thread that ends takes its share with it, and the analysis
// ignores a counter that went backwards).
// The tree (its processes and their threads) is found again every tree_every_n_samples rounds
// (and on SetTargetPid, and on the round after a process of it ended); the rounds between read
// only the known processes' stat and threads' schedstat files. Finding the tree reads every
// thread's children file and lists every task folder: with a runner's ~33 threads, about half of
// a round's opens (docs/monitoring.md). A process or thread that starts between two findings
// counts from the next one, with the CPU time and wait it gathered meanwhile.
class ProcFsSampler final : public Sampler {
 public:
  // ticks_per_s and page_bytes default to sysconf(_SC_CLK_TCK) and sysconf(_SC_PAGESIZE).
  // tree_every_n_samples: 1 finds the tree every round.
  explicit ProcFsSampler(std::shared_ptr<const ProcFs> fs, long ticks_per_s = 0, long page_bytes = 0,
                         int tree_every_n_samples = 10);
  std::string name() const override { return "procfs"; }
  std::string state() const override { return state_; }
  void SetTargetPid(pid_t pid) override;
  void Sample(std::int64_t t_ns, std::vector<SeriesPoint>& out) override;
  nlohmann::json Describe() const override;

 private:
  std::shared_ptr<const ProcFs> fs_;
  double ticks_per_s_;
  double page_bytes_;
  std::string state_;
  pid_t target_ = 0;
  std::optional<CpuTimes> last_cpu_;
  // The tree as last found: each process's stat path and its threads' schedstat paths.
  struct TreeProcess {
    std::string stat_path;
    std::vector<std::string> schedstat_paths;
  };
  void FindTree();
  int tree_every_n_samples_;
  std::vector<TreeProcess> tree_;
  int rounds_since_tree_ = 0;
  bool tree_stale_ = true;
};

// "host.rapl_energy_j": energy of every CPU package domain (/sys/class/powercap/intel-rapl:<n>,
// sub-domains excluded so nothing counts twice) summed, as a counter in joules since this
// sampler's first reading. Each domain's energy_uj wraps at max_energy_range_uj; a reading lower
// than the previous one is taken as one wrap. Unsupported when no domain is readable (Linux 5.10+
// makes energy_uj readable by root only).
class RaplSampler final : public Sampler {
 public:
  explicit RaplSampler(std::shared_ptr<const ProcFs> fs, std::string powercap_dir = "/sys/class/powercap");
  std::string name() const override { return "rapl"; }
  std::string state() const override { return state_; }
  void SetTargetPid(pid_t) override {}
  void Sample(std::int64_t t_ns, std::vector<SeriesPoint>& out) override;
  nlohmann::json Describe() const override;

 private:
  struct Domain {
    std::string dir;
    std::string name;  // "package-0"
    double max_range_uj = 0;
    std::optional<double> last_uj;
  };
  std::shared_ptr<const ProcFs> fs_;
  std::string state_;
  std::vector<Domain> domains_;
  double accumulated_j_ = 0;
};

}  // namespace dlbench::monitor
