#include "monitor/visible_gpus.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>

namespace dlbench::monitor {

int CudaVisibleEntries(const std::string& value) {
  int n = 0;
  std::size_t begin = 0;
  while (begin <= value.size()) {
    const std::size_t comma = std::min(value.find(',', begin), value.size());
    const std::string entry = value.substr(begin, comma - begin);
    if (entry.empty() || entry[0] == '-') break;
    ++n;
    begin = comma + 1;
  }
  return n;
}

std::optional<VisibleGpus> CountVisibleGpus(const NvmlApi* api,
                                            const std::optional<std::string>& cuda_visible) {
  std::optional<VisibleGpus> out;
  if (api != nullptr && api->init != nullptr && api->device_get_count != nullptr &&
      api->init() == kNvmlSuccess) {
    unsigned int count = 0;
    const NvmlReturn got = api->device_get_count(&count);
    if (api->shutdown != nullptr) api->shutdown();
    if (got == kNvmlSuccess) {
      const int n = static_cast<int>(std::min(count, 1u << 16));
      out = VisibleGpus{n, fmt::format("NVML: {} GPU{}", n, n == 1 ? "" : "s")};
    }
  }
  if (cuda_visible) {
    const int entries = CudaVisibleEntries(*cuda_visible);
    const std::string said = fmt::format("CUDA_VISIBLE_DEVICES={}", *cuda_visible);
    if (!out) {
      out = VisibleGpus{entries, said};
    } else if (entries < out->count) {
      out = VisibleGpus{entries, fmt::format("{}, {} keeps {}", out->from, said, entries)};
    }
  }
  return out;
}

std::optional<VisibleGpus> ThisHostsVisibleGpus() {
  const char* cuda_visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::optional<std::string> visible =
      cuda_visible != nullptr ? std::optional<std::string>(cuda_visible) : std::nullopt;
  auto nvml = LoadNvml();
  return CountVisibleGpus(nvml.ok() ? &nvml->api : nullptr, visible);
}

}  // namespace dlbench::monitor
