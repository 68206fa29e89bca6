#include "measure/policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/human_text.h"
#include "stats/descriptive.h"
#include "stats/steady_state.h"

namespace dlbench::measure {
namespace {

constexpr double kNsPerS = 1e9;

// Integer subtraction first: the difference of two CLOCK_MONOTONIC stamps is exact in int64,
// while converting each stamp to double first could round away nanoseconds.
std::vector<double> StepTimesNs(const std::vector<record::StepRecord>& records, std::size_t begin) {
  std::vector<double> out;
  out.reserve(records.size() - std::min(begin, records.size()));
  for (std::size_t i = begin; i < records.size(); ++i) {
    out.push_back(static_cast<double>(records[i].end_ns - records[i].start_ns));
  }
  return out;
}

double WindowS(const std::vector<record::StepRecord>& records, std::size_t begin) {
  if (begin >= records.size()) return 0;
  return static_cast<double>(records.back().end_ns - records[begin].start_ns) / kNsPerS;
}

struct WarmupCut {
  std::size_t steps = 0;
  const char* rule = "minimum";
};

WarmupCut DecideWarmup(const std::vector<double>& step_ns, std::int64_t min_warmup_steps) {
  const std::size_t floor = static_cast<std::size_t>(std::max<std::int64_t>(0, min_warmup_steps));
  const std::optional<std::size_t> mser = stats::Mser5Cut(step_ns);
  if (mser && *mser >= floor) return {*mser, "mser5"};
  return {std::min(floor, step_ns.size()), "minimum"};
}

}  // namespace

MeasurePolicy::MeasurePolicy(const config::MeasureSettings& settings) : settings_(settings) {}

void MeasurePolicy::Add(const record::StepRecord* records, std::size_t count) {
  records_.insert(records_.end(), records, records + count);
}

Decision MeasurePolicy::Evaluate() {
  if (decided_) return *decided_;
  if (records_.empty() || settings_.whole_run) return {};
  const std::size_t n = records_.size();
  if (static_cast<std::int64_t>(n) >= settings_.max_steps) {
    decided_ = Decision{true, "max_steps"};
    return *decided_;
  }
  // The time ceiling starts after the mandatory warm-up steps: a first step that autotunes or
  // compiles for seconds (cuDNN benchmark, graph build) must not eat the measuring budget.
  const std::size_t floor = static_cast<std::size_t>(std::max<std::int64_t>(settings_.min_warmup_steps, 0));
  if (n > floor && WindowS(records_, floor) >= settings_.max_time_s) {
    decided_ = Decision{true, "max_time"};
    return *decided_;
  }

  const std::int64_t end_ns = records_.back().end_ns;
  const std::int64_t since_ns = end_ns - last_evaluated_end_ns_;
  const bool doubled = n >= 2 * last_evaluated_size_;
  const bool grew = n - last_evaluated_size_ >= std::max<std::size_t>(1, last_evaluated_size_ / 32);
  const bool due =
      doubled || (since_ns >= kReevaluateMinStepTimeNs && (grew || since_ns >= kReevaluateMaxStepTimeNs));
  if (!due) return {};
  last_evaluated_size_ = n;
  last_evaluated_end_ns_ = end_ns;

  const std::vector<double> step_ns = StepTimesNs(records_, 0);
  const WarmupCut cut = DecideWarmup(step_ns, settings_.min_warmup_steps);
  const std::size_t measured = n - cut.steps;
  if (static_cast<std::int64_t>(measured) < settings_.min_steps) return {};
  if (WindowS(records_, cut.steps) < settings_.min_time_s) return {};
  const std::vector<double> measured_ns(step_ns.begin() + static_cast<std::ptrdiff_t>(cut.steps),
                                        step_ns.end());
  const std::optional<stats::Interval> ci = stats::BatchMeansCI(measured_ns, settings_.ci_level);
  if (!ci) return {};
  const double mean = (ci->low + ci->high) / 2;
  if (!(mean > 0)) return {};
  if ((ci->high - ci->low) / 2 / mean <= settings_.target_rel_ci) {
    decided_ = Decision{true, "ci_reached"};
    decided_cut_ = std::make_pair(cut.steps, cut.rule);
    decided_records_ = n;
    return *decided_;
  }
  return {};
}

Outcome MeasurePolicy::Finish(const std::string& stop_reason_if_not_decided) const {
  Outcome out;
  if (settings_.whole_run) {
    out.warmup_rule = std::string(kWholeRunRule);
    out.stop_reason = stop_reason_if_not_decided;
    out.summary = Summarize(records_, 0, settings_.ci_level);
    out.enough_data = !records_.empty();
    if (!out.enough_data) out.insufficiency = "no step records";
    return out;
  }
  // A cell stopped because its CI was reached keeps the cut that decision was made with: MSER-5
  // over the few records that arrive after STOP can move the cut later and shrink the measured
  // window below min_time_s, which would contradict the decision (seen in the SIGKILL e2e test).
  WarmupCut cut = DecideWarmup(StepTimesNs(records_, 0), settings_.min_warmup_steps);
  if (decided_cut_) {
    cut.steps = decided_cut_->first;
    cut.rule = decided_cut_->second;
  }
  out.warmup_steps = static_cast<std::int64_t>(cut.steps);
  out.warmup_rule = cut.rule;
  out.stop_reason = decided_ ? decided_->reason : stop_reason_if_not_decided;
  if (decided_cut_ && decided_records_ > cut.steps && decided_records_ < records_.size()) {
    // The records of steps that were in flight when STOP went out are stored but not measured:
    // the window the decision judged is the one reported, so a cell stopped on ci_reached has
    // the interval it was stopped for (a few more records can move batch-means' batch bounds and
    // widen it past the target, which read as "noisy (stopped: ci_reached)").
    const std::vector<record::StepRecord> judged(
        records_.begin(), records_.begin() + static_cast<std::ptrdiff_t>(decided_records_));
    out.summary = Summarize(judged, cut.steps, settings_.ci_level);
  } else {
    out.summary = Summarize(records_, cut.steps, settings_.ci_level);
  }

  std::vector<std::string> missing;
  if (records_.empty()) {
    missing.push_back("no step records");
  } else {
    if (out.summary.steps < settings_.min_steps) {
      missing.push_back(fmt::format("{} after {} < min_steps {}",
                                    CountNoun(static_cast<std::int64_t>(out.summary.steps), "measured step"),
                                    CountNoun(static_cast<std::int64_t>(out.warmup_steps), "warm-up step"),
                                    settings_.min_steps));
    }
    if (out.summary.window_s < settings_.min_time_s) {
      missing.push_back(
          fmt::format("{:.3f} s measured < min_time_s {}", out.summary.window_s, settings_.min_time_s));
    }
  }
  out.enough_data = missing.empty();
  for (const std::string& m : missing) {
    if (!out.insufficiency.empty()) out.insufficiency += "; ";
    out.insufficiency += m;
  }
  return out;
}

config::MeasureSettings SettingsForCell(const config::MeasureSettings& settings,
                                        const std::map<std::string, config::Value>& params) {
  config::MeasureSettings out = settings;
  const auto scenario = params.find("scenario");
  if (scenario != params.end() && scenario->second.is_string() &&
      scenario->second.get<std::string>() == "converge") {
    out.whole_run = true;
    out.max_steps = 10'000'000;
  }
  return out;
}

StepSummary Summarize(const std::vector<record::StepRecord>& records, std::size_t warmup, double ci_level) {
  StepSummary s;
  const std::vector<double> step_ns = StepTimesNs(records, warmup);
  s.steps = static_cast<std::int64_t>(step_ns.size());
  for (std::size_t i = warmup; i < records.size(); ++i) s.samples += records[i].samples;
  s.window_s = WindowS(records, warmup);

  const stats::Moments moments = stats::ComputeMoments(step_ns);
  s.mean_ns = moments.mean;
  s.stddev_ns = moments.stddev;
  s.cv = moments.stddev / moments.mean;
  std::vector<double> sorted = step_ns;
  std::sort(sorted.begin(), sorted.end());
  s.median_ns = stats::QuantileSorted(sorted, 0.5);
  s.p50_ns = s.median_ns;
  s.p90_ns = stats::QuantileSorted(sorted, 0.90);
  s.p95_ns = stats::QuantileSorted(sorted, 0.95);
  s.p99_ns = stats::QuantileSorted(sorted, 0.99);
  s.min_ns = sorted.empty() ? NAN : sorted.front();
  s.max_ns = sorted.empty() ? NAN : sorted.back();

  const std::optional<stats::Interval> ci = stats::BatchMeansCI(step_ns, ci_level);
  s.ci_low_ns = ci ? ci->low : NAN;
  s.ci_high_ns = ci ? ci->high : NAN;
  s.ci_rel_halfwidth = ci ? (ci->high - ci->low) / 2 / s.mean_ns : NAN;

  const bool has_window = s.window_s > 0;
  s.samples_per_s = has_window ? static_cast<double>(s.samples) / s.window_s : NAN;
  s.steps_per_s = has_window ? static_cast<double>(s.steps) / s.window_s : NAN;
  return s;
}

}  // namespace dlbench::measure
