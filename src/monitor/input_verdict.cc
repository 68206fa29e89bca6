#include "monitor/input_verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace dlbench::monitor {

StepPhaseTotals SumStepPhases(const std::vector<record::StepRecord>& steps) {
  StepPhaseTotals t;
  std::vector<double> waits;
  for (const record::StepRecord& s : steps) {
    if ((s.present & record::kHasDataWait) == 0 || (s.present & record::kHasCompute) == 0) continue;
    const double step = static_cast<double>(s.end_ns - s.start_ns);
    const double wait = static_cast<double>(s.data_wait_ns);
    double compute = static_cast<double>(s.compute_ns);
    if (s.present & record::kHasComm) compute += static_cast<double>(s.comm_ns);
    ++t.steps;
    t.step_ns += step;
    t.wait_ns += wait;
    t.compute_ns += compute;
    t.copy_ns += std::max(0.0, step - wait - compute);
    waits.push_back(wait);
  }
  if (t.wait_ns > 0) {
    const std::size_t top = std::max<std::size_t>(1, waits.size() / 10);
    std::partial_sort(waits.begin(), waits.begin() + static_cast<std::ptrdiff_t>(top), waits.end(),
                      std::greater<>());
    double sum = 0;
    for (std::size_t i = 0; i < top; ++i) sum += waits[i];
    t.wait_top_decile_share = sum / t.wait_ns;
  }
  return t;
}

double EnergyDuringIntervals(const std::vector<std::pair<std::int64_t, double>>& power,
                             const std::vector<std::pair<std::int64_t, std::int64_t>>& intervals) {
  if (power.size() < 2) return 0;
  // Power is linear between samples; the integral of one segment clipped to [a, b].
  auto at = [](const std::pair<std::int64_t, double>& p0, const std::pair<std::int64_t, double>& p1,
               double t) {
    const double span = static_cast<double>(p1.first - p0.first);
    return span > 0 ? p0.second + (p1.second - p0.second) * (t - static_cast<double>(p0.first)) / span
                    : p0.second;
  };
  double joules = 0;
  for (const auto& [begin, end] : intervals) {
    if (end <= begin) continue;
    // The first segment that ends after `begin`.
    auto it = std::upper_bound(
        power.begin(), power.end(), begin,
        [](std::int64_t t, const std::pair<std::int64_t, double>& p) { return t < p.first; });
    if (it == power.begin()) it = power.begin() + 1;
    for (; it != power.end(); ++it) {
      const auto& p0 = *(it - 1);
      const auto& p1 = *it;
      const double a = static_cast<double>(std::max(begin, p0.first));
      const double b = static_cast<double>(std::min(end, p1.first));
      if (b > a) joules += 0.5 * (at(p0, p1, a) + at(p0, p1, b)) * (b - a) * 1e-9;
      if (p1.first >= end) break;
    }
  }
  return joules;
}

const char* InputBoundName(InputBound bound) {
  switch (bound) {
    case InputBound::kComputeBound:
      return "compute-bound";
    case InputBound::kInputBound:
      return "input-bound";
    case InputBound::kCopyBound:
      return "copy-bound";
  }
  return "compute-bound";
}

InputVerdict DecideInputBound(const InputVerdictInputs& in) {
  DLBENCH_CHECK(in.samples_per_s > 0 && in.control_samples_per_s > 0,
                "DecideInputBound needs the cell's and its control's samples/s");
  InputVerdict v;
  v.slowdown = 1.0 - in.samples_per_s / in.control_samples_per_s;
  v.control_speedup = in.control_samples_per_s / in.samples_per_s;
  v.wait_share = in.phases.wait_share();
  v.copy_share = in.phases.copy_share();
  v.compute_share = in.phases.compute_share();
  if (in.gpu_util_mean_pct) v.gpu_idle_share = std::clamp(1.0 - *in.gpu_util_mean_pct / 100.0, 0.0, 1.0);
  if (in.energy_while_waiting_j) {
    v.waiting_energy_j = *in.energy_while_waiting_j;
    if (in.energy_total_j && *in.energy_total_j > 0)
      v.waiting_energy_share = *in.energy_while_waiting_j / *in.energy_total_j;
  }
  const auto pct = [](double share) { return 100.0 * share; };
  v.reasons.push_back(
      fmt::format("{:.0f} samples/s against {:.0f} with data: device (the control is {:.2f}x faster)",
                  in.samples_per_s, in.control_samples_per_s, v.control_speedup));
  v.reasons.push_back(fmt::format("step time: {:.0f}% waiting for data, {:.0f}% copying, {:.0f}% computing",
                                  pct(v.wait_share), pct(v.copy_share), pct(v.compute_share)));
  if (v.gpu_idle_share)
    v.reasons.push_back(fmt::format("the GPU was idle {:.0f}% of the window", pct(*v.gpu_idle_share)));
  if (v.waiting_energy_j) {
    v.reasons.push_back(
        v.waiting_energy_share
            ? fmt::format("{:.1f} J ({:.0f}% of the cell's energy) was spent while the step waited for data",
                          *v.waiting_energy_j, pct(*v.waiting_energy_share))
            : fmt::format("{:.1f} J was spent while the step waited for data", *v.waiting_energy_j));
  }

  if (v.slowdown < kBoundSlowdown) {
    v.bound = InputBound::kComputeBound;
    if (v.wait_share >= 0.10) {
      v.reasons.push_back(
          fmt::format("the step waits {:.0f}% of its time, yet runs within {:.0f}% of the control's speed: "
                      "the control is "
                      "noisy, or the wait overlaps work the control also waits for",
                      pct(v.wait_share), pct(kBoundSlowdown)));
    }
    return v;
  }

  const PipelineFacts& p = in.pipeline;
  if (v.copy_share > v.wait_share && v.copy_share >= kMinPhaseShare) {
    v.bound = InputBound::kCopyBound;
    if (!p.pin_memory) v.advice.push_back("pin_memory: true (page-locked host batches copy by DMA, faster)");
    if (!p.async_copy) v.advice.push_back("async_copy: true (copy the next batch while this step computes)");
    if (p.pin_memory && p.async_copy) {
      v.advice.push_back(
          "the copy itself is the limit even overlapped: move fewer bytes (uint8 images, normalised on the "
          "device)");
    }
    return v;
  }

  v.bound = InputBound::kInputBound;
  if (v.wait_share < kMinPhaseShare && v.copy_share < kMinPhaseShare) {
    v.reasons.push_back(
        "the step barely waits, yet runs slower than the control: the pipeline's threads compete with the "
        "training loop for the CPU");
    v.advice.push_back(
        fmt::format("fewer data_workers ({} now) or a core kept for the training loop", p.workers));
    return v;
  }
  // The pipeline's own rate (its pipeline_only twin's samples/s) against what the model takes
  // (the control's): a pipeline that keeps up alone loses its rate to fluctuations or to the
  // model's use of the CPU; one that does not is short of rate, which no queue makes up.
  const std::optional<double>& alone = in.pipeline_samples_per_s;
  const double demand = in.control_samples_per_s;
  const bool bursty = in.phases.wait_top_decile_share >= kBurstyTopDecile;
  const bool short_of_rate = alone && *alone < demand;
  bool advised_cache = false;
  if (alone && !short_of_rate) {
    v.reasons.push_back(fmt::format(
        "the pipeline alone (its pipeline_only twin) delivers {:.0f} samples/s, {:.2f}x the {:.0f} the model "
        "takes, yet the step gets {:.0f} beside the model",
        *alone, *alone / demand, demand, in.samples_per_s));
    const bool blocked = p.worker_busy_pct && *p.worker_busy_pct < kSaturatedCpuPct;
    if (bursty || blocked) {
      std::string why = "the pipeline keeps up on average, so a deeper queue absorbs its fluctuations";
      if (bursty) {
        why += fmt::format("; the longest 10% of waits hold {:.0f}% of the waiting",
                           pct(in.phases.wait_top_decile_share));
      }
      if (blocked) {
        why +=
            fmt::format("; the workers were busy {:.0f}% of the time and blocked the rest with batches made",
                        *p.worker_busy_pct);
      }
      v.advice.push_back(fmt::format("more prefetch ({} now): {}", p.prefetch, why));
    } else {
      v.reasons.push_back(fmt::format(
          "the waits are steady{}: beside the model the pipeline runs slower than alone (they share the "
          "CPU), which more prefetch does not change",
          p.worker_busy_pct ? fmt::format(" and the workers busy {:.0f}% of the time", *p.worker_busy_pct)
                            : ""));
    }
  }
  if (short_of_rate) {
    v.reasons.push_back(fmt::format(
        "the pipeline alone delivers {:.0f} samples/s, below the {:.0f} the model takes (its pipeline_only "
        "twin): a shortfall of rate, which more prefetch cannot make up",
        *alone, demand));
    if (p.workers > 0) {
      const int needed = static_cast<int>(std::ceil(static_cast<double>(p.workers) * demand / *alone));
      if (p.usable_cores <= 0 || needed <= p.usable_cores) {
        v.advice.push_back(fmt::format(
            "more data_workers: about {} ({} now) if the rate grows with the workers: {} deliver {:.0f} "
            "samples/s alone and the model takes {:.0f}",
            needed, p.workers, p.workers, *alone, demand));
      } else {
        advised_cache = !p.cache;
        v.advice.push_back(fmt::format(
            "{}a cheaper decode (smaller images, decoding on the GPU): at {:.0f} samples/s per worker the "
            "model's {:.0f} needs about {} workers, more than the {} cores the runner may use",
            p.cache ? "" : "cache: true, or ", *alone / p.workers, demand, needed, p.usable_cores));
      }
    }
  } else if (p.worker_cpu_util_pct && *p.worker_cpu_util_pct >= kSaturatedCpuPct) {
    if (p.workers < p.usable_cores) {
      v.advice.push_back(fmt::format(
          "more data_workers: the {} workers use {:.0f}% of their CPU and the runner may use {} cores",
          p.workers, *p.worker_cpu_util_pct, p.usable_cores));
    } else {
      v.advice.push_back(
          fmt::format("the {} workers use {:.0f}% of their CPU on all {} cores: cache: true, or a cheaper "
                      "decode (smaller "
                      "images, decoding on the GPU)",
                      p.workers, *p.worker_cpu_util_pct, p.usable_cores));
    }
  }
  if (!alone && bursty) {
    v.advice.push_back(
        fmt::format("more prefetch ({} now): the waits come in bursts (the longest 10% of waits hold {:.0f}% "
                    "of the waiting)",
                    p.prefetch, pct(in.phases.wait_top_decile_share)));
  }
  if (p.decode_pct && *p.decode_pct >= kDecodeDominatesPct && !p.cache && !advised_cache) {
    v.advice.push_back(
        fmt::format("cache: true: decoding takes {:.0f}% of the workers' time", *p.decode_pct));
  }
  if (p.worker_busy_pct && *p.worker_busy_pct >= kSaturatedCpuPct && p.worker_cpu_util_pct &&
      *p.worker_cpu_util_pct < kIdleInIoCpuPct && p.read_pct && *p.read_pct >= kIoReadPct) {
    v.advice.push_back(
        fmt::format("a faster disk (or data in the page cache): the busy workers use {:.0f}% CPU and spend "
                    "{:.0f}% of their "
                    "time reading",
                    *p.worker_cpu_util_pct, *p.read_pct));
  }
  return v;
}

}  // namespace dlbench::monitor
