// The measurement policy: one place that decides where warm-up ends and when a cell has been
// measured enough (docs/measurement.md). The orchestrator feeds it rank 0's step records as
// they stream in.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/matrix.h"
#include "protocol/wire.h"
#include "record/records.h"

namespace dlbench::measure {

// Summary of the measured (post-warm-up) steps of a cell. Times in nanoseconds as double.
// A statistic that the data cannot give is NaN, never 0: with no measured step every double is
// NaN except window_s (0); with one step stddev_ns and cv are NaN; without enough steps for
// batch means (20) ci_low_ns, ci_high_ns and ci_rel_halfwidth are NaN; with window_s == 0 the
// rates are NaN. Quantiles are type 7 (R's default); cv = stddev / mean.
struct StepSummary {
  std::int64_t steps = 0;
  std::int64_t samples = 0;
  double mean_ns = 0, median_ns = 0, stddev_ns = 0, cv = 0, min_ns = 0, max_ns = 0;
  double p50_ns = 0, p90_ns = 0, p95_ns = 0, p99_ns = 0;
  double ci_low_ns = 0, ci_high_ns = 0;  // batch-means CI of the mean step time
  double ci_rel_halfwidth = 0;           // (ci_high - ci_low) / 2 / mean
  double window_s = 0;                   // first measured start .. last measured end
  double samples_per_s = 0;              // samples / window
  double steps_per_s = 0;                // steps / window
};

struct Decision {
  bool stop = false;
  std::string reason;  // "ci_reached", "max_time", "max_steps" when stop
};

struct Outcome {
  std::int64_t warmup_steps = 0;  // records [0, warmup_steps) are warm-up
  std::string warmup_rule;        // e.g. "mser5" or "minimum"
  std::string stop_reason;        // why measurement stopped (as Decision::reason, or the runner's)
  bool enough_data = false;       // at least min_steps measured steps and min_time measured
  std::string insufficiency;      // why not enough, when !enough_data
  StepSummary summary;

  // The measured window as stored with the cell: rank-0 steps [warmup_steps, warmup_steps +
  // summary.steps).
  record::MeasuredWindow Window() const { return {warmup_steps, summary.steps}; }
};

// The stopping rule, evaluated by Evaluate() (docs/measurement.md, "Stopping rule"): ceilings
// first, then the CI target. Ceilings count every record, warm-up included, because they bound the
// cell's cost: "max_steps" when records >= max_steps, "max_time" when last end - first start >=
// max_time_s. Otherwise "ci_reached" when, after the current MSER-5 warm-up cut, measured steps
// >= min_steps, measured time >= min_time_s and the batch-means CI half-width / mean <=
// target_rel_ci. The warm-up cut and CI (O(n)) are recomputed only when the record count has
// doubled since the last computation, or when at least kReevaluateMinStepTimeNs of step time has
// passed and either the count grew by 1/32 or kReevaluateMaxStepTimeNs of step time has passed.
class MeasurePolicy {
 public:
  static constexpr std::int64_t kReevaluateMinStepTimeNs = 100'000'000;
  static constexpr std::int64_t kReevaluateMaxStepTimeNs = 1'000'000'000;

  explicit MeasurePolicy(const config::MeasureSettings& settings);

  // Appends records (in step order). Amortised O(1) per record.
  void Add(const record::StepRecord* records, std::size_t count);
  // Whether the orchestrator should send STOP now (never with whole_run). Cheap enough to call after every
  // batch (re-evaluates the warm-up cut and CI at most every few hundred milliseconds of steps).
  Decision Evaluate();
  // Final verdict over everything recorded; stop_reason is used when Evaluate never stopped.
  // With whole_run: no warm-up (rule kWholeRunRule), every record measured, enough_data with
  // at least one record.
  // The warm-up cut is recomputed over all records; warmup_rule is "mser5" when MSER-5 chose it,
  // "minimum" when the series was too short for MSER-5 (< 20 records) or min_warmup_steps was
  // later than MSER-5's cut. insufficiency names each unmet minimum ("" when enough_data).
  Outcome Finish(const std::string& stop_reason_if_not_decided) const;

  std::int64_t steps_seen() const { return static_cast<std::int64_t>(records_.size()); }
  const std::vector<record::StepRecord>& records() const { return records_; }

 private:
  config::MeasureSettings settings_;
  std::vector<record::StepRecord> records_;
  std::optional<Decision> decided_;
  // The warm-up cut the ci_reached decision was made with; Finish keeps it (see policy.cc).
  std::optional<std::pair<std::size_t, const char*>> decided_cut_;
  std::size_t decided_records_ = 0;  // records the ci_reached decision saw: the measured end
  std::size_t last_evaluated_size_ = 0;
  std::int64_t last_evaluated_end_ns_ = 0;
};

// The warm-up rule of a whole-run window (MeasureSettings::whole_run).
inline constexpr std::string_view kWholeRunRule = "whole_run";

// The settings for one cell: `settings` as the matrix gives them, with whole_run set for a cell
// whose window is its whole run (scenario: converge), and then the step ceiling at its largest
// (10,000,000) so that the runner's CONFIGURE limits, which sit past it, never end the training.
config::MeasureSettings SettingsForCell(const config::MeasureSettings& settings,
                                        const std::map<std::string, config::Value>& params);

// Summarises records[warmup, end) with the settings' CI level (warmup past the end: no steps).
// Step time is end_ns - start_ns; the window runs from records[warmup].start_ns to the last
// end_ns; samples is the sum of the records' samples.
StepSummary Summarize(const std::vector<record::StepRecord>& records, std::size_t warmup, double ci_level);

}  // namespace dlbench::measure
