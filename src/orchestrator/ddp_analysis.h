// The figures of a data-parallel cell (strategy: ddp; docs/distributed.md "What each figure
// means"), computed by the orchestrator from every rank's stored step records over rank 0's
// measured span (rank 0's window decides; the other ranks are cut at the same CLOCK_MONOTONIC
// instants, which one host shares): global and per-rank samples/s, the slowest rank and its lag,
// the serial all-reduce's share of the step; and, against cells of the same run that the plan
// found (plan/ddp_references.h), scaling efficiency, exposed communication and overlap. A figure
// that cannot be computed is absent, and extras[record::kDdpScalingExtrasKey] says why, as the
// input verdict's why_none does. A model: allreduce cell gets nccl-tests' algorithm and bus
// bandwidths instead.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "record/records.h"

namespace dlbench::orchestrator {

// A cell's world_size (1 when absent) and ddp_mode ("overlap" when absent), as stored.
int DdpWorldSize(const record::CellRecord& cell);
std::string DdpModeOf(const record::CellRecord& cell);

// The samples `steps` did within [from_ns, to_ns]: each step's samples times the share of its
// duration inside the span; a step of no duration counts whole when it lies inside.
double SamplesInSpan(const std::vector<record::StepRecord>& steps, std::int64_t from_ns, std::int64_t to_ns);

// A step's own time: end - start, less comm_ns when the step reports it (the all-reduce after
// backward in ddp_mode serial, the per-step barrier in compute_only: where a rank waits for the
// slowest).
double OwnStepNs(const record::StepRecord& step);

struct RankFigures {
  std::uint32_t rank = 0;
  double samples_per_s = 0;                // SamplesInSpan / the span
  std::int64_t steps_inside = 0;           // steps wholly inside the span
  std::optional<double> own_step_mean_ns;  // mean OwnStepNs of those; none without any
};

// Every rank's figures over [from_ns, to_ns] (to_ns > from_ns), ordered by rank.
std::vector<RankFigures> RankFiguresInSpan(const std::vector<record::StepRow>& rows, std::int64_t from_ns,
                                           std::int64_t to_ns);

struct Straggler {
  std::uint32_t slowest_rank = 0;
  std::uint32_t fastest_rank = 0;
  double lag_ns = 0;   // slowest's own_step_mean_ns - fastest's
  double lag_pct = 0;  // lag_ns / fastest's x 100
};
// Among ranks with an own_step_mean_ns; none with fewer than two such ranks or a fastest mean of 0.
// Ties go to the lower rank.
std::optional<Straggler> FindStraggler(const std::vector<RankFigures>& ranks);

// Sum of comm_ns / sum of step time over the steps that report comm_ns; none without any, or when
// their steps took no time.
std::optional<double> CommShare(const std::vector<record::StepRecord>& steps);
// Mean comm_ns over the steps that report it; none without any.
std::optional<double> CommMeanNs(const std::vector<record::StepRecord>& steps);

// 1 - exposed / serial all-reduce time; none when the serial time is not positive. Not clamped:
// noise can put it a little outside [0, 1], and that is shown as measured.
std::optional<double> OverlapFraction(double exposed_ns, double serial_comm_ns);

// nccl-tests' all-reduce bus bandwidth: algbw x 2 (n - 1) / n; 0 for one rank.
double AllReduceBusBandwidth(double algbw_bytes_per_s, int world_size);

// The cell's own figures: nothing but its steps needed. Only for an ok ddp cell with a measured
// window; others are left as they are.
void AddDdpFigures(record::CellRecord& cell);

// The same run's cells a ddp cell is compared with (plan::Cell's ddp_*_id): each id empty when the
// plan has no such cell, each record null when it did not run in this invocation (steps and series
// need not be loaded; their metrics are read).
struct DdpReferenceCells {
  std::string scaling_control_id;
  const record::CellRecord* scaling_control = nullptr;
  std::string compute_only_id;
  const record::CellRecord* compute_only = nullptr;
  std::string serial_id;
  const record::CellRecord* serial = nullptr;
};

// Scaling efficiency (world_size > 1), exposed communication (ddp_mode overlap and serial) and
// overlap (ddp_mode overlap), each as metrics when its reference is at hand and measured, and
// under extras[kDdpScalingExtrasKey] with the reference's id or why there is none. Call after
// AddDdpFigures. Only for ok ddp cells.
void AddDdpComparisons(record::CellRecord& cell, const DdpReferenceCells& refs);

}  // namespace dlbench::orchestrator
