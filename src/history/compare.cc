// Comparing two runs (compare.h): the names of metrics and verdicts, the cells matched by key
// (repetitions pooled, ignored parameters left out) and the false-discovery rate over the matrix.
// One key's statistics are compare_cell.cc's; loading stored runs is compare_stored.cc's.
#include "history/compare.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>

#include "common/text.h"
#include "history/compare_cell.h"
#include "plan/plan.h"
#include "record/metrics.h"
#include "stats/inference.h"

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

double Comparison::MatchedShare() const {
  const std::size_t base_cells = cells.size() + only_in_base.size();
  return base_cells == 0 ? 1.0 : static_cast<double>(cells.size()) / static_cast<double>(base_cells);
}

bool Comparison::EnvironmentDecisive() const {
  return std::any_of(environment_changes.begin(), environment_changes.end(),
                     [](const EnvironmentChange& c) { return c.decides_comparability; });
}

namespace {

using internal::CompareCell;
using internal::Decide;
using internal::Pool;

// The run's cells by matching key. Repetitions of one cell share a key and are pooled; distinct
// cells that share one only because parameters were ignored would blend two configurations into
// one figure, so that is refused, naming them.
Result<std::map<std::string, std::vector<const record::CellRecord*>>> ByKey(
    const RunData& data, const std::vector<std::string>& ignore) {
  std::map<std::string, std::vector<const record::CellRecord*>> out;
  for (const record::CellRecord& c : data.cells) out[MatchKey(c, ignore)].push_back(&c);
  std::vector<std::string> blended;
  for (const auto& [key, cells] : out) {
    std::vector<std::string> labels;
    std::set<std::string> distinct;
    for (const auto* c : cells) {
      if (distinct.insert(c->key).second) labels.push_back(c->label.empty() ? c->key : c->label);
    }
    if (distinct.size() > 1 && blended.size() < 3) blended.push_back(Join(labels, " and "));
  }
  if (!blended.empty()) {
    return MakeError(
        ErrorKind::kInvalidInput,
        fmt::format("--ignore-param {} would pool distinct cells of run {} into one: {}; ignore fewer "
                    "parameters, or select cells with --only so each key stands for one cell",
                    Join(ignore, ","), data.run.id, Join(blended, "; ")));
  }
  return out;
}

// The parameters whose values differ between the two sides' cells: "precision: fp32 -> bf16".
std::vector<std::string> DifferingParams(const RunData& base, const RunData& candidate) {
  std::map<std::string, std::pair<std::set<std::string>, std::set<std::string>>> values;
  for (const auto& c : base.cells) {
    if (!c.params.is_object()) continue;
    for (const auto& [k, v] : c.params.items()) values[k].first.insert(v.dump());
  }
  for (const auto& c : candidate.cells) {
    if (!c.params.is_object()) continue;
    for (const auto& [k, v] : c.params.items()) values[k].second.insert(v.dump());
  }
  std::vector<std::string> out;
  for (const auto& [name, sides] : values) {
    if (sides.first == sides.second) continue;
    auto list = [](const std::set<std::string>& s) {
      return s.empty() ? std::string("(absent)") : Join(std::vector<std::string>(s.begin(), s.end()), ", ");
    };
    out.push_back(fmt::format("{}: {} -> {}", name, list(sides.first), list(sides.second)));
  }
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

Result<Comparison> CompareRunData(const RunData& base, const RunData& candidate,
                                  const CompareOptions& options, const NoiseFloors& noise) {
  Comparison cmp;
  cmp.base_run_id = base.run.id;
  cmp.candidate_run_id = candidate.run.id;
  cmp.base_name = base.run.name;
  cmp.candidate_name = candidate.run.name;
  cmp.base_tags = base.run.tags;
  cmp.candidate_tags = candidate.run.tags;
  cmp.options = options;
  cmp.environment_changes = DiffEnvironments(base.run.environment, candidate.run.environment);

  auto base_by_key = ByKey(base, options.ignore_params);
  if (!base_by_key.ok()) return base_by_key.error();
  auto candidate_by_key = ByKey(candidate, options.ignore_params);
  if (!candidate_by_key.ok()) return candidate_by_key.error();
  const auto& base_keys = *base_by_key;
  const auto& candidate_keys = *candidate_by_key;
  for (const auto& [key, cells] : base_keys) {
    const auto match = candidate_keys.find(key);
    if (match == candidate_keys.end()) {
      cmp.only_in_base.push_back({key, cells.front()->label});
      continue;
    }
    cmp.cells.push_back(
        CompareCell(key, Pool(cells, options.metric), Pool(match->second, options.metric), options, noise));
  }
  for (const auto& [key, cells] : candidate_keys) {
    if (base_keys.count(key) == 0) cmp.only_in_candidate.push_back({key, cells.front()->label});
  }
  if (!cmp.only_in_base.empty() || !cmp.only_in_candidate.empty())
    cmp.differing_params = DifferingParams(base, candidate);

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

}  // namespace dlbench::history
