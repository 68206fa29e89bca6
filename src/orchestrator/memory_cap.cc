#include "orchestrator/memory_cap.h"

#include <fmt/core.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "common/subprocess.h"
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

namespace {

bool IsCudaCell(const plan::Cell& cell) {
  const auto device = cell.params.find("device");
  return device != cell.params.end() && device->second.is_string() &&
         config::ParseDeviceName(device->second.get<std::string>()).value_or(config::DeviceName{}).cuda;
}

}  // namespace

bool CellCapsOnCpu(const plan::Cell& cell) { return CellMemoryCap(cell) && !IsCudaCell(cell); }

std::optional<nlohmann::json> PlannedMemoryCap(const plan::Cell& cell, const CgroupParent& cpu_parent) {
  const std::optional<std::int64_t> cap = CellMemoryCap(cell);
  if (!cap) return std::nullopt;
  if (IsCudaCell(cell)) return nlohmann::json{{"bytes", *cap}, {"mechanism", kCapByRunner}};
  if (cpu_parent.path.empty()) {
    return nlohmann::json{
        {"bytes", *cap}, {"mechanism", kCapRlimitData}, {"cgroup_v2", "not used: " + cpu_parent.why_not}};
  }
  nlohmann::json out = {{"bytes", *cap},
                        {"mechanism", kCapCgroupV2},
                        {"cgroup_parent", cpu_parent.path},
                        {"cgroup_parent_from", cpu_parent.source}};
  if (!cpu_parent.to_do.empty()) out["to_do"] = cpu_parent.to_do;
  return out;
}

Result<AppliedMemoryCap> ApplyMemoryCap(const plan::Cell& cell, pid_t pid, record::CellRecord& rec,
                                        const CgroupSources& cgroups) {
  const std::optional<std::int64_t> cap = CellMemoryCap(cell);
  if (!cap) return AppliedMemoryCap();
  if (IsCudaCell(cell)) {
    rec.extras["memory_cap"] = {{"bytes", *cap}, {"mechanism", kCapByRunner}};
    return AppliedMemoryCap();
  }
  const CgroupParent parent = FindCgroupParent(cgroups, CgroupCheck::kEnable, pid);
  std::string why_not = parent.why_not;
  if (!parent.path.empty()) {
    auto cgroup = CellCgroup::Create(parent.path, fmt::format("dlbench-{}-runner-{}", ::getpid(), pid), *cap);
    if (cgroup.ok()) {
      if (auto st = cgroup->Add(pid); st.ok()) {
        rec.extras["memory_cap"] = {{"bytes", *cap},
                                    {"mechanism", kCapCgroupV2},
                                    {"cgroup", cgroup->path()},
                                    {"cgroup_parent_from", parent.source}};
        return AppliedMemoryCap(std::move(cgroup).value());
      } else {
        why_not = st.error().message;
      }
    } else {
      why_not = cgroup.error().message;
    }
  }
  DLBENCH_RETURN_IF_ERROR(LimitProcessData(pid, *cap));
  rec.extras["memory_cap"] = {
      {"bytes", *cap}, {"mechanism", kCapRlimitData}, {"cgroup_v2", "not used: " + why_not}};
  return AppliedMemoryCap();
}

void AppliedMemoryCap::Conclude(record::CellRecord& rec) {
  if (!cgroup_) return;
  const std::int64_t kills = cgroup_->OomKills();
  if (kills > 0) {
    nlohmann::json& facts = rec.extras["memory_cap"];
    facts["oom_kills"] = kills;
    const std::optional<std::int64_t> peak = cgroup_->Peak();
    if (peak) facts["peak_bytes"] = *peak;
    const std::string what = fmt::format(
        "the kernel's OOM killer ended {} process{} of the cell's cgroup (memory.events oom_kill){}", kills,
        kills == 1 ? "" : "es",
        peak ? fmt::format("; its peak was {} bytes (memory.peak)", *peak) : std::string());
    if (rec.outcome == record::Outcome::kCrashed) {
      rec.outcome = record::Outcome::kOom;
      rec.message = "out of memory: " + what + MemoryCapNote(rec) + "; " + rec.message;
      rec.verdict = record::Verdict::kNotApplicable;
      rec.verdict_reasons.clear();
    } else {
      rec.extras["warnings"].push_back(what + MemoryCapNote(rec));
    }
  }
  if (auto st = cgroup_->Remove(); !st.ok()) rec.extras["warnings"].push_back(st.error().message);
  cgroup_.reset();
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

std::optional<std::string> CrashTakenAsOom(record::CellRecord& rec, int signal) {
  if (signal != SIGSEGV && signal != SIGABRT) return std::nullopt;
  if (!rec.extras.contains("memory_cap") || !rec.extras["memory_cap"].is_object()) return std::nullopt;
  nlohmann::json& cap = rec.extras["memory_cap"];
  if (cap.value("mechanism", "") != kCapRlimitData || !cap.contains("bytes") ||
      !cap["bytes"].is_number_integer())
    return std::nullopt;
  const std::string name = SignalName(signal);
  cap["crash_taken_as_oom"] = name;
  return fmt::format(
      "out of memory (taken from a crash): the runner died by {} under a {:.4g} MiB memory_cap "
      "(RLIMIT_DATA): "
      "taken as out of memory, since a library whose allocation the limit refuses may crash instead of "
      "reporting it{}",
      name, static_cast<double>(cap["bytes"].get<std::int64_t>()) / (1024.0 * 1024.0), MemoryCapNote(rec));
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

std::optional<AppliedCap> AppliedCapOf(const record::CellRecord& rec) {
  const auto applied = rec.effective.find("memory_cap_applied");
  if (applied == rec.effective.end() || !applied->is_object()) return std::nullopt;
  const auto number = [&](const char* key) -> std::optional<double> {
    const auto it = applied->find(key);
    if (it == applied->end() || !it->is_number()) return std::nullopt;
    const double v = it->get<double>();
    return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
  };
  const std::optional<double> total = number("device_total_bytes");
  const std::optional<double> fraction = number("fraction");
  const std::optional<double> outside = number("outside_allocator_bytes");
  if (!total || !fraction || !outside || *total <= 0 || *fraction <= 0 || *fraction > 1 || *outside < 0 ||
      *outside >= *total)
    return std::nullopt;
  return AppliedCap{*total, *fraction, *outside};
}

}  // namespace dlbench::orchestrator
