// memory_cap on the host (docs/memory.md "Memory cap"): the orchestrator's part. A cpu cell's
// runner is limited by the kernel; a cuda cell's cap is the torch runner's (the caching
// allocator's per-process fraction), since a host limit would not bound device memory and could
// break the CUDA driver's own mappings.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "orchestrator/cgroup_v2.h"
#include "plan/plan.h"
#include "record/records.h"

namespace dlbench::orchestrator {

// The mechanism names stored in extras.memory_cap.mechanism.
inline constexpr const char* kCapRlimitData = "RLIMIT_DATA";
inline constexpr const char* kCapCgroupV2 = "cgroup_v2_memory_max";
inline constexpr const char* kCapByRunner = "runner";

// The cell's memory_cap in bytes, or nullopt when it sets none. The plan validated its text.
std::optional<std::int64_t> CellMemoryCap(const plan::Cell& cell);

// Limits `pid` with prlimit(2): RLIMIT_DATA soft and hard to `bytes`, so the runner cannot raise it
// again. RLIMIT_DATA (private writable mappings: the heap and anonymous mmap, thread stacks) and
// not RLIMIT_AS: LibTorch's thread pools and glibc's per-thread malloc arenas reserve address space
// (PROT_NONE) they never use, which RLIMIT_AS counts and RLIMIT_DATA does not. The caller limits a
// runner it has just spawned and has not yet sent CONFIGURE, so its model and steps run under the
// cap; what the exec and the dynamic loader mapped before counts towards it but was not refused.
// kIo naming the errno when the kernel refuses.
Status LimitProcessData(pid_t pid, std::int64_t bytes);

// What a cpu cell's cap leaves to do once its runner has ended: its cgroup to read and remove.
// Nothing for a cell capped by RLIMIT_DATA, by the runner, or not at all.
class AppliedMemoryCap {
 public:
  AppliedMemoryCap() = default;
  explicit AppliedMemoryCap(CellCgroup cgroup) : cgroup_(std::move(cgroup)) {}
  // Call after the runner and its leftovers were reaped and the record concluded. When the kernel's
  // OOM killer ended a process of the cell's cgroup (memory.events' oom_kill), extras.memory_cap gets
  // `oom_kills` and `peak_bytes` (memory.peak, where the kernel has it), and a runner that died of
  // a signal becomes `oom` with those numbers and the cap (memory.max does not fail an allocation:
  // the kernel kills). Then the cgroup is removed; a failure to is a warning.
  void Conclude(record::CellRecord& rec);

 private:
  std::optional<CellCgroup> cgroup_;
};

// Applies the cell's cap to its just-spawned runner `pid` and records what applied in
// rec.extras.memory_cap ({bytes, mechanism, ...}):
// - a cuda cell: `runner` (the runner reports its own in the effective cell);
// - a cpu cell: cgroup v2 memory.max where FindCgroupParent(cgroups) finds a usable parent and the
//   cell's cgroup can be made and the runner moved into it (`cgroup_v2_memory_max`, with `cgroup`,
//   the cell's cgroup, and `cgroup_parent_from`), else RLIMIT_DATA with `cgroup_v2`: why not.
// No cap: nothing. An error is the cell's (the caller ends it as `error`): a cap that was asked for
// and not applied must not pass silently.
Result<AppliedMemoryCap> ApplyMemoryCap(const plan::Cell& cell, pid_t pid, record::CellRecord& rec,
                                        const CgroupSources& cgroups = SystemCgroupSources());

// What ApplyMemoryCap will do with the cell's cap, for `dlbench plan` (nothing is written): the
// extras.memory_cap a run would start the record with, given `cpu_parent`, FindCgroupParent's
// answer with CgroupCheck::kReadOnly (asked once for every cell; see CellCapsOnCpu). A cpu cell:
// `cgroup_v2_memory_max` with `cgroup_parent`, `cgroup_parent_from` and `to_do` (what a run still
// writes), or `RLIMIT_DATA` with `cgroup_v2`: "not used: ...". A cuda cell: `runner`. nullopt
// without a cap.
std::optional<nlohmann::json> PlannedMemoryCap(const plan::Cell& cell, const CgroupParent& cpu_parent);

// Whether the cell has a memory_cap that the orchestrator applies on the host (a cpu cell's).
bool CellCapsOnCpu(const plan::Cell& cell);

// The variables the cell's runner gets on top of dlbench's environment: PYTORCH_CUDA_ALLOC_CONF
// from cuda_alloc_conf (docs/memory.md "Allocator settings"), which the runner's allocator reads
// when CUDA initialises, so it must be in place before the exec, and GLIBC_TUNABLES or LD_PRELOAD
// from host_allocator (docs/memory.md "The host allocator"); empty when the cell sets neither. An
// error (kUnsupported) when host_allocator's library is not installed.
Result<std::vector<std::pair<std::string, std::string>>> CellRunnerEnvironment(const plan::Cell& cell);

// A runner that died by SIGSEGV or SIGABRT under an RLIMIT_DATA memory_cap (rec.extras.memory_cap,
// the fresh or kept process's) is read as out of memory: a library whose allocation the limit refused
// may crash instead of reporting it (oneDNN 2.6's JIT writes its code to the null buffer Xbyak's
// refused allocation left: docs/memory.md "A crash under RLIMIT_DATA"). Returns the message the
// `oom` cell gets ("the runner died by SIGSEGV under a 1024 MiB memory_cap (RLIMIT_DATA): taken as
// out of memory ...", the cap's note included) and records the signal as
// extras.memory_cap.crash_taken_as_oom; nullopt (and nothing recorded) for any other signal, cap
// mechanism or a cell without a cap.
std::optional<std::string> CrashTakenAsOom(record::CellRecord& rec, int signal);

// The sentence an oom cell's message ends with when the cell had a cap: "; memory_cap allowed
// 536870912 bytes (512 MiB, RLIMIT_DATA)", or empty without one.
std::string MemoryCapNote(const record::CellRecord& rec);

// What a runner's memory_cap_applied (dlbench-torch on CUDA) says about the device: its bytes, the
// fraction the cap set, and the memory in use outside the caching allocator before the cell (the
// CUDA context), which no fraction can hand out. Absent where the runner says none.
struct AppliedCap {
  double total = 0;
  double fraction = 1;
  double outside = 0;
  // The device less its context.
  double DeviceUsable() const { return total - outside; }
  // What the process could hold: its fraction, at most the device less its context. A cap as large
  // as the device (the whole-device column) is about 0.8 GB below its nominal bytes on an H100:
  // there the reserved peak at the boundary was 83.75 GB, the cap 85.52 GB, this 84.21 GB.
  double Usable() const { return std::min(fraction * total, DeviceUsable()); }
};
// The record's memory_cap_applied as an AppliedCap; nothing where absent or not self-consistent.
std::optional<AppliedCap> AppliedCapOf(const record::CellRecord& rec);

}  // namespace dlbench::orchestrator
