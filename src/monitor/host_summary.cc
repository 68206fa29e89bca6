#include "monitor/host_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace dlbench::monitor {
namespace {

// Mean, maximum, first and last (by time) of one series' finite values.
struct Stats {
  double sum = 0;
  std::size_t n = 0;
  double max = 0;
  std::int64_t first_t = 0;
  double first = 0;
  std::int64_t last_t = 0;
  double last = 0;
  void Add(std::int64_t t, double v) {
    if (!std::isfinite(v)) return;
    if (n == 0 || v > max) max = v;
    if (n == 0 || t < first_t) {
      first_t = t;
      first = v;
    }
    if (n == 0 || t >= last_t) {
      last_t = t;
      last = v;
    }
    sum += v;
    ++n;
  }
  double mean() const { return sum / static_cast<double>(n); }
};

// "gpu3.power_w" -> (3, "power_w"); nullopt for any other name.
std::optional<std::pair<int, std::string>> GpuSeries(const std::string& name) {
  if (name.rfind("gpu", 0) != 0) return std::nullopt;
  const std::size_t dot = name.find('.');
  if (dot == std::string::npos || dot == 3 || dot > 6) return std::nullopt;
  int index = 0;
  for (std::size_t i = 3; i < dot; ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    index = index * 10 + (name[i] - '0');
  }
  return std::make_pair(index, name.substr(dot + 1));
}

}  // namespace

nlohmann::json SummarizeHost(const std::vector<record::SeriesPoint>& series) {
  std::set<std::int64_t> times;
  std::map<std::string, Stats> by_name;
  std::map<int, std::map<std::string, Stats>> gpus;
  for (const record::SeriesPoint& p : series) {
    times.insert(p.t_ns);
    if (auto gpu = GpuSeries(p.series)) {
      gpus[gpu->first][gpu->second].Add(p.t_ns, p.value);
    } else {
      by_name[p.series].Add(p.t_ns, p.value);
    }
  }
  nlohmann::json out = {{host_figure::kRounds, times.size()}};
  if (times.empty()) return out;
  const double span_s = static_cast<double>(*times.rbegin() - *times.begin()) * 1e-9;
  out[host_figure::kSpanS] = span_s;
  auto stats = [&](const std::string& name) -> const Stats* {
    const auto it = by_name.find(name);
    return it == by_name.end() || it->second.n == 0 ? nullptr : &it->second;
  };
  if (const Stats* s = stats("host.cpu_busy_cores")) {
    out[host_figure::kCpuBusyCoresMean] = s->mean();
    out[host_figure::kCpuBusyCoresMax] = s->max;
  }
  if (const Stats* s = stats("host.cpu_util_pct")) out[host_figure::kCpuUtilMeanPct] = s->mean();
  if (const Stats* s = stats("host.mem_used_bytes")) out[host_figure::kMemPeakBytes] = s->max;
  if (const Stats* s = stats("proc.cpu_s"); s != nullptr && s->last_t > s->first_t) {
    out[host_figure::kRunnerCpuCores] =
        (s->last - s->first) / (static_cast<double>(s->last_t - s->first_t) * 1e-9);
  }
  if (const Stats* s = stats("proc.rss_bytes")) out[host_figure::kRunnerRssPeakBytes] = s->max;
  nlohmann::json gpu_list = nlohmann::json::array();
  for (const auto& gpu : gpus) {
    const std::map<std::string, Stats>& fields = gpu.second;
    nlohmann::json g = {{host_figure::kGpuIndex, gpu.first}};
    auto field = [&fields](const char* name) -> const Stats* {
      const auto it = fields.find(name);
      return it == fields.end() || it->second.n == 0 ? nullptr : &it->second;
    };
    if (const Stats* s = field("sm_util_pct")) g[host_figure::kGpuUtilMeanPct] = s->mean();
    if (const Stats* s = field("power_w")) {
      g[host_figure::kGpuPowerMeanW] = s->mean();
      g[host_figure::kGpuPowerMaxW] = s->max;
    }
    if (const Stats* s = field("mem_used_bytes")) g[host_figure::kGpuMemPeakBytes] = s->max;
    if (const Stats* s = field("temp_c")) g[host_figure::kGpuTempPeakC] = s->max;
    if (g.size() > 1) gpu_list.push_back(std::move(g));
  }
  if (!gpu_list.empty()) out[host_figure::kGpus] = std::move(gpu_list);
  return out;
}

}  // namespace dlbench::monitor
