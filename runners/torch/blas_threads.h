// The BLAS library's own threads (docs/torch-runner.md "Threads").
//
// at::set_num_threads sets OpenMP's thread count (and MKL's in builds with it), not that of the
// BLAS library libblas.so.3 resolves to, which Debian's LibTorch calls for its matrix products.
// OpenBLAS's pthread build keeps a pool of one thread per core of its own, whose idle threads spin
// in sched_yield: on the 2-core machine a `threads: 1` cell ran two busy threads, the second's
// time almost all system time, on the core dlbench and its monitor need. So `threads` is applied
// to the BLAS library too, through whichever thread call it exports (found by name at run time,
// since which library libblas.so.3 is depends on the host's alternatives), and the effective cell
// says what the library reports.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace dlbench::torchrunner {

struct BlasThreading {
  // "openblas", "blis", or "unknown" (the reference BLAS and others: single-threaded or no known
  // thread call).
  std::string library = "unknown";
  // The library's thread count after the call, where it can say.
  std::optional<int> threads;
  // OpenBLAS's build description (openblas_get_config), where exported.
  std::string config;
};

// Sets the BLAS library's threads to `threads` when given (>= 1) and reports what it holds.
BlasThreading SetBlasThreads(std::optional<int> threads);

nlohmann::json ToJson(const BlasThreading& blas);

}  // namespace dlbench::torchrunner
