#include "history/compare.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "history/samples.h"
#include "plan/plan.h"
#include "record/metrics.h"
#include "stats/descriptive.h"
#include "stats/inference.h"
#include "stats/random.h"

namespace dlbench::history {

const char* MetricName(Metric metric) {
  switch (metric) {
    case Metric::kThroughput:
      return "throughput";
    case Metric::kStepTime:
      return "step_time";
    case Metric::kLatencyP99:
      return "latency_p99";
    case Metric::kEnergy:
      return "energy";
  }
  return "?";
}

Result<Metric> ParseMetric(const std::string& text) {
  for (Metric m : {Metric::kThroughput, Metric::kStepTime, Metric::kLatencyP99, Metric::kEnergy}) {
    if (text == MetricName(m)) return m;
  }
  return MakeError(ErrorKind::kInvalidInput,
                   "unknown metric '" + text + "' (throughput, step_time, latency_p99, energy)");
}

bool HigherIsBetter(Metric metric) { return metric == Metric::kThroughput; }

const char* MetricUnit(Metric metric) {
  switch (metric) {
    case Metric::kThroughput:
      return "samples/s";
    case Metric::kStepTime:
      return "ms";
    case Metric::kLatencyP99:
      return "ms";
    case Metric::kEnergy:
      return "J/sample";
  }
  return "?";
}

std::string_view StoredMetricName(Metric metric) {
  switch (metric) {
    case Metric::kThroughput:
      return record::metric::kSamplesPerS;
    case Metric::kStepTime:
      return record::metric::kStepTimeMeanNs;
    case Metric::kLatencyP99:
      return record::metric::kStepTimeP99Ns;
    case Metric::kEnergy:
      return record::metric::kEnergyPerSampleJ;
  }
  return "?";
}

double StoredMetricScale(Metric metric) {
  return metric == Metric::kStepTime || metric == Metric::kLatencyP99 ? 1e-6 : 1.0;
}

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kFaster:
      return "faster";
    case Verdict::kSlower:
      return "slower";
    case Verdict::kNoChange:
      return "no change";
    case Verdict::kChanged:
      return "changed";
    case Verdict::kNotComparable:
      return "not comparable";
  }
  return "?";
}

int Comparison::CountVerdict(Verdict verdict) const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(),
                                        [&](const CellComparison& c) { return c.verdict == verdict; }));
}

bool Comparison::EnvironmentDecisive() const {
  return std::any_of(environment_changes.begin(), environment_changes.end(),
                     [](const EnvironmentChange& c) { return c.decides_comparability; });
}

namespace {

constexpr double kP99 = 0.99;

// One side of one key: its repetitions pooled.
struct Side {
  std::vector<const record::CellRecord*> cells;  // every stored repetition
  int ok_repetitions = 0;
  std::vector<double> step_ns;        // measured step times of the ok repetitions, in order
  std::vector<double> ns_per_sample;  // the same steps' time per sample
  double total_ns = 0;
  double total_samples = 0;
  std::vector<StepBatch> batches;            // the same steps cut per repetition (p99's blocks)
  std::vector<std::string> outcomes;         // of the repetitions that did not
  std::vector<std::string> invalid_reasons;  // of ok repetitions the measurement marked invalid
  std::vector<double> stored_values;         // the stored metric of ok repetitions (energy)
  std::int64_t steps = 0;
};

Side Pool(const std::vector<const record::CellRecord*>& cells, Metric metric) {
  Side side;
  side.cells = cells;
  for (const record::CellRecord* cell : cells) {
    if (cell->outcome != record::Outcome::kOk) {
      side.outcomes.push_back(std::string(record::Name(cell->outcome)));
      continue;
    }
    ++side.ok_repetitions;
    if (cell->verdict == record::Verdict::kInvalid) {
      std::string reasons;
      for (const auto& r : cell->verdict_reasons) {
        if (!reasons.empty()) reasons += ", ";
        reasons += r.is_string() ? r.get<std::string>() : r.dump();
      }
      side.invalid_reasons.push_back(reasons.empty() ? std::string(record::Name(cell->verdict)) : reasons);
    }
    // Each repetition is cut on its own: a batch never spans two processes.
    const std::vector<record::StepRecord> steps = MeasuredSteps(*cell);
    side.steps += static_cast<std::int64_t>(steps.size());
    for (const record::StepRecord& r : steps) {
      const auto ns = static_cast<double>(r.end_ns - r.start_ns);
      side.step_ns.push_back(ns);
      side.ns_per_sample.push_back(r.samples > 0 ? ns / r.samples : ns);
      side.total_ns += ns;
      side.total_samples += r.samples;
    }
    std::vector<StepBatch> batches = CutBatches(steps);
    side.batches.insert(side.batches.end(), std::make_move_iterator(batches.begin()),
                        std::make_move_iterator(batches.end()));
    for (const record::MetricRecord& m : cell->metrics) {
      if (m.name == StoredMetricName(metric))
        side.stored_values.push_back(m.value * StoredMetricScale(metric));
    }
  }
  return side;
}

std::string Join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

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

// FNV-1a: a seed per key that does not depend on the standard library's hash.
std::uint64_t KeySeed(std::uint64_t seed, const std::string& key) {
  std::uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

double Mean(const std::vector<double>& v) { return stats::ComputeMoments(v).mean; }

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

void Decide(CellComparison& cell, const CompareOptions& options) {
  if (!cell.q_value || !cell.ci_low || !cell.ci_high) return;
  const bool significant = *cell.q_value < options.alpha;
  const bool above = *cell.ci_low > 1 + options.threshold;
  const bool below = *cell.ci_high < 1 - options.threshold;
  cell.verdict = Verdict::kNoChange;
  if (!significant || (!above && !below)) return;
  const bool better = HigherIsBetter(options.metric) ? above : below;
  cell.verdict = better ? Verdict::kFaster : Verdict::kSlower;
}

CellComparison CompareCell(const std::string& key, const Side& base, const Side& candidate,
                           const CompareOptions& options) {
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
  if (!base.invalid_reasons.empty())
    notes.push_back("base marked invalid: " + Join(base.invalid_reasons, "; "));
  if (!candidate.invalid_reasons.empty()) {
    notes.push_back("candidate marked invalid: " + Join(candidate.invalid_reasons, "; "));
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
  if (metric == Metric::kEnergy) {
    out.base_value = Mean(base.stored_values);
    out.candidate_value = Mean(candidate.stored_values);
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
      out.base_value = base_p99 * 1e-6;
      out.candidate_value = candidate_p99 * 1e-6;
    } else if (metric == Metric::kStepTime) {
      est = stats::BootstrapRatioOfMeans(base.step_ns, candidate.step_ns, options.confidence_level,
                                         options.bootstrap_iterations, seed);
      out.base_value = base.total_ns / static_cast<double>(base.step_ns.size()) * 1e-6;
      out.candidate_value = candidate.total_ns / static_cast<double>(candidate.step_ns.size()) * 1e-6;
    } else {
      // Throughput is the reciprocal of the time per sample, so its ratio and interval are the
      // reciprocals of the time-per-sample ones (exact when every step has the same batch).
      const stats::RatioEstimate time =
          stats::BootstrapRatioOfMeans(base.ns_per_sample, candidate.ns_per_sample, options.confidence_level,
                                       options.bootstrap_iterations, seed);
      est.ratio = 1 / time.ratio;
      est.ci.low = 1 / time.ci.high;
      est.ci.high = 1 / time.ci.low;
      est.p_value = time.p_value;
      out.base_value = base.total_samples / (base.total_ns * 1e-9);
      out.candidate_value = candidate.total_samples / (candidate.total_ns * 1e-9);
    }
    if (std::isfinite(est.ratio) && std::isfinite(est.ci.low) && std::isfinite(est.ci.high)) {
      out.ratio = est.ratio;
      out.ci_low = est.ci.low;
      out.ci_high = est.ci.high;
      out.p_value = est.p_value;
    }
  }
  if (!out.ratio) {
    out.verdict = Verdict::kNotComparable;
    notes.insert(notes.begin(), "no finite ratio (the base value is 0)");
  }
  out.note = Join(notes, "; ");
  return out;
}

std::map<std::string, std::vector<const record::CellRecord*>> ByKey(
    const std::vector<record::CellRecord>& cells, const std::vector<std::string>& ignore) {
  std::map<std::string, std::vector<const record::CellRecord*>> out;
  for (const record::CellRecord& c : cells) out[MatchKey(c, ignore)].push_back(&c);
  return out;
}

}  // namespace

std::string MatchKey(const record::CellRecord& cell, const std::vector<std::string>& ignore) {
  if (ignore.empty() || !cell.params.is_object()) return cell.key;
  std::map<std::string, config::Value> params;
  for (auto it = cell.params.begin(); it != cell.params.end(); ++it) {
    if (std::find(ignore.begin(), ignore.end(), it.key()) == ignore.end()) params[it.key()] = it.value();
  }
  return plan::CellKey(params);
}

Comparison CompareRunData(const RunData& base, const RunData& candidate, const CompareOptions& options) {
  Comparison cmp;
  cmp.base_run_id = base.run.id;
  cmp.candidate_run_id = candidate.run.id;
  cmp.base_name = base.run.name;
  cmp.candidate_name = candidate.run.name;
  cmp.base_tags = base.run.tags;
  cmp.candidate_tags = candidate.run.tags;
  cmp.options = options;
  cmp.environment_changes = DiffEnvironments(base.run.environment, candidate.run.environment);

  const auto base_keys = ByKey(base.cells, options.ignore_params);
  const auto candidate_keys = ByKey(candidate.cells, options.ignore_params);
  for (const auto& [key, cells] : base_keys) {
    const auto match = candidate_keys.find(key);
    if (match == candidate_keys.end()) {
      cmp.only_in_base.push_back({key, cells.front()->label});
      continue;
    }
    cmp.cells.push_back(
        CompareCell(key, Pool(cells, options.metric), Pool(match->second, options.metric), options));
  }
  for (const auto& [key, cells] : candidate_keys) {
    if (base_keys.count(key) == 0) cmp.only_in_candidate.push_back({key, cells.front()->label});
  }

  // One family of tests: the whole matrix. Controlling the false-discovery rate over it is what
  // keeps a 40-cell matrix from producing two "regressions" by chance on every run.
  std::vector<double> p_values;
  std::vector<std::size_t> tested;
  for (std::size_t i = 0; i < cmp.cells.size(); ++i) {
    if (cmp.cells[i].p_value) {
      p_values.push_back(*cmp.cells[i].p_value);
      tested.push_back(i);
    }
  }
  if (!p_values.empty()) {
    const std::vector<double> q = stats::BenjaminiHochberg(p_values);
    for (std::size_t j = 0; j < tested.size(); ++j) {
      cmp.cells[tested[j]].q_value = q[j];
      Decide(cmp.cells[tested[j]], options);
    }
  }
  return cmp;
}

namespace {

Result<RunData> LoadRun(store::ResultStore& store, const std::string& ref) {
  auto id = store.ResolveRun(ref);
  if (!id.ok()) return id.error();
  auto run = store.GetRun(*id);
  if (!run.ok()) return run.error();
  store::CellQuery query;
  query.with_steps = true;
  auto cells = store.GetCells(*id, query);
  if (!cells.ok()) return cells.error();
  return RunData{std::move(run).value(), std::move(cells).value()};
}

}  // namespace

Result<Comparison> CompareStoredRuns(store::ResultStore& store, const std::string& base_ref,
                                     const std::string& candidate_ref, const CompareOptions& options) {
  if (!(options.threshold >= 0 && options.threshold < 1)) {
    return MakeError(ErrorKind::kInvalidInput,
                     fmt::format("threshold must be in [0%, 100%), got {}%", options.threshold * 100));
  }
  if (!(options.alpha > 0 && options.alpha < 1) ||
      !(options.confidence_level > 0 && options.confidence_level < 1) || options.bootstrap_iterations < 100) {
    return MakeError(ErrorKind::kInvalidInput,
                     "alpha and the confidence level must lie in (0, 1), and bootstrap iterations be >= 100");
  }
  auto base = LoadRun(store, base_ref);
  if (!base.ok()) return base.error();
  auto candidate = LoadRun(store, candidate_ref);
  if (!candidate.ok()) return candidate.error();
  Comparison cmp = CompareRunData(*base, *candidate, options);
  if (options.strict && cmp.EnvironmentDecisive()) {
    std::vector<std::string> named;
    for (const EnvironmentChange& c : cmp.environment_changes) {
      if (c.decides_comparability) named.push_back(DescribeChange(c));
    }
    return MakeError(ErrorKind::kInvalidInput,
                     fmt::format("runs {} and {} are not comparable (--strict): {}", cmp.base_run_id,
                                 cmp.candidate_run_id, Join(named, "; ")));
  }
  return cmp;
}

}  // namespace dlbench::history
