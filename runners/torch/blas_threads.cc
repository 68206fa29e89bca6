#include "blas_threads.h"

#include <dlfcn.h>

#include <cstdint>

namespace dlbench::torchrunner {
namespace {

template <typename F>
F Find(const char* name) {
  return reinterpret_cast<F>(
      ::dlsym(RTLD_DEFAULT, name));  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
}

}  // namespace

BlasThreading SetBlasThreads(std::optional<int> threads) {
  BlasThreading out;
  using SetInt = void (*)(int);
  using GetInt = int (*)();
  using GetText = char* (*)();
  if (auto set = Find<SetInt>("openblas_set_num_threads")) {
    out.library = "openblas";
    if (threads && *threads >= 1) set(*threads);
    if (auto get = Find<GetInt>("openblas_get_num_threads")) out.threads = get();
    if (auto config = Find<GetText>("openblas_get_config"); config != nullptr && config() != nullptr)
      out.config = config();
    return out;
  }
  // BLIS's dim_t is a 64-bit integer in Debian's builds.
  using SetDim = void (*)(std::int64_t);
  using GetDim = std::int64_t (*)();
  if (auto set = Find<SetDim>("bli_thread_set_num_threads")) {
    out.library = "blis";
    if (threads && *threads >= 1) set(*threads);
    if (auto get = Find<GetDim>("bli_thread_get_num_threads")) out.threads = static_cast<int>(get());
  }
  return out;
}

nlohmann::json ToJson(const BlasThreading& blas) {
  nlohmann::json j = {{"library", blas.library}};
  j["threads"] = blas.threads ? nlohmann::json(*blas.threads) : nlohmann::json(nullptr);
  if (!blas.config.empty()) j["config"] = blas.config;
  return j;
}

}  // namespace dlbench::torchrunner
