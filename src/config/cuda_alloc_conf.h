// PYTORCH_CUDA_ALLOC_CONF as a cell parameter (cuda_alloc_conf; docs/memory.md "Allocator
// settings"): the grammar PyTorch documents for it (docs/source/notes/cuda.rst, "Optimizing memory
// usage with PYTORCH_CUDA_ALLOC_CONF"), checked before any runner starts, so that a typo is a
// config error at its place in the file rather than a runner that ignores or refuses the setting.
//
//   conf    := option (',' option)*            no spaces; each option at most once
//   option  := name ':' value
//   name    := backend | max_split_size_mb | roundup_power2_divisions | max_non_split_rounding_mb
//            | garbage_collection_threshold | expandable_segments | pinned_use_cuda_host_register
//            | pinned_num_register_threads | pinned_use_background_threads
//   backend                        native | cudaMallocAsync
//   max_split_size_mb              an integer > 20 (LibTorch refuses 20 and below) and <= 1048576
//   max_non_split_rounding_mb      an integer >= 1 and <= 1048576
//   roundup_power2_divisions       a power of 2 <= 1048576, or '[' size ':' divisions (',' ...)* ']'
//                                  with each size a power of 2 (MB) or '>', divisions a power of 2
//   garbage_collection_threshold   a number > 0 and < 1
//   expandable_segments, pinned_use_cuda_host_register, pinned_use_background_threads
//                                  True | False
//   pinned_num_register_threads    a power of 2 <= 128
// The bounds of 1048576 (MB, i.e. 1 TiB) are dlbench's, so that every value is bounded.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dlbench::config {

inline constexpr std::size_t kMaxCudaAllocConfChars = 512;
// The variable the orchestrator sets from cuda_alloc_conf and the runners echo in their effective
// cell (as kCudaAllocConfEffective), so the record shows what the runner's environment held.
inline constexpr const char* kCudaAllocConfEnv = "PYTORCH_CUDA_ALLOC_CONF";
inline constexpr const char* kCudaAllocConfEffective = "pytorch_cuda_alloc_conf";

// The documented option names, in the documentation's order.
const std::vector<std::string>& CudaAllocConfOptions();

// What is wrong with `text` ("unknown option 'expandable_segment' (options: ...)",
// "expandable_segments: expected True or False (got 'true')"), or empty when it is valid.
std::string CudaAllocConfProblem(std::string_view text);

}  // namespace dlbench::config
