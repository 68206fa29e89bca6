// The null runner's memory model (docs/memory.md "The null runner's memory model"): a cell that
// "needs" memory_base_bytes plus memory_per_sample_bytes per sample of its batch (plus, per sample,
// memory_per_token_bytes per token of seq_len and memory_per_pixel_bytes per pixel of an
// image_size^2 image), and is out of memory when that exceeds its memory_cap. Nothing is allocated, so the
// outcome depends only on the parameters: the deterministic stand-in for a model's memory that memory_cap and
// the batch_size: max search are tested with, as the virtual clock is for step times.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dlbench::synthetic {

struct MemoryModel {
  std::int64_t base_bytes = 0;        // >= 0
  std::int64_t per_sample_bytes = 0;  // >= 0
  std::int64_t per_token_bytes = 0;   // >= 0; times samples x seq_len
  std::int64_t per_pixel_bytes = 0;   // >= 0; times samples x image_size^2
};

// The sizes the model reads: the batch, and seq_len and image_size (0 when the cell sets none).
struct InputShape {
  std::int64_t samples = 0;
  std::int64_t seq_len = 0;
  std::int64_t image_size = 0;
};

// base + per_sample x samples + per_token x samples x seq_len + per_pixel x samples x
// image_size^2, saturating at INT64_MAX (every size >= 0).
std::int64_t NeededBytes(const MemoryModel& model, const InputShape& shape);
inline std::int64_t NeededBytes(const MemoryModel& model, std::int64_t samples) {
  return NeededBytes(model, InputShape{samples});
}

// The message of the modelled out-of-memory, or nullopt when the batch fits (need <= cap, or no
// cap): "out of memory (memory model): tried to allocate N bytes (base B + S per sample x bs[ +
// T per token x bs x L][ + P per pixel x bs x I^2]); memory_cap is C bytes".
std::optional<std::string> ModelledOom(const MemoryModel& model, const InputShape& shape,
                                       std::optional<std::int64_t> cap_bytes);
inline std::optional<std::string> ModelledOom(const MemoryModel& model, std::int64_t samples,
                                              std::optional<std::int64_t> cap_bytes) {
  return ModelledOom(model, InputShape{samples}, cap_bytes);
}

}  // namespace dlbench::synthetic
