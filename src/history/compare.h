// Comparing two runs cell by cell (R13, R16): `dlbench compare BASE CANDIDATE`.
//
// The method (docs/history.md has the reasoning and worked examples):
//   - cells are matched by CellRecord::key; the repetitions of a key on each side are pooled;
//   - each side's measured steps (rank 0, after the warm-up cut) are resampled in blocks of
//     consecutive steps (stats::BootstrapRatioOfMeans; whole batches for the p99), so the
//     autocorrelation of consecutive steps does not pass for evidence;
//   - the ratio candidate/base comes with that bootstrap's confidence interval and p-value, and
//     the p-values of the whole matrix are adjusted together (Benjamini-Hochberg);
//   - a cell is "faster" or "slower" only when its adjusted p-value is below alpha AND its whole
//     confidence interval lies beyond the practical threshold; anything else is "no change".
//     The threshold is what keeps run-to-run drift (which no within-run sample can see) from
//     raising alarms.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "history/environment.h"
#include "store/result_store.h"

namespace dlbench::history {

// What is compared. Throughput is samples per second of step time (higher is better); the others
// are lower-is-better. Energy has no per-step series: its stored per-sample value is compared.
enum class Metric { kThroughput, kStepTime, kLatencyP99, kEnergy };

const char* MetricName(Metric metric);  // "throughput", "step_time", "latency_p99", "energy"
// kInvalidInput naming the allowed values.
Result<Metric> ParseMetric(const std::string& text);
bool HigherIsBetter(Metric metric);
// The unit the metric's values are reported in: "samples/s", "ms", "J/sample".
const char* MetricUnit(Metric metric);
// The stored metric (record::MetricRecord::name) that holds this metric per cell, and the factor
// that turns its stored value into MetricUnit() ("step_time_mean_ns" -> ms: 1e-6).
std::string_view StoredMetricName(Metric metric);
double StoredMetricScale(Metric metric);

// A cell's verdict. faster/slower speak of performance, whatever the metric's direction: a
// throughput ratio of 0.95 and a step-time ratio of 1.05 are both "slower".
// kChanged is energy's verdict: it moved beyond the threshold (no test: one value per cell).
enum class Verdict { kFaster, kSlower, kNoChange, kChanged, kNotComparable };

const char* VerdictName(Verdict verdict);  // "faster", "slower", "no change", "changed", "not comparable"

struct CompareOptions {
  Metric metric = Metric::kThroughput;
  // Practical-significance threshold as a fraction (0.02 = 2%): the smallest change worth an
  // alarm. Below it, even a certain change is "no change". See docs/history.md for why 2%.
  double threshold = 0.02;
  double alpha = 0.05;             // false-discovery rate across the matrix (Benjamini-Hochberg)
  double confidence_level = 0.95;  // of the ratio's confidence interval
  int bootstrap_iterations = 2000;
  std::uint64_t seed = 20240601;  // the bootstrap's seed: the same inputs give the same report
  // Refuse to compare (kInvalidInput naming each difference) when an environment field that
  // decides comparability differs.
  bool strict = false;
  // Parameters left out when matching cells, to compare across a deliberate change ("what did
  // batch_size 64 cost against 32", or a version recorded as a parameter). Empty: match by
  // CellRecord::key. Only repetitions of one cell are pooled: when leaving a parameter out makes
  // distinct cells of one run match, CompareStoredRuns refuses, naming them.
  std::vector<std::string> ignore_params;
  // With --fail-on-regression, the share of the base's cells that must find a match for the
  // comparison to count as a gate (Comparison::MatchedShare); below it the CLI exits
  // kExitTooFewMatched, so a gate cannot pass because nothing was compared.
  double min_matched_share = 0.5;
  // Between-run noise learned from history when a side has fewer than 2 repetitions
  // (NoiseFloor): the relative spread of this cell's stored metric across earlier runs in the
  // same environment widens the ratio's interval. Off in CompareRunData's unit tests' default
  // data, which has no history; CompareStoredRuns fills it from the store.
  bool use_history_noise = true;
};

// The data behind one side of a comparison: a run and its cells with their steps.
struct RunData {
  record::RunRecord run;
  std::vector<record::CellRecord> cells;
};

struct CellComparison {
  std::string key;  // the matching key (CellRecord::key unless params are ignored)
  std::string label;
  nlohmann::json params = nlohmann::json::object();
  int base_repetitions = 0;  // cells that ended ok and were pooled
  int candidate_repetitions = 0;
  std::int64_t base_steps = 0;  // measured steps pooled
  std::int64_t candidate_steps = 0;
  std::optional<double> base_value;  // in MetricUnit(metric)
  std::optional<double> candidate_value;
  std::optional<double> ratio;   // candidate / base, of the metric itself
  std::optional<double> ci_low;  // confidence interval of the ratio
  std::optional<double> ci_high;
  std::optional<double> p_value;  // two-sided, of "the ratio is 1"
  std::optional<double> q_value;  // Benjamini-Hochberg adjusted over the matrix
  // How the interval was made: "within-run bootstrap", "between-repetition t-interval (wider than
  // the within-run one)", or "within-run bootstrap widened by the history noise floor (CV x%)".
  std::string interval_method;
  std::optional<double> within_ci_low, within_ci_high;    // the block bootstrap's interval
  std::optional<double> between_ci_low, between_ci_high;  // across repetitions, when both have >= 2
  std::optional<double> noise_floor_cv;                   // from history, when used
  Verdict verdict = Verdict::kNotComparable;
  bool contended = false;  // a side's repetition had the verdict contended: never faster or slower
  std::string note;        // why not comparable, or a caveat ("base cell invalid: ...")
};

// A cell found on one side only.
struct UnmatchedCell {
  std::string key;
  std::string label;
};

struct Comparison {
  std::int64_t base_run_id = 0;
  std::int64_t candidate_run_id = 0;
  std::string base_name;  // the run's name and tags, for headings
  std::string candidate_name;
  std::vector<std::string> base_tags;
  std::vector<std::string> candidate_tags;
  CompareOptions options;
  std::vector<EnvironmentChange> environment_changes;  // every differing field
  std::vector<CellComparison> cells;                   // matched keys, in key order
  // What loading the runs said, "REF: NOTE": a sweep's missing shard ("sweep:a: shard 2/4 has not
  // stored a run"), its differing environments. CompareStoredRuns fills it.
  std::vector<std::string> notes;
  std::vector<UnmatchedCell> only_in_base;
  std::vector<UnmatchedCell> only_in_candidate;
  // The parameters whose values tell the unmatched cells apart ("precision: fp32 -> bf16"), so a
  // comparison that matched little says why.
  std::vector<std::string> differing_params;

  // Matched cells / the base's cells (1 when the base has none).
  double MatchedShare() const;

  int CountVerdict(Verdict verdict) const;
  // A regression is a "slower" verdict (energy's "changed" is reported, not failed on).
  int Regressions() const { return CountVerdict(Verdict::kSlower); }
  // The environment differs in a field that decides comparability.
  bool EnvironmentDecisive() const;
};

// The key cells are matched by: CellRecord::key, or with `ignore` the canonical key
// (plan::CellKey) of the cell's parameters without the ignored ones.
std::string MatchKey(const record::CellRecord& cell, const std::vector<std::string>& ignore);

// Relative between-run spread (coefficient of variation) of each cell key's metric, learned from
// earlier runs: key -> CV. Filled by CompareStoredRuns; empty for none.
using NoiseFloors = std::map<std::string, double>;
// Earlier runs of a key that NoiseFloor needs before it trusts a spread.
inline constexpr int kNoiseFloorMinRuns = 3;

// Compares two runs already loaded (cells with their steps). A cell that cannot be compared gets
// kNotComparable and a note. kInvalidInput when ignore_params makes distinct cells of one run
// match (naming them). The strict option is not applied here.
Result<Comparison> CompareRunData(const RunData& base, const RunData& candidate,
                                  const CompareOptions& options, const NoiseFloors& noise = {});

// Resolves both references (ids, tags, "latest"), loads the runs with their steps and compares.
// kNotFound for an unknown reference; with options.strict, kInvalidInput naming each decisive
// environment difference.
Result<Comparison> CompareStoredRuns(store::ResultStore& store, const std::string& base_ref,
                                     const std::string& candidate_ref, const CompareOptions& options);

}  // namespace dlbench::history
