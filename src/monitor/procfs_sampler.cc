#include "monitor/procfs_sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <deque>
#include <limits>
#include <set>
#include <string_view>
#include <unordered_map>

#include "common/text.h"
#include "record/series.h"

namespace dlbench::monitor {
namespace {

Error IoError(const std::string& what, const std::string& path, int err) {
  return MakeError(err == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo,
                   what + " '" + path + "': " + strerror(err));
}

// A procfs number (digits only) into `out`; false, leaving `out` alone, for anything else.
bool ReadUint(std::string_view token, std::uint64_t& out) {
  const std::optional<std::uint64_t> value = ParseUint(token);
  if (value) out = *value;
  return value.has_value();
}

// The next whitespace-separated token of `rest` (empty when none is left), and `rest` moved past
// it. The parsers below run on every sampling round: string_view tokens, no stream, locale or
// copy per line (the streams were ~10% of a procfs round on the CPU machine; the rest is the
// kernel's open/read/close, which the tree's cadence cuts, ProcFsSampler).
std::string_view NextToken(std::string_view& rest) {
  const std::size_t begin = rest.find_first_not_of(kWhitespace);
  if (begin == std::string_view::npos) {
    rest = {};
    return {};
  }
  std::size_t end = rest.find_first_of(kWhitespace, begin);
  if (end == std::string_view::npos) end = rest.size();
  std::string_view token = rest.substr(begin, end - begin);
  rest.remove_prefix(end);
  return token;
}

// The line of `rest` up to its newline (without it), and `rest` moved past the newline.
std::string_view NextLine(std::string_view& rest) {
  const std::size_t end = rest.find('\n');
  std::string_view line = rest.substr(0, end);
  rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
  return line;
}

bool IsNumber(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::string ProcPath(pid_t pid, const char* leaf) { return "/proc/" + std::to_string(pid) + leaf; }

// Children by scanning every process's ppid: the fallback for kernels without the children file.
std::unordered_map<pid_t, std::vector<pid_t>> ChildrenByScan(const ProcFs& fs) {
  std::unordered_map<pid_t, std::vector<pid_t>> children;
  auto entries = fs.List("/proc");
  if (!entries.ok()) return children;
  for (const auto& name : *entries) {
    if (!IsNumber(name)) continue;
    auto text = fs.Read("/proc/" + name + "/stat");
    if (!text.ok()) continue;  // the process ended between the listing and the read
    auto stat = ParseProcStat(*text);
    if (stat.ok()) children[stat->ppid].push_back(stat->pid);
  }
  return children;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// RealProcFs

Result<std::string> RealProcFs::Read(const std::string& path) const {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open", path, errno);
  std::string out;
  char buffer[4096];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return IoError("cannot read", path, err);
    }
    if (n == 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

Result<std::vector<std::string>> RealProcFs::List(const std::string& path) const {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return IoError("cannot list", path, errno);
  std::vector<std::string> names;
  while (dirent* entry = ::readdir(dir)) {
    if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
    names.emplace_back(entry->d_name);
  }
  ::closedir(dir);
  return names;
}

// ---------------------------------------------------------------------------------------------
// Parsers

Result<ProcStat> ParseProcStat(const std::string& text) {
  std::size_t open = text.find(" (");
  std::size_t close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    return MakeError(ErrorKind::kInvalidInput, "malformed /proc/<pid>/stat line");
  }
  ProcStat stat;
  std::uint64_t pid = 0;
  const std::string_view line(text);
  constexpr std::uint64_t kMaxPid = std::numeric_limits<pid_t>::max();
  if (!ReadUint(line.substr(0, open), pid) || pid > kMaxPid) {
    return MakeError(ErrorKind::kInvalidInput, "malformed pid in /proc/<pid>/stat");
  }
  stat.pid = static_cast<pid_t>(pid);
  // Field numbers below are proc(5)'s, 1-based; tokens[0] is field 3 (state).
  std::string_view rest = line.substr(close + 1);
  std::string_view tokens[22];
  for (std::string_view& token : tokens) {
    token = NextToken(rest);
    if (token.empty()) return MakeError(ErrorKind::kInvalidInput, "short /proc/<pid>/stat line");
  }
  auto field = [&](int number, std::uint64_t& out) { return ReadUint(tokens[number - 3], out); };
  std::uint64_t ppid = 0;
  if (!field(4, ppid) || !field(14, stat.utime) || !field(15, stat.stime) || !field(16, stat.cutime) ||
      !field(17, stat.cstime) || !field(24, stat.rss_pages)) {
    return MakeError(ErrorKind::kInvalidInput, "non-numeric field in /proc/<pid>/stat");
  }
  if (ppid > kMaxPid) return MakeError(ErrorKind::kInvalidInput, "malformed ppid in /proc/<pid>/stat");
  stat.ppid = static_cast<pid_t>(ppid);
  return stat;
}

Result<CpuTimes> ParseCpuTimes(const std::string& proc_stat) {
  std::string_view rest(proc_stat);
  std::string_view line = NextLine(rest);
  if (NextToken(line) != "cpu")
    return MakeError(ErrorKind::kInvalidInput, "/proc/stat does not start with the cpu line");
  // user nice system idle iowait irq softirq steal [guest guest_nice]
  std::uint64_t v[8] = {};
  int fields = 0;
  for (int i = 0; i < 8; ++i) {
    if (!ReadUint(NextToken(line), v[i])) {
      // Kernels before 2.6.11 lack steal; anything shorter than idle is malformed.
      if (i >= 4) break;
      return MakeError(ErrorKind::kInvalidInput, "malformed cpu line in /proc/stat");
    }
    fields = i + 1;
  }
  CpuTimes times;
  for (std::uint64_t x : v) times.total += x;
  times.steal = v[7];
  times.has_steal = fields == 8;
  times.busy = times.total - v[3] - v[4] - v[7];
  while (!rest.empty()) {
    line = NextLine(rest);
    if (line.size() > 3 && line.compare(0, 3, "cpu") == 0 && line[3] >= '0' && line[3] <= '9') ++times.cpus;
  }
  return times;
}

std::optional<double> CpuUtilPct(const CpuTimes& before, const CpuTimes& after) {
  if (after.total <= before.total || after.busy < before.busy) return std::nullopt;
  double total = static_cast<double>(after.total - before.total);
  double busy = static_cast<double>(after.busy - before.busy);
  return 100.0 * busy / total;
}

std::optional<double> CpuStealPct(const CpuTimes& before, const CpuTimes& after) {
  if (!before.has_steal || !after.has_steal || after.total <= before.total || after.steal < before.steal)
    return std::nullopt;
  return 100.0 * static_cast<double>(after.steal - before.steal) /
         static_cast<double>(after.total - before.total);
}

std::optional<double> CpuBusyCores(const CpuTimes& before, const CpuTimes& after) {
  auto pct = CpuUtilPct(before, after);
  if (!pct || after.cpus <= 0) return std::nullopt;
  return *pct / 100.0 * after.cpus;
}

std::optional<double> SampleHostBusyCores(const ProcFs& fs, int span_ms) {
  auto first = fs.Read("/proc/stat");
  if (!first.ok()) return std::nullopt;
  auto before = ParseCpuTimes(*first);
  if (!before.ok()) return std::nullopt;
  usleep(static_cast<useconds_t>(std::max(1, span_ms)) * 1000);
  auto second = fs.Read("/proc/stat");
  if (!second.ok()) return std::nullopt;
  auto after = ParseCpuTimes(*second);
  if (!after.ok()) return std::nullopt;
  return CpuBusyCores(*before, *after);
}

Result<MemInfo> ParseMemInfo(const std::string& text) {
  std::string_view rest(text);
  std::optional<std::uint64_t> total, available;
  while (!rest.empty() && !(total && available)) {
    std::string_view line = NextLine(rest);
    const std::string_view key = NextToken(line);
    std::uint64_t kib = 0;
    if (!ReadUint(NextToken(line), kib)) continue;
    if (key == "MemTotal:") total = kib * 1024;
    if (key == "MemAvailable:") available = kib * 1024;
  }
  if (!total || !available) {
    return MakeError(ErrorKind::kInvalidInput, "/proc/meminfo lacks MemTotal or MemAvailable");
  }
  return MemInfo{*total, *available};
}

// ---------------------------------------------------------------------------------------------
// Process tree

std::vector<pid_t> ProcessTree(const ProcFs& fs, pid_t root) {
  std::vector<pid_t> tree;
  if (root <= 0) return tree;
  if (!fs.List(ProcPath(root, "/task")).ok()) return tree;
  std::optional<std::unordered_map<pid_t, std::vector<pid_t>>> scanned;
  std::set<pid_t> seen{root};
  std::deque<pid_t> queue{root};
  while (!queue.empty()) {
    pid_t pid = queue.front();
    queue.pop_front();
    tree.push_back(pid);
    std::vector<pid_t> children;
    if (!scanned) {
      auto tids = fs.List(ProcPath(pid, "/task"));
      if (!tids.ok()) continue;  // ended meanwhile
      bool has_children_file = true;
      for (const auto& tid : *tids) {
        auto text = fs.Read(ProcPath(pid, "/task/") + tid + "/children");
        if (!text.ok()) {
          if (text.error().kind == ErrorKind::kNotFound && tid == std::to_string(pid)) {
            has_children_file = false;
            break;
          }
          continue;
        }
        std::string_view rest(*text);
        std::uint64_t child = 0;
        for (std::string_view token = NextToken(rest); !token.empty(); token = NextToken(rest)) {
          if (ReadUint(token, child)) children.push_back(static_cast<pid_t>(child));
        }
      }
      if (!has_children_file) scanned = ChildrenByScan(fs);
    }
    if (scanned) {
      auto it = scanned->find(pid);
      if (it != scanned->end()) children = it->second;
    }
    for (pid_t child : children) {
      if (seen.insert(child).second) queue.push_back(child);
    }
  }
  return tree;
}

bool IsInTree(const ProcFs& fs, pid_t pid, pid_t root) {
  // A depth bound guards against a ppid cycle read across a pid reuse.
  constexpr int kMaxDepth = 256;
  for (int depth = 0; depth < kMaxDepth && pid > 1; ++depth) {
    if (pid == root) return true;
    auto text = fs.Read(ProcPath(pid, "/stat"));
    if (!text.ok()) return false;
    auto stat = ParseProcStat(*text);
    if (!stat.ok()) return false;
    pid = stat->ppid;
  }
  return pid == root;
}

// ---------------------------------------------------------------------------------------------
// ProcFsSampler

ProcFsSampler::ProcFsSampler(std::shared_ptr<const ProcFs> fs, long ticks_per_s, long page_bytes,
                             int tree_every_n_samples)
    : fs_(std::move(fs)),
      ticks_per_s_(static_cast<double>(ticks_per_s > 0 ? ticks_per_s : sysconf(_SC_CLK_TCK))),
      page_bytes_(static_cast<double>(page_bytes > 0 ? page_bytes : sysconf(_SC_PAGESIZE))),
      tree_every_n_samples_(std::max(1, tree_every_n_samples)) {
  auto stat = fs_->Read("/proc/stat");
  if (!stat.ok()) {
    state_ = "unsupported: " + stat.error().message;
  } else if (auto cpu = ParseCpuTimes(*stat); !cpu.ok()) {
    state_ = "unsupported: " + cpu.error().message;
  } else {
    state_ = "ok";
  }
}

void ProcFsSampler::SetTargetPid(pid_t pid) {
  target_ = pid;
  last_cpu_.reset();
  tree_.clear();
  tree_stale_ = true;
}

void ProcFsSampler::FindTree() {
  tree_.clear();
  for (pid_t pid : ProcessTree(*fs_, target_)) {
    TreeProcess process{ProcPath(pid, "/stat"), {}};
    if (auto tasks = fs_->List(ProcPath(pid, "/task")); tasks.ok()) {
      const std::string task_dir = ProcPath(pid, "/task/");
      for (const std::string& tid : *tasks) process.schedstat_paths.push_back(task_dir + tid + "/schedstat");
    }
    tree_.push_back(std::move(process));
  }
  rounds_since_tree_ = 0;
  tree_stale_ = false;
}

Result<std::uint64_t> ParseSchedStatWaitNs(const std::string& text) {
  // "<run ns> <wait ns> <timeslices>\n"
  const char* p = text.c_str();
  char* end = nullptr;
  errno = 0;
  std::strtoull(p, &end, 10);
  if (end == p || errno != 0) return Error{ErrorKind::kInvalidInput, "schedstat: no run time"};
  p = end;
  const unsigned long long wait = std::strtoull(p, &end, 10);
  if (end == p || errno != 0) return Error{ErrorKind::kInvalidInput, "schedstat: no wait time"};
  return static_cast<std::uint64_t>(wait);
}

void ProcFsSampler::Sample(std::int64_t t_ns, std::vector<SeriesPoint>& out) {
  if (state_ != "ok") return;
  if (auto text = fs_->Read("/proc/stat"); text.ok()) {
    if (auto cpu = ParseCpuTimes(*text); cpu.ok()) {
      if (last_cpu_) {
        if (auto pct = CpuUtilPct(*last_cpu_, *cpu))
          out.push_back({t_ns, std::string(record::series::kHostCpuUtilPct), *pct});
        if (auto cores = CpuBusyCores(*last_cpu_, *cpu))
          out.push_back({t_ns, std::string(record::series::kHostCpuBusyCores), *cores});
        if (auto steal = CpuStealPct(*last_cpu_, *cpu))
          out.push_back({t_ns, std::string(record::series::kHostCpuStealPct), *steal});
      }
      last_cpu_ = *cpu;
    }
  }
  if (auto text = fs_->Read("/proc/meminfo"); text.ok()) {
    if (auto mem = ParseMemInfo(*text); mem.ok()) {
      double used = static_cast<double>(mem->total_bytes) - static_cast<double>(mem->available_bytes);
      out.push_back({t_ns, std::string(record::series::kHostMemUsedBytes), used});
    }
  }
  if (target_ <= 0) return;
  if (tree_stale_ || ++rounds_since_tree_ >= tree_every_n_samples_) FindTree();
  std::uint64_t ticks = 0, rss_pages = 0, wait_ns = 0;
  bool any = false, any_wait = false;
  for (const TreeProcess& process : tree_) {
    auto text = fs_->Read(process.stat_path);
    auto stat = text.ok() ? ParseProcStat(*text) : Result<ProcStat>(text.error());
    if (!stat.ok()) {
      // Ended meanwhile: its time moves to its parent's cutime when reaped; find the tree again.
      tree_stale_ = true;
      continue;
    }
    // cutime/cstime hold reaped descendants only, so adding them for every live process counts
    // each CPU second once.
    ticks += stat->utime + stat->stime + stat->cutime + stat->cstime;
    rss_pages += stat->rss_pages;
    any = true;
    for (const std::string& path : process.schedstat_paths) {
      auto sched = fs_->Read(path);
      if (!sched.ok()) continue;  // a thread that ended takes its wait with it
      if (auto w = ParseSchedStatWaitNs(*sched); w.ok()) {
        wait_ns += *w;
        any_wait = true;
      }
    }
  }
  if (!any) return;
  out.push_back({t_ns, std::string(record::series::kProcCpuS), static_cast<double>(ticks) / ticks_per_s_});
  out.push_back(
      {t_ns, std::string(record::series::kProcRssBytes), static_cast<double>(rss_pages) * page_bytes_});
  if (any_wait)
    out.push_back(
        {t_ns, std::string(record::series::kProcRunqueueWaitS), static_cast<double>(wait_ns) * 1e-9});
}

nlohmann::json ProcFsSampler::Describe() const {
  nlohmann::json facts = {{"ticks_per_s", ticks_per_s_},
                          {"page_bytes", page_bytes_},
                          {"tree_every_n_samples", tree_every_n_samples_}};
  if (auto text = fs_->Read("/proc/meminfo"); text.ok()) {
    if (auto mem = ParseMemInfo(*text); mem.ok()) facts["memory_total_bytes"] = mem->total_bytes;
  }
  return facts;
}

// ---------------------------------------------------------------------------------------------
// RaplSampler

RaplSampler::RaplSampler(std::shared_ptr<const ProcFs> fs, std::string powercap_dir) : fs_(std::move(fs)) {
  auto entries = fs_->List(powercap_dir);
  std::string first_error;
  if (entries.ok()) {
    for (const auto& entry : *entries) {
      // Package domains are "intel-rapl:<n>"; "intel-rapl:<n>:<m>" are sub-domains (core, dram,
      // uncore) already inside their package's counter.
      const std::string kPrefix = "intel-rapl:";
      if (entry.compare(0, kPrefix.size(), kPrefix) != 0 || !IsNumber(entry.substr(kPrefix.size()))) continue;
      Domain domain;
      domain.dir = powercap_dir + "/" + entry;
      auto energy = fs_->Read(domain.dir + "/energy_uj");
      if (!energy.ok()) {
        if (first_error.empty()) first_error = energy.error().message;
        continue;
      }
      auto name = fs_->Read(domain.dir + "/name");
      domain.name = name.ok() ? Trim(*name) : entry;
      std::uint64_t range = 0;
      if (auto text = fs_->Read(domain.dir + "/max_energy_range_uj");
          text.ok() && ReadUint(Trim(*text), range)) {
        domain.max_range_uj = static_cast<double>(range);
      }
      domains_.push_back(std::move(domain));
    }
  }
  if (!domains_.empty()) {
    state_ = "ok";
  } else if (!first_error.empty()) {
    state_ = "unsupported: " + first_error + " (energy_uj is readable by root only since Linux 5.10)";
  } else {
    state_ = "unsupported: no RAPL package domain under " + powercap_dir;
  }
}

void RaplSampler::Sample(std::int64_t t_ns, std::vector<SeriesPoint>& out) {
  if (domains_.empty()) return;
  for (auto& domain : domains_) {
    auto text = fs_->Read(domain.dir + "/energy_uj");
    std::uint64_t raw = 0;
    if (!text.ok() || !ReadUint(Trim(*text), raw)) continue;
    double now = static_cast<double>(raw);
    if (domain.last_uj) {
      double delta = now - *domain.last_uj;
      if (delta < 0) {
        // One wrap of the counter since the last round (at 10 Hz a second wrap is impossible:
        // the range is tens of kilojoules).
        if (domain.max_range_uj <= 0) {
          domain.last_uj = now;
          continue;
        }
        delta += domain.max_range_uj;
      }
      accumulated_j_ += delta * 1e-6;
    }
    domain.last_uj = now;
  }
  out.push_back({t_ns, std::string(record::series::kHostRaplEnergyJ), accumulated_j_});
}

nlohmann::json RaplSampler::Describe() const {
  nlohmann::json domains = nlohmann::json::array();
  for (const auto& d : domains_) {
    domains.push_back({{"path", d.dir}, {"name", d.name}, {"max_energy_range_uj", d.max_range_uj}});
  }
  return {{"domains", domains}};
}

}  // namespace dlbench::monitor
