#include "monitor/busy_processes.h"

#include <fmt/core.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace dlbench::monitor {

namespace {

bool IsNumber(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The pids of `self` and everything below it in one snapshot.
std::unordered_set<pid_t> TreeOf(const std::vector<ProcessCpu>& snapshot, pid_t self) {
  std::unordered_map<pid_t, pid_t> parent;
  for (const auto& p : snapshot) parent[p.pid] = p.ppid;
  std::unordered_set<pid_t> tree = {self};
  for (const auto& p : snapshot) {
    // Walk up at most as many steps as there are processes (a cycle cannot loop for ever).
    pid_t at = p.pid;
    for (std::size_t hops = 0; at > 0 && hops <= snapshot.size(); ++hops) {
      if (tree.count(at) > 0 || at == self) {
        tree.insert(p.pid);
        break;
      }
      const auto up = parent.find(at);
      if (up == parent.end()) break;
      at = up->second;
    }
  }
  return tree;
}

}  // namespace

std::vector<ProcessCpu> SnapshotProcesses(const ProcFs& fs) {
  std::vector<ProcessCpu> out;
  auto entries = fs.List("/proc");
  if (!entries.ok()) return out;
  for (const auto& name : *entries) {
    if (!IsNumber(name)) continue;
    auto text = fs.Read("/proc/" + name + "/stat");
    if (!text.ok()) continue;
    auto stat = ParseProcStat(*text);
    if (!stat.ok()) continue;
    const auto open = text->find('(');
    const auto close = text->rfind(')');
    ProcessCpu p;
    p.pid = stat->pid;
    p.ppid = stat->ppid;
    p.comm = open != std::string::npos && close != std::string::npos && close > open
                 ? text->substr(open + 1, close - open - 1)
                 : "?";
    p.ticks = stat->utime + stat->stime;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<BusyProcess> BusiestOthers(const std::vector<ProcessCpu>& before,
                                       const std::vector<ProcessCpu>& after, pid_t self, long ticks_per_s,
                                       std::size_t n, double min_cpu_s) {
  std::vector<BusyProcess> out;
  if (ticks_per_s <= 0 || n == 0) return out;
  std::unordered_set<pid_t> ours = TreeOf(before, self);
  for (pid_t pid : TreeOf(after, self)) ours.insert(pid);
  std::unordered_map<pid_t, const ProcessCpu*> earlier;
  for (const auto& p : before) earlier[p.pid] = &p;
  for (const auto& p : after) {
    if (ours.count(p.pid) > 0) continue;
    std::uint64_t start = 0;
    if (const auto it = earlier.find(p.pid);
        it != earlier.end() && it->second->comm == p.comm && it->second->ticks <= p.ticks) {
      start = it->second->ticks;
    }
    const double cpu_s = static_cast<double>(p.ticks - start) / static_cast<double>(ticks_per_s);
    if (cpu_s >= min_cpu_s) out.push_back({p.pid, p.comm, cpu_s});
  }
  std::sort(out.begin(), out.end(), [](const BusyProcess& a, const BusyProcess& b) {
    return a.cpu_s != b.cpu_s ? a.cpu_s > b.cpu_s : a.pid < b.pid;
  });
  if (out.size() > n) out.resize(n);
  return out;
}

std::string DescribeBusiest(const std::vector<BusyProcess>& busiest) {
  std::string out;
  for (const auto& b : busiest) {
    out += fmt::format("{}{} (pid {}) {:.1f} CPU-s", out.empty() ? "" : ", ", b.comm, b.pid, b.cpu_s);
  }
  return out;
}

}  // namespace dlbench::monitor
