#include "monitor/gpu_attribution.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "record/series.h"

namespace dlbench::monitor {
namespace {

// "GPU-5e0c...": compared without the "GPU-" prefix and case-insensitively, so a runner may
// send CUDA's bare form or NVML's.
std::string UuidKey(std::string uuid) {
  if (uuid.size() > 4 && (uuid.compare(0, 4, "GPU-") == 0 || uuid.compare(0, 4, "gpu-") == 0))
    uuid.erase(0, 4);
  std::transform(uuid.begin(), uuid.end(), uuid.begin(), [](unsigned char c) { return std::tolower(c); });
  return uuid;
}

// The GPU index of "gpu12.power_w" (12), or -1 for any other series.
int GpuIndexOfSeries(const std::string& name) {
  auto ref = record::series::ParseGpuSeriesName(name);
  return ref ? ref->index : -1;
}

}  // namespace

GpuAttribution AttributeGpus(const nlohmann::json& effective, const nlohmann::json& monitor_description) {
  GpuAttribution out;
  if (!effective.is_object() || !effective.contains("device_uuids") ||
      !effective["device_uuids"].is_array()) {
    out.note = "every sampled GPU: the runner named no device_uuids";
    return out;
  }
  const nlohmann::json& wanted = effective["device_uuids"];
  if (wanted.empty()) {
    out.nvml_indices = std::vector<int>{};
    out.note = "none: the cell runs on no GPU";
    return out;
  }
  nlohmann::json devices = nlohmann::json::array();
  const nlohmann::json nvml = monitor_description.is_object()
                                  ? monitor_description.value("nvml", nlohmann::json())
                                  : nlohmann::json();
  if (nvml.is_object() && nvml.contains("facts") && nvml["facts"].is_object() &&
      nvml["facts"].contains("devices")) {
    devices = nvml["facts"]["devices"];
  }
  std::vector<int> indices;
  std::vector<std::string> unknown;
  for (const auto& u : wanted) {
    if (!u.is_string()) continue;
    const std::string key = UuidKey(u.get<std::string>());
    bool found = false;
    if (devices.is_array()) {
      for (const auto& d : devices) {
        if (d.is_object() && d.contains("uuid") && d["uuid"].is_string() && d.contains("index") &&
            UuidKey(d["uuid"].get<std::string>()) == key) {
          indices.push_back(d["index"].get<int>());
          found = true;
          break;
        }
      }
    }
    if (!found) unknown.push_back(u.get<std::string>());
  }
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  std::string missing =
      unknown.empty() ? "" : fmt::format(" ({} not among the sampled GPUs)", fmt::join(unknown, ", "));
  if (indices.empty()) {
    out.note = "every sampled GPU: the runner's device_uuids matched none" + missing;
    return out;
  }
  std::vector<std::string> names;
  for (int i : indices) names.push_back("gpu" + std::to_string(i));
  out.note = fmt::format("{} (NVML index by the runner's device_uuids){}", fmt::join(names, ", "), missing);
  out.nvml_indices = std::move(indices);
  return out;
}

void KeepGpuSeries(std::vector<record::SeriesPoint>& series, const std::vector<int>& nvml_indices) {
  series.erase(std::remove_if(series.begin(), series.end(),
                              [&](const record::SeriesPoint& p) {
                                const int index = GpuIndexOfSeries(p.series);
                                return index >= 0 && std::find(nvml_indices.begin(), nvml_indices.end(),
                                                               index) == nvml_indices.end();
                              }),
               series.end());
}

std::vector<std::string> OtherGpuProcessWarnings(const std::vector<GpuProcess>& before,
                                                 const std::optional<std::vector<int>>& gpus,
                                                 bool cell_on_cuda) {
  std::map<int, std::vector<const GpuProcess*>> by_gpu;
  for (const GpuProcess& p : before) {
    const bool cells =
        gpus ? std::find(gpus->begin(), gpus->end(), p.nvml_index) != gpus->end() : cell_on_cuda;
    if (cells) by_gpu[p.nvml_index].push_back(&p);
  }
  std::vector<std::string> out;
  for (const auto& [index, processes] : by_gpu) {
    std::uint64_t known = 0;
    int unknown = 0;
    std::vector<std::string> named;
    for (const GpuProcess* p : processes) {
      const std::string name = p->name.empty() ? "(no /proc entry here)" : p->name;
      if (p->used_bytes) {
        known += *p->used_bytes;
        named.push_back(fmt::format("pid {} {} holding {:.1f} MiB", p->pid, name,
                                    static_cast<double>(*p->used_bytes) / (1024.0 * 1024.0)));
      } else {
        ++unknown;
        named.push_back(fmt::format("pid {} {} (its memory not readable)", p->pid, name));
      }
    }
    const std::string uuid =
        processes.front()->gpu_uuid.empty() ? "" : " (" + processes.front()->gpu_uuid + ")";
    out.push_back(fmt::format(
        "gpu{}{} was in use just before the cell's runner started: {} other compute process{} held {:.1f} "
        "MiB{} ({}); the cell's memory and speed may be those of a shared GPU",
        index, uuid, processes.size(), processes.size() == 1 ? "" : "es",
        static_cast<double>(known) / (1024.0 * 1024.0),
        unknown > 0 ? fmt::format(" and {} unknown", unknown) : "", fmt::join(named, "; ")));
  }
  return out;
}

}  // namespace dlbench::monitor
