// memory_cap on the host (docs/memory.md "Memory cap"): the orchestrator's part. A cpu cell's
// runner is limited by the kernel; a cuda cell's cap is the torch runner's (the caching
// allocator's per-process fraction), since a host limit would not bound device memory and could
// break the CUDA driver's own mappings.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "plan/plan.h"
#include "record/records.h"

namespace dlbench::orchestrator {

// The mechanism names stored in extras.memory_cap.mechanism.
inline constexpr const char* kCapRlimitData = "RLIMIT_DATA";
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

// Applies the cell's cap to its just-spawned runner `pid` and records what applied in
// rec.extras.memory_cap ({bytes, mechanism}): RLIMIT_DATA for a cpu cell, `runner` for a cuda
// cell (the runner reports its own in the effective cell). No cap: nothing. An error is the cell's
// (the caller ends it as `error`): a cap that was asked for and not applied must not pass silently.
Status ApplyMemoryCap(const plan::Cell& cell, pid_t pid, record::CellRecord& rec);

// The variables the cell's runner gets on top of dlbench's environment: PYTORCH_CUDA_ALLOC_CONF
// from cuda_alloc_conf (docs/memory.md "Allocator settings"), which the runner's allocator reads
// when CUDA initialises, so it must be in place before the exec, and GLIBC_TUNABLES or LD_PRELOAD
// from host_allocator (docs/memory.md "The host allocator"); empty when the cell sets neither. An
// error (kUnsupported) when host_allocator's library is not installed.
Result<std::vector<std::pair<std::string, std::string>>> CellRunnerEnvironment(const plan::Cell& cell);

// The sentence an oom cell's message ends with when the cell had a cap: "; memory_cap allowed
// 536870912 bytes (512 MiB, RLIMIT_DATA)", or empty without one.
std::string MemoryCapNote(const record::CellRecord& rec);

}  // namespace dlbench::orchestrator
