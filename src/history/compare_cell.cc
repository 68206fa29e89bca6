// One cell key's comparison (compare_cell.h): its repetitions pooled, the ratio's within-run
// block-bootstrap interval, widened by the spread across repetitions or a history noise floor,
// and the verdict once the matrix's q-values are known.
#include "history/compare_cell.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "common/hash.h"
#include "common/text.h"
#include "record/metrics.h"
#include "stats/descriptive.h"
#include "stats/distributions.h"
#include "stats/inference.h"
#include "stats/random.h"

namespace dlbench::history::internal {
namespace {

constexpr double kP99 = 0.99;

}  // namespace

Side Pool(const std::vector<const record::CellRecord*>& cells, Metric metric) {
  Side side;
  side.cells = cells;
  for (const record::CellRecord* cell : cells) {
    if (cell->outcome != record::Outcome::kOk) {
      side.outcomes.push_back(std::string(record::Name(cell->outcome)));
      continue;
    }
    ++side.ok_repetitions;
    if (record::IsUnreliable(cell->verdict)) {
      std::string reasons;
      for (const auto& r : cell->verdict_reasons) {
        if (!reasons.empty()) reasons += ", ";
        reasons += r.is_string() ? r.get<std::string>() : r.dump();
      }
      side.invalid_reasons.push_back(reasons.empty() ? std::string(record::Name(cell->verdict)) : reasons);
    }
    if (cell->verdict == record::Verdict::kContended && side.contended.empty()) {
      for (const auto& r : cell->verdict_reasons) {
        if (r.is_string() && record::VerdictOfReason(r.get<std::string>()) == record::Verdict::kContended)
          side.contended = r.get<std::string>();
      }
    }
    // Each repetition is cut on its own: a batch never spans two processes.
    const std::vector<record::StepRecord> steps = MeasuredSteps(*cell);
    side.steps += static_cast<std::int64_t>(steps.size());
    double rep_ns = 0, rep_samples = 0;
    std::vector<double> rep_step_ns;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const record::StepRecord& r = steps[i];
      const auto ns = static_cast<double>(r.end_ns - r.start_ns);
      const double period =
          i + 1 < steps.size() ? static_cast<double>(steps[i + 1].start_ns - r.start_ns) : ns;
      side.step_ns.push_back(ns);
      rep_step_ns.push_back(ns);
      side.period_ns_per_sample.push_back(r.samples > 0 ? period / r.samples : period);
      rep_ns += ns;
      rep_samples += r.samples;
    }
    std::vector<StepBatch> batches = CutBatches(steps);
    side.batches.insert(side.batches.end(), std::make_move_iterator(batches.begin()),
                        std::make_move_iterator(batches.end()));
    for (const record::MetricRecord& m : cell->metrics) {
      if (m.name == StoredMetricName(metric))
        side.stored_values.push_back(m.value * StoredMetricScale(metric));
    }
    // The repetition's own figure, by the stored metric's definition.
    if (metric == Metric::kEnergy) continue;
    if (steps.empty()) continue;
    if (metric == Metric::kThroughput) {
      const double window_s = static_cast<double>(steps.back().end_ns - steps.front().start_ns) * 1e-9;
      if (window_s > 0) side.rep_values.push_back(rep_samples / window_s);
    } else if (metric == Metric::kStepTime) {
      side.rep_values.push_back(rep_ns / static_cast<double>(steps.size()) * 1e-6);
    } else {
      side.rep_values.push_back(stats::Quantile(rep_step_ns, kP99) * 1e-6);
    }
  }
  if (metric == Metric::kEnergy) side.rep_values = side.stored_values;
  return side;
}

namespace {

// Why a side cannot be compared, or empty when it can.
std::string Unusable(const Side& side, const char* name, Metric metric) {
  if (side.ok_repetitions == 0) {
    return fmt::format("no repetition ended ok on the {} side (outcome {})", name, Join(side.outcomes, ", "));
  }
  if (metric == Metric::kEnergy) {
    if (side.stored_values.empty()) {
      return fmt::format("no {} on the {} side (run without an energy monitor?)", StoredMetricName(metric),
                         name);
    }
    return "";
  }
  if (side.steps < kMinMeasuredSteps) {
    return fmt::format("{} measured steps on the {} side (at least {} needed)", side.steps, name,
                       kMinMeasuredSteps);
  }
  return "";
}

// A seed per key that does not depend on the standard library's hash: FNV-1a from a basis that
// mixes in the comparison's seed. The basis is the one compare has always used (not FNV's offset
// basis); keeping it keeps every bootstrap interval's draws what they were.
std::uint64_t KeySeed(std::uint64_t seed, const std::string& key) {
  constexpr std::uint64_t kKeySeedBasis = 1469598103934665603ull;
  return Fnv1a64(key, kKeySeedBasis ^ seed);
}

}  // namespace

double Mean(const std::vector<double>& v) { return stats::ComputeMoments(v).mean; }

namespace {

std::vector<double> Concatenate(const std::vector<StepBatch>& batches, const std::vector<std::size_t>& pick) {
  std::vector<double> out;
  for (std::size_t i : pick) out.insert(out.end(), batches[i].step_ns.begin(), batches[i].step_ns.end());
  return out;
}

// The p99 of the step times, candidate/base, by a block bootstrap: whole batches are resampled
// (never single steps) so runs of slow steps stay together, as they happened.
stats::RatioEstimate BootstrapP99Ratio(const std::vector<StepBatch>& base,
                                       const std::vector<StepBatch>& candidate, double level, int iterations,
                                       std::uint64_t seed, double& base_p99, double& candidate_p99) {
  std::vector<std::size_t> all_base(base.size());
  std::vector<std::size_t> all_candidate(candidate.size());
  for (std::size_t i = 0; i < base.size(); ++i) all_base[i] = i;
  for (std::size_t i = 0; i < candidate.size(); ++i) all_candidate[i] = i;
  base_p99 = stats::Quantile(Concatenate(base, all_base), kP99);
  candidate_p99 = stats::Quantile(Concatenate(candidate, all_candidate), kP99);

  stats::RatioEstimate est;
  if (!(base_p99 > 0)) return est;
  est.ratio = candidate_p99 / base_p99;
  stats::Random rng(seed);
  std::vector<double> ratios;
  ratios.reserve(static_cast<std::size_t>(iterations));
  std::vector<std::size_t> pick;
  int at_or_below_one = 0;
  int at_or_above_one = 0;
  for (int it = 0; it < iterations; ++it) {
    pick.assign(base.size(), 0);
    for (auto& p : pick) p = static_cast<std::size_t>(rng.Below(base.size()));
    const double b = stats::Quantile(Concatenate(base, pick), kP99);
    pick.assign(candidate.size(), 0);
    for (auto& p : pick) p = static_cast<std::size_t>(rng.Below(candidate.size()));
    const double c = stats::Quantile(Concatenate(candidate, pick), kP99);
    if (!(b > 0)) continue;
    const double r = c / b;
    ratios.push_back(r);
    if (r <= 1) ++at_or_below_one;
    if (r >= 1) ++at_or_above_one;
  }
  if (ratios.empty()) return est;
  std::sort(ratios.begin(), ratios.end());
  est.ci.low = stats::QuantileSorted(ratios, (1 - level) / 2);
  est.ci.high = stats::QuantileSorted(ratios, 1 - (1 - level) / 2);
  // Two-sided bootstrap p-value of "ratio = 1", with the +1 that keeps it away from an impossible 0.
  const double tail = static_cast<double>(std::min(at_or_below_one, at_or_above_one) + 1) /
                      static_cast<double>(ratios.size() + 1);
  est.p_value = std::min(1.0, 2 * tail);
  return est;
}

}  // namespace

void Decide(CellComparison& cell, const CompareOptions& options) {
  if (!cell.q_value || !cell.ci_low || !cell.ci_high || cell.contended) return;
  const bool significant = *cell.q_value < options.alpha;
  const bool above = *cell.ci_low > 1 + options.threshold;
  const bool below = *cell.ci_high < 1 - options.threshold;
  cell.verdict = Verdict::kNoChange;
  if (!significant || (!above && !below)) return;
  const bool better = HigherIsBetter(options.metric) ? above : below;
  cell.verdict = better ? Verdict::kFaster : Verdict::kSlower;
}

namespace {

// The within-run bootstrap sees only the noise inside one process; runs differ by more (clocks,
// placement, autotuning choices). With two or more repetitions a side, the t-interval across
// repetitions is computed and the wider of the two intervals used; with fewer, a noise floor
// learned from history (the between-run CV of this key) widens the bootstrap's interval in log
// space: half-width' = sqrt(half-width^2 + (z cv sqrt 2)^2), and the p-value follows.
void WidenForProcessNoise(const Side& base, const Side& candidate, const std::string& key,
                          const CompareOptions& options, const NoiseFloors& noise, CellComparison& out) {
  const double r = *out.ratio;
  const double z = stats::NormalQuantile((1 + options.confidence_level) / 2);
  const double lo = std::log(r / *out.ci_low), hi = std::log(*out.ci_high / r);
  if (base.rep_values.size() >= 2 && candidate.rep_values.size() >= 2) {
    stats::RatioEstimate between =
        stats::RatioOfMeansTInterval(base.rep_values, candidate.rep_values, options.confidence_level);
    if (!std::isfinite(between.ratio)) return;
    out.between_ci_low = between.ci.low;
    out.between_ci_high = between.ci.high;
    if (between.ci.high - between.ci.low > *out.ci_high - *out.ci_low) {
      out.ci_low = between.ci.low;
      out.ci_high = between.ci.high;
      out.p_value = std::max(*out.p_value, between.p_value);
      out.interval_method =
          fmt::format("t-interval across {} and {} repetitions (wider than the within-run one)",
                      base.rep_values.size(), candidate.rep_values.size());
    } else {
      out.interval_method += fmt::format(" (wider than the t-interval across {} and {} repetitions)",
                                         base.rep_values.size(), candidate.rep_values.size());
    }
    return;
  }
  auto it = noise.find(key);
  if (!options.use_history_noise || it == noise.end() || !(it->second > 0)) return;
  const double e = z * it->second * std::sqrt(2.0);
  out.noise_floor_cv = it->second;
  out.ci_low = r * std::exp(-std::sqrt(lo * lo + e * e));
  out.ci_high = r * std::exp(std::sqrt(hi * hi + e * e));
  const double se = (std::sqrt(lo * lo + e * e) + std::sqrt(hi * hi + e * e)) / (2 * z);
  out.p_value = std::max(*out.p_value, std::min(1.0, 2 * (1 - stats::NormalCdf(std::abs(std::log(r)) / se))));
  out.interval_method +=
      fmt::format(" widened by the history noise floor (between-run CV {:.2f}%)", 100 * it->second);
}

}  // namespace

CellComparison CompareCell(const std::string& key, const Side& base, const Side& candidate,
                           const CompareOptions& options, const NoiseFloors& noise) {
  CellComparison out;
  out.key = key;
  const record::CellRecord& first = *base.cells.front();
  out.label = first.label;
  out.params = first.params;
  out.base_repetitions = base.ok_repetitions;
  out.candidate_repetitions = candidate.ok_repetitions;
  out.base_steps = base.steps;
  out.candidate_steps = candidate.steps;

  std::vector<std::string> notes;
  if (!base.invalid_reasons.empty()) notes.push_back("base not valid: " + Join(base.invalid_reasons, "; "));
  if (!candidate.invalid_reasons.empty()) {
    notes.push_back("candidate not valid: " + Join(candidate.invalid_reasons, "; "));
  }
  const Metric metric = options.metric;
  const std::string base_why = Unusable(base, "base", metric);
  const std::string candidate_why = Unusable(candidate, "candidate", metric);
  if (!base_why.empty() || !candidate_why.empty()) {
    std::vector<std::string> why;
    if (!base_why.empty()) why.push_back(base_why);
    if (!candidate_why.empty()) why.push_back(candidate_why);
    why.insert(why.end(), notes.begin(), notes.end());
    out.verdict = Verdict::kNotComparable;
    out.note = Join(why, "; ");
    return out;
  }

  const std::uint64_t seed = KeySeed(options.seed, key);
  // A cell's figure is the mean over its repetitions, each by the stored metric's definition.
  out.base_value = Mean(base.rep_values);
  out.candidate_value = Mean(candidate.rep_values);
  if (metric == Metric::kEnergy) {
    if (*out.base_value > 0) {
      out.ratio = *out.candidate_value / *out.base_value;
      out.verdict = std::abs(*out.ratio - 1) > options.threshold ? Verdict::kChanged : Verdict::kNoChange;
    }
  } else {
    stats::RatioEstimate est;
    if (metric == Metric::kLatencyP99) {
      double base_p99 = 0;
      double candidate_p99 = 0;
      est = BootstrapP99Ratio(base.batches, candidate.batches, options.confidence_level,
                              options.bootstrap_iterations, seed, base_p99, candidate_p99);
    } else if (metric == Metric::kStepTime) {
      est = stats::BootstrapRatioOfMeans(base.step_ns, candidate.step_ns, options.confidence_level,
                                         options.bootstrap_iterations, seed);
    } else {
      // Throughput is the reciprocal of the period per sample, so its ratio and interval are the
      // reciprocals of the period-per-sample ones (exact when every step has the same batch).
      const stats::RatioEstimate time =
          stats::BootstrapRatioOfMeans(base.period_ns_per_sample, candidate.period_ns_per_sample,
                                       options.confidence_level, options.bootstrap_iterations, seed);
      est.ratio = 1 / time.ratio;
      est.ci.low = 1 / time.ci.high;
      est.ci.high = 1 / time.ci.low;
      est.p_value = time.p_value;
    }
    // The point estimate is the ratio of the cells' figures; the bootstrap gives its spread.
    if (*out.base_value > 0 && std::isfinite(est.ratio) && est.ratio > 0) {
      const double r = *out.candidate_value / *out.base_value;
      est.ci.low *= r / est.ratio;
      est.ci.high *= r / est.ratio;
      est.ratio = r;
    }
    if (std::isfinite(est.ratio) && std::isfinite(est.ci.low) && std::isfinite(est.ci.high)) {
      out.ratio = est.ratio;
      out.within_ci_low = est.ci.low;
      out.within_ci_high = est.ci.high;
      out.ci_low = est.ci.low;
      out.ci_high = est.ci.high;
      out.p_value = est.p_value;
      out.interval_method = "within-run block bootstrap";
      WidenForProcessNoise(base, candidate, key, options, noise, out);
    }
  }
  if (!out.ratio) {
    out.verdict = Verdict::kNotComparable;
    notes.insert(notes.begin(), "no finite ratio (the base value is 0)");
  }
  if (!base.contended.empty() || !candidate.contended.empty()) {
    out.contended = true;
    notes.insert(notes.begin(), "not judged: a side was contended (" +
                                    (base.contended.empty() ? candidate.contended : base.contended) + ")");
  }
  out.note = Join(notes, "; ");
  return out;
}

}  // namespace dlbench::history::internal
