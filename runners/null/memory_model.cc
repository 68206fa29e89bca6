#include "runners/null/memory_model.h"

#include <limits>

namespace dlbench::synthetic {

std::int64_t NeededBytes(const MemoryModel& model, std::int64_t samples) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  if (samples > 0 && model.per_sample_bytes > (kMax - model.base_bytes) / samples) return kMax;
  return model.base_bytes + model.per_sample_bytes * samples;
}

std::optional<std::string> ModelledOom(const MemoryModel& model, std::int64_t samples,
                                       std::optional<std::int64_t> cap_bytes) {
  const std::int64_t need = NeededBytes(model, samples);
  if (!cap_bytes || need <= *cap_bytes) return std::nullopt;
  return "out of memory (memory model): tried to allocate " + std::to_string(need) + " bytes (base " +
         std::to_string(model.base_bytes) + " + " + std::to_string(model.per_sample_bytes) +
         " per sample x " + std::to_string(samples) + "); memory_cap is " + std::to_string(*cap_bytes) +
         " bytes";
}

}  // namespace dlbench::synthetic
