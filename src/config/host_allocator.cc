#include "config/host_allocator.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <array>
#include <cstdlib>

namespace dlbench::config {
namespace {

struct Preload {
  const char* allocator;
  const char* file;
  const char* package;
};
constexpr std::array<Preload, 2> kPreloads = {{
    {kHostAllocatorJemalloc, "libjemalloc.so.2", "libjemalloc2"},
    {kHostAllocatorTcmalloc, "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"},
}};
constexpr std::array<const char*, 5> kLibraryDirs = {
    "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"};

const Preload* FindPreload(std::string_view allocator) {
  for (const Preload& p : kPreloads) {
    if (allocator == p.allocator) return &p;
  }
  return nullptr;
}

bool IsRegularFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

const std::vector<std::string>& HostAllocators() {
  static const std::vector<std::string> values = {kHostAllocatorSystem, kHostAllocatorGlibcFixed,
                                                  kHostAllocatorJemalloc, kHostAllocatorTcmalloc};
  return values;
}

std::optional<std::string> PreloadLibrary(std::string_view allocator) {
  const Preload* preload = FindPreload(allocator);
  if (preload == nullptr) return std::nullopt;
  for (const char* dir : kLibraryDirs) {
    std::string path = fmt::format("{}/{}", dir, preload->file);
    if (IsRegularFile(path)) return path;
  }
  return std::nullopt;
}

std::string HostAllocatorProblem(std::string_view allocator) {
  const Preload* preload = FindPreload(allocator);
  if (preload == nullptr || PreloadLibrary(allocator)) return "";
  return fmt::format("{}: {} is not installed (apt-get install {})", allocator, preload->file,
                     preload->package);
}

Result<std::vector<std::pair<std::string, std::string>>> HostAllocatorEnvironment(
    std::string_view allocator, const char* inherited_tunables, const char* inherited_preload) {
  std::vector<std::pair<std::string, std::string>> env;
  if (allocator == kHostAllocatorGlibcFixed) {
    std::string tunables = fmt::format("glibc.malloc.mmap_threshold={}:glibc.malloc.trim_threshold={}",
                                       kGlibcFixedMmapThreshold, kGlibcFixedTrimThreshold);
    // A later tunable of the same name wins, so the cell's come after the inherited ones.
    if (inherited_tunables != nullptr && *inherited_tunables != '\0')
      tunables = fmt::format("{}:{}", inherited_tunables, tunables);
    env.emplace_back("GLIBC_TUNABLES", std::move(tunables));
  } else if (FindPreload(allocator) != nullptr) {
    const std::optional<std::string> library = PreloadLibrary(allocator);
    if (!library) return MakeError(ErrorKind::kUnsupported, HostAllocatorProblem(allocator));
    std::string preload = *library;
    if (inherited_preload != nullptr && *inherited_preload != '\0')
      preload = fmt::format("{}:{}", preload, inherited_preload);
    env.emplace_back("LD_PRELOAD", std::move(preload));
  } else if (allocator != kHostAllocatorSystem) {
    return MakeError(ErrorKind::kInvalidInput, fmt::format("unknown host_allocator '{}'", allocator));
  }
  return env;
}

nlohmann::json DetectHostAllocator() {
  nlohmann::json out = nlohmann::json::object();
  if (::dlsym(RTLD_DEFAULT, "mallctl") != nullptr) {
    out["malloc"] = kHostAllocatorJemalloc;
  } else if (::dlsym(RTLD_DEFAULT, "tc_malloc") != nullptr) {
    out["malloc"] = kHostAllocatorTcmalloc;
  } else {
    out["malloc"] = "glibc";
  }
  if (const char* tunables = std::getenv("GLIBC_TUNABLES")) out["glibc_tunables"] = tunables;
  return out;
}

}  // namespace dlbench::config
