// The null runner's memory model (docs/memory.md "The null runner's memory model"): a cell that
// "needs" memory_base_bytes plus memory_per_sample_bytes per sample of its batch, and is out of
// memory when that exceeds its memory_cap. Nothing is allocated, so the outcome depends only on
// the parameters: the deterministic stand-in for a model's memory that memory_cap and the
// batch_size: max search are tested with, as the virtual clock is for step times.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dlbench::synthetic {

struct MemoryModel {
  std::int64_t base_bytes = 0;        // >= 0
  std::int64_t per_sample_bytes = 0;  // >= 0
};

// base + per_sample x samples, saturating at INT64_MAX (samples >= 0).
std::int64_t NeededBytes(const MemoryModel& model, std::int64_t samples);

// The message of the modelled out-of-memory, or nullopt when the batch fits (need <= cap, or no
// cap): "out of memory (memory model): tried to allocate N bytes (base B + S per sample x bs);
// memory_cap is C bytes".
std::optional<std::string> ModelledOom(const MemoryModel& model, std::int64_t samples,
                                       std::optional<std::int64_t> cap_bytes);

}  // namespace dlbench::synthetic
