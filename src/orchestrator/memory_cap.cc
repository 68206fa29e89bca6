#include "orchestrator/memory_cap.h"

#include <fmt/core.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "config/cuda_alloc_conf.h"
#include "config/host_allocator.h"
#include "config/registry.h"

namespace dlbench::orchestrator {

std::optional<std::int64_t> CellMemoryCap(const plan::Cell& cell) {
  const auto it = cell.params.find("memory_cap");
  if (it == cell.params.end() || !it->second.is_string()) return std::nullopt;
  return config::ParseByteSize(it->second.get<std::string>());
}

Status LimitProcessData(pid_t pid, std::int64_t bytes) {
  struct rlimit limit {};
  limit.rlim_cur = static_cast<rlim_t>(bytes);
  limit.rlim_max = static_cast<rlim_t>(bytes);
  if (::prlimit(pid, RLIMIT_DATA, &limit, nullptr) != 0) {
    const int err = errno;
    return MakeError(ErrorKind::kIo, fmt::format("memory_cap: prlimit(RLIMIT_DATA, {} bytes) on the runner "
                                                 "(pid {}) failed: {}",
                                                 bytes, pid, std::strerror(err)));
  }
  return Status::Ok();
}

Status ApplyMemoryCap(const plan::Cell& cell, pid_t pid, record::CellRecord& rec) {
  const std::optional<std::int64_t> cap = CellMemoryCap(cell);
  if (!cap) return Status::Ok();
  const auto device = cell.params.find("device");
  const bool cuda =
      device != cell.params.end() && device->second.is_string() &&
      config::ParseDeviceName(device->second.get<std::string>()).value_or(config::DeviceName{}).cuda;
  if (cuda) {
    rec.extras["memory_cap"] = {{"bytes", *cap}, {"mechanism", kCapByRunner}};
    return Status::Ok();
  }
  DLBENCH_RETURN_IF_ERROR(LimitProcessData(pid, *cap));
  rec.extras["memory_cap"] = {{"bytes", *cap}, {"mechanism", kCapRlimitData}};
  return Status::Ok();
}

Result<std::vector<std::pair<std::string, std::string>>> CellRunnerEnvironment(const plan::Cell& cell) {
  std::vector<std::pair<std::string, std::string>> env;
  if (const auto conf = cell.params.find("cuda_alloc_conf");
      conf != cell.params.end() && conf->second.is_string())
    env.emplace_back(config::kCudaAllocConfEnv, conf->second.get<std::string>());
  if (const auto alloc = cell.params.find(config::kHostAllocatorKey);
      alloc != cell.params.end() && alloc->second.is_string()) {
    auto more = config::HostAllocatorEnvironment(alloc->second.get<std::string>(),
                                                 std::getenv("GLIBC_TUNABLES"), std::getenv("LD_PRELOAD"));
    if (!more.ok()) return more.error();
    env.insert(env.end(), more->begin(), more->end());
  }
  return env;
}

std::string MemoryCapNote(const record::CellRecord& rec) {
  if (!rec.extras.contains("memory_cap") || !rec.extras["memory_cap"].is_object()) return "";
  const nlohmann::json& cap = rec.extras["memory_cap"];
  if (!cap.contains("bytes") || !cap["bytes"].is_number_integer()) return "";
  const auto bytes = cap["bytes"].get<std::int64_t>();
  const std::string mechanism =
      cap.contains("mechanism") && cap["mechanism"].is_string() ? cap["mechanism"].get<std::string>() : "";
  return fmt::format("; memory_cap allowed {} bytes ({:.4g} MiB, {})", bytes,
                     static_cast<double>(bytes) / (1024.0 * 1024.0), mechanism);
}

}  // namespace dlbench::orchestrator
