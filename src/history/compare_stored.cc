// Comparing stored runs (CompareStoredRuns): loading a run or a sweep with its steps, learning
// each key's noise floor from earlier runs in the same environment, and --strict's refusal.
#include <fmt/core.h>

#include <cmath>
#include <map>
#include <set>

#include "common/text.h"
#include "history/compare.h"
#include "history/compare_cell.h"
#include "record/metrics.h"
#include "stats/descriptive.h"
#include "store/sweep.h"

namespace dlbench::history {
namespace {

using internal::Mean;

// A run or a sweep (sweep:NAME, store/sweep.h) with its cells' steps; what the sweep's shards
// say (a missing one) goes to `notes`.
Result<RunData> LoadRun(store::ResultStore& store, const std::string& ref, std::vector<std::string>& notes) {
  store::CellQuery query;
  query.with_steps = true;
  auto loaded = store::LoadRun(store, ref, query);
  if (!loaded.ok()) return loaded.error();
  for (const std::string& n : loaded->notes) notes.push_back(fmt::format("{}: {}", ref, n));
  // Headings name a sweep by its first shard's run: say that it stands for the sweep.
  if (loaded->sweep) loaded->run.name += ", sweep " + loaded->sweep->name;
  return RunData{std::move(loaded->run), std::move(loaded->cells)};
}

// The between-run CV of each of the base's keys: the stored metric of every earlier run of that
// key in the base's environment (ok and valid; the two compared runs left out), a run's
// repetitions averaged, once at least kNoiseFloorMinRuns runs are there.
Result<NoiseFloors> LearnNoiseFloors(store::ResultStore& store, const RunData& base,
                                     std::int64_t candidate_id, Metric metric) {
  NoiseFloors out;
  std::set<std::string> keys;
  for (const auto& c : base.cells) keys.insert(c.key);
  for (const std::string& key : keys) {
    auto history = store.CellHistory(key);
    if (!history.ok()) return history.error();
    std::map<std::int64_t, std::vector<double>> by_run;
    for (const auto& [run, cell] : *history) {
      if (run.id == base.run.id || run.id == candidate_id ||
          run.environment_hash != base.run.environment_hash)
        continue;
      if (cell.outcome != record::Outcome::kOk || !record::IsUsable(cell.verdict)) continue;
      if (auto v = record::MetricValue(cell, StoredMetricName(metric)); v && std::isfinite(*v)) {
        by_run[run.id].push_back(*v);
      }
    }
    if (by_run.size() < static_cast<std::size_t>(kNoiseFloorMinRuns)) continue;
    std::vector<double> run_means;
    run_means.reserve(by_run.size());
    for (const auto& [id, values] : by_run) run_means.push_back(Mean(values));
    const stats::Moments m = stats::ComputeMoments(run_means);
    if (m.mean > 0 && std::isfinite(m.stddev)) out[key] = m.stddev / m.mean;
  }
  return out;
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
  std::vector<std::string> notes;
  auto base = LoadRun(store, base_ref, notes);
  if (!base.ok()) return base.error();
  auto candidate = LoadRun(store, candidate_ref, notes);
  if (!candidate.ok()) return candidate.error();
  NoiseFloors noise;
  if (options.use_history_noise) {
    auto floors = LearnNoiseFloors(store, *base, candidate->run.id, options.metric);
    if (!floors.ok()) return floors.error();
    noise = std::move(*floors);
  }
  auto compared = CompareRunData(*base, *candidate, options, noise);
  if (!compared.ok()) return compared.error();
  Comparison cmp = std::move(*compared);
  cmp.notes = std::move(notes);
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
