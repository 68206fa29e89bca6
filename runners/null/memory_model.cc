#include "runners/null/memory_model.h"

#include <limits>

namespace dlbench::synthetic {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// Products and sums of non-negative sizes, saturating at INT64_MAX.
std::int64_t SatMul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? kMax : r;
}
std::int64_t SatAdd(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? kMax : r;
}

}  // namespace

std::int64_t NeededBytes(const MemoryModel& model, const InputShape& shape) {
  std::int64_t need = SatAdd(model.base_bytes, SatMul(model.per_sample_bytes, shape.samples));
  need = SatAdd(need, SatMul(SatMul(model.per_token_bytes, shape.samples), shape.seq_len));
  const std::int64_t pixels = SatMul(shape.image_size, shape.image_size);
  return SatAdd(need, SatMul(SatMul(model.per_pixel_bytes, shape.samples), pixels));
}

std::optional<std::string> ModelledOom(const MemoryModel& model, const InputShape& shape,
                                       std::optional<std::int64_t> cap_bytes) {
  const std::int64_t need = NeededBytes(model, shape);
  if (!cap_bytes || need <= *cap_bytes) return std::nullopt;
  std::string terms = "base " + std::to_string(model.base_bytes) + " + " +
                      std::to_string(model.per_sample_bytes) + " per sample x " +
                      std::to_string(shape.samples);
  if (model.per_token_bytes != 0) {
    terms += " + " + std::to_string(model.per_token_bytes) + " per token x " + std::to_string(shape.samples) +
             " x " + std::to_string(shape.seq_len);
  }
  if (model.per_pixel_bytes != 0) {
    terms += " + " + std::to_string(model.per_pixel_bytes) + " per pixel x " + std::to_string(shape.samples) +
             " x " + std::to_string(shape.image_size) + "^2";
  }
  return "out of memory (memory model): tried to allocate " + std::to_string(need) + " bytes (" + terms +
         "); memory_cap is " + std::to_string(*cap_bytes) + " bytes";
}

}  // namespace dlbench::synthetic
