#include "history/samples.h"

#include <algorithm>

namespace dlbench::history {

std::vector<protocol::StepRecord> MeasuredSteps(const store::CellRecord& cell) {
  std::vector<protocol::StepRecord> rank0;
  for (const store::StepRow& row : cell.steps) {
    if (row.rank == 0) rank0.push_back(row.record);
  }
  // The store keeps steps in arrival order; sorting by start makes the warm-up cut (an index into
  // the step sequence) mean the same thing whatever order the rows came back in.
  std::stable_sort(
      rank0.begin(), rank0.end(),
      [](const protocol::StepRecord& a, const protocol::StepRecord& b) { return a.start_ns < b.start_ns; });
  const std::int64_t warmup = std::max<std::int64_t>(0, cell.warmup_steps.value_or(0));
  if (warmup >= static_cast<std::int64_t>(rank0.size())) return {};
  // A cell stopped on ci_reached stores the records of steps in flight at STOP after its measured
  // ones; its measured_steps metric says where the measured window ended.
  std::int64_t end = static_cast<std::int64_t>(rank0.size());
  for (const store::MetricRecord& m : cell.metrics) {
    if (m.name == "measured_steps" && m.value >= 1)
      end = std::min(end, warmup + static_cast<std::int64_t>(m.value));
  }
  return std::vector<protocol::StepRecord>(rank0.begin() + warmup, rank0.begin() + end);
}

std::vector<StepBatch> CutBatches(const std::vector<protocol::StepRecord>& steps) {
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
      const protocol::StepRecord& r = steps[static_cast<std::size_t>(i)];
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
