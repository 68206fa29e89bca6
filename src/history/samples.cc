#include "history/samples.h"

#include <algorithm>

namespace dlbench::history {

std::vector<StepBatch> CutBatches(const std::vector<record::StepRecord>& steps) {
  const auto n = static_cast<std::int64_t>(steps.size());
  const std::int64_t batches = std::min<std::int64_t>(kTargetBatches, n);
  if (batches == 0) return {};
  const std::int64_t size = n / batches;
  std::vector<StepBatch> out;
  out.reserve(static_cast<std::size_t>(batches));
  for (std::int64_t b = 0; b < batches; ++b) {
    const std::int64_t begin = n - (batches - b) * size;
    StepBatch batch;
    batch.steps = size;
    batch.step_ns.reserve(static_cast<std::size_t>(size));
    double total_ns = 0;
    double samples = 0;
    for (std::int64_t i = begin; i < begin + size; ++i) {
      const record::StepRecord& r = steps[static_cast<std::size_t>(i)];
      const auto ns = static_cast<double>(r.end_ns - r.start_ns);
      batch.step_ns.push_back(ns);
      total_ns += ns;
      samples += static_cast<double>(r.samples);
    }
    batch.mean_step_ns = total_ns / static_cast<double>(size);
    // A batch of zero-length steps has no meaningful rate; 0 keeps it visible rather than infinite.
    batch.samples_per_s = total_ns > 0 ? samples / (total_ns * 1e-9) : 0.0;
    out.push_back(std::move(batch));
  }
  return out;
}

}  // namespace dlbench::history
