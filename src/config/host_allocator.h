// The runner process's host memory allocator as a cell parameter (host_allocator; docs/memory.md
// "The host allocator").
//
// LibTorch's CPU tensors come from malloc. glibc's malloc serves a block of 128 KiB or more with
// its own mmap and returns it to the kernel on free, raising that threshold as it sees such blocks
// freed and trimming the heap's top whenever 128 KiB lie free there; so a training step's large
// activations are page-faulted and zeroed again on some steps and not on others, and which depends
// on the allocator's history in the process. On the 2-core machine this was most of the runners'
// system time (20.8 s of 48 CPU-seconds for the quickstart's training cells) and shifts of several
// percent within a window. `glibc_fixed` fixes both thresholds so that freed blocks stay in the
// heap; `jemalloc` and `tcmalloc` (Debian's libjemalloc2 and libtcmalloc-minimal4) are preloaded,
// as PyTorch's CPU performance guide suggests. Absent (or `system`): the runner's malloc as
// dlbench's environment gives it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace dlbench::config {

inline constexpr const char* kHostAllocatorKey = "host_allocator";
inline constexpr const char* kHostAllocatorSystem = "system";
inline constexpr const char* kHostAllocatorGlibcFixed = "glibc_fixed";
inline constexpr const char* kHostAllocatorJemalloc = "jemalloc";
inline constexpr const char* kHostAllocatorTcmalloc = "tcmalloc";
// The runners' effective-cell field: what allocator the process found itself running with.
inline constexpr const char* kHostAllocatorEffective = "host_allocator";

// glibc_fixed's thresholds: every block from the heap (none mmapped on its own) and the heap's
// top never returned to the kernel. glibc 2.36 takes both values from GLIBC_TUNABLES.
inline constexpr std::uint64_t kGlibcFixedMmapThreshold = std::uint64_t{1} << 32;
inline constexpr std::uint64_t kGlibcFixedTrimThreshold = std::uint64_t{1} << 32;

// The allowed values, `system` first.
const std::vector<std::string>& HostAllocators();

// The shared library preloaded for `allocator` (jemalloc, tcmalloc) where it is installed: the first
// of Debian's multiarch paths that is a regular file; nullopt for the other values or when none is.
std::optional<std::string> PreloadLibrary(std::string_view allocator);

// Why `allocator` cannot run on this host ("jemalloc: libjemalloc.so.2 is not installed (apt-get
// install libjemalloc2)"), or empty.
std::string HostAllocatorProblem(std::string_view allocator);

// The variables a runner gets for `allocator` on top of dlbench's environment, whose own
// GLIBC_TUNABLES and LD_PRELOAD (`inherited_*`, null when unset) are kept: the new setting is
// appended to the first and prepended to the second. `system`: none. An error when the library
// is missing.
Result<std::vector<std::pair<std::string, std::string>>> HostAllocatorEnvironment(
    std::string_view allocator, const char* inherited_tunables, const char* inherited_preload);

// What this process runs with: {"malloc": "jemalloc" | "tcmalloc" | "glibc", "glibc_tunables": ...
// (when set)}: jemalloc and tcmalloc are recognised by a symbol only they define (mallctl,
// tc_malloc), so a preload that did not take shows as glibc.
nlohmann::json DetectHostAllocator();

}  // namespace dlbench::config
