#include "orchestrator/input_analysis.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "monitor/input_verdict.h"
#include "record/metrics.h"
#include "record/outcome.h"
#include "record/series.h"

namespace dlbench::orchestrator {
namespace {

namespace metric = record::metric;
using nlohmann::json;

void Unconcluded(record::CellRecord& cell, const std::string& control_id, const std::string& why) {
  cell.extras[record::kInputVerdictExtrasKey] =
      json{{"bound", nullptr}, {"control_cell", control_id}, {"why_none", why}};
}

int EffectiveInt(const json& effective, const char* key) {
  auto it = effective.find(key);
  return it != effective.end() && it->is_number_integer() ? it->get<int>() : 0;
}

bool EffectiveBool(const json& effective, const char* key) {
  auto it = effective.find(key);
  return it != effective.end() && it->is_boolean() && it->get<bool>();
}

// The waits of the measured steps, as [start, start + data_wait): the torch runner's step waits
// for its batch first (runners/torch/data/feeder.cc).
std::vector<std::pair<std::int64_t, std::int64_t>> WaitIntervals(
    const std::vector<record::StepRecord>& steps) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (const record::StepRecord& s : steps) {
    if ((s.present & record::kHasDataWait) != 0 && s.data_wait_ns > 0) {
      out.emplace_back(s.start_ns, s.start_ns + s.data_wait_ns);
    }
  }
  return out;
}

// The energy of the cell's GPUs while its steps waited: each gpu<i>.power_w series integrated over
// the waits, summed over GPUs. nullopt without a power series.
std::optional<double> WaitingEnergyJ(const record::CellRecord& cell,
                                     const std::vector<record::StepRecord>& steps) {
  std::map<int, std::vector<std::pair<std::int64_t, double>>> power;
  for (const record::SeriesPoint& p : cell.series) {
    auto ref = record::series::ParseGpuSeriesName(p.series);
    if (ref && ref->field == record::series::kPowerW) power[ref->index].emplace_back(p.t_ns, p.value);
  }
  if (power.empty()) return std::nullopt;
  const auto waits = WaitIntervals(steps);
  double joules = 0;
  for (auto& [index, points] : power) {
    std::sort(points.begin(), points.end());
    joules += monitor::EnergyDuringIntervals(points, waits);
  }
  return joules;
}

}  // namespace

void AddInputVerdict(record::CellRecord& cell, const record::CellRecord* control,
                     const std::string& control_id, const record::CellRecord* pipeline,
                     const std::string& pipeline_id) {
  if (cell.outcome != record::Outcome::kOk) return;
  if (control == nullptr) {
    Unconcluded(
        cell, control_id,
        fmt::format("its control {} (data: device) did not run in this invocation (with --shard it may be "
                    "in another shard)",
                    control_id));
    return;
  }
  if (control->outcome != record::Outcome::kOk) {
    Unconcluded(cell, control_id,
                fmt::format("its control {} ended {}", control->label, record::Name(control->outcome)));
    return;
  }
  const std::optional<double> speed = record::MetricValue(cell, metric::kSamplesPerS);
  const std::optional<double> control_speed = record::MetricValue(*control, metric::kSamplesPerS);
  if (!speed || !control_speed || *speed <= 0 || *control_speed <= 0) {
    Unconcluded(cell, control_id,
                fmt::format("{} has no samples_per_s to compare",
                            !speed || *speed <= 0 ? "the cell" : "its control"));
    return;
  }
  const std::vector<record::StepRecord> steps = record::MeasuredSteps(cell);

  monitor::InputVerdictInputs in;
  in.phases = monitor::SumStepPhases(steps);
  in.samples_per_s = *speed;
  in.control_samples_per_s = *control_speed;
  in.gpu_util_mean_pct = record::MetricValue(cell, metric::kGpuUtilMeanPct);
  in.energy_total_j = record::MetricValue(cell, metric::kEnergyTotalJ);
  in.energy_while_waiting_j = WaitingEnergyJ(cell, steps);
  std::optional<std::string> twin_unusable;
  if (!pipeline_id.empty()) {
    const std::optional<double> rate =
        pipeline != nullptr ? record::MetricValue(*pipeline, metric::kSamplesPerS) : std::nullopt;
    if (pipeline == nullptr) {
      twin_unusable = fmt::format("its pipeline_only twin {} did not run in this invocation", pipeline_id);
    } else if (pipeline->outcome != record::Outcome::kOk) {
      twin_unusable =
          fmt::format("its pipeline_only twin {} ended {}", pipeline->label, record::Name(pipeline->outcome));
    } else if (!rate || *rate <= 0) {
      twin_unusable = fmt::format("its pipeline_only twin {} has no samples_per_s", pipeline->label);
    } else {
      in.pipeline_samples_per_s = *rate;
    }
  }
  monitor::PipelineFacts& p = in.pipeline;
  p.workers = EffectiveInt(cell.effective, "data_workers");
  p.usable_cores = EffectiveInt(cell.effective, "usable_cores");
  p.prefetch = EffectiveInt(cell.effective, "prefetch");
  p.cache = EffectiveBool(cell.effective, "cache");
  p.pin_memory = EffectiveBool(cell.effective, "pin_memory");
  p.async_copy = EffectiveBool(cell.effective, "async_copy");
  p.worker_cpu_util_pct = record::MetricValue(cell, metric::kDataWorkerCpuUtilPct);
  p.worker_busy_pct = record::MetricValue(cell, metric::kDataWorkerBusyPct);
  p.read_pct = record::MetricValue(cell, metric::kDataReadPct);
  p.decode_pct = record::MetricValue(cell, metric::kDataDecodePct);

  monitor::InputVerdict v = monitor::DecideInputBound(in);
  if (twin_unusable) v.reasons.push_back(*twin_unusable + ": the pipeline's own rate is unknown");
  record::SetMetric(cell, metric::kInputControlSpeedup, v.control_speedup);
  record::SetMetric(cell, metric::kInputSlowdownPct, v.slowdown * 100.0);
  if (in.phases.steps > 0) {
    record::SetMetric(cell, metric::kInputWaitSharePct, v.wait_share * 100.0);
    record::SetMetric(cell, metric::kInputCopySharePct, v.copy_share * 100.0);
    record::SetMetric(cell, metric::kInputComputeSharePct, v.compute_share * 100.0);
  }
  if (v.gpu_idle_share) record::SetMetric(cell, metric::kInputGpuIdleSharePct, *v.gpu_idle_share * 100.0);
  if (v.waiting_energy_j) record::SetMetric(cell, metric::kInputWaitingEnergyJ, *v.waiting_energy_j);
  if (v.waiting_energy_share) {
    record::SetMetric(cell, metric::kInputWaitingEnergySharePct, *v.waiting_energy_share * 100.0);
  }
  cell.extras[record::kInputVerdictExtrasKey] = json{{"bound", monitor::InputBoundName(v.bound)},
                                                     {"control_cell", control_id},
                                                     {"control_label", control->label},
                                                     {"reasons", v.reasons},
                                                     {"advice", v.advice}};
  if (in.pipeline_samples_per_s) {
    json& stored = cell.extras[record::kInputVerdictExtrasKey];
    stored["pipeline_cell"] = pipeline_id;
    stored["pipeline_label"] = pipeline->label;
    stored["pipeline_samples_per_s"] = *in.pipeline_samples_per_s;
  }
}

}  // namespace dlbench::orchestrator
