// The data model every module shares (DESIGN.md "record"): a run, a cell, its metrics, steps and
// sampled series, and the measured window. The store persists these types, the orchestrator and
// the monitor fill them, history and report read them; none of those depends on another for them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "record/outcome.h"
#include "record/step.h"

namespace dlbench::record {

// The cells a run was started with: `dlbench run MATRIX --only F... --shard K/N`. Stored with the
// run so `run --resume` can apply it again and `show` can name it. Empty (no --only, no --shard)
// means the whole matrix; runs stored before schema version 2 read as empty too.
struct RunSelection {
  std::vector<std::string> only;  // --only filters as given, in order (a cell matching any is kept)
  std::string shard;              // "K/N" as ShardText writes it, or empty for no sharding
  std::vector<std::string> set;   // --set measure.KEY=VALUE overrides, in order (later ones win)

  bool empty() const { return only.empty() && shard.empty() && set.empty(); }
  bool operator==(const RunSelection& other) const {
    return only == other.only && shard == other.shard && set == other.set;
  }
  bool operator!=(const RunSelection& other) const { return !(*this == other); }
};

// The JSON form of a selection (runs.selection, the run object of `export --format json`):
// {"only": [...], "shard": "K/N", "set": [...]}, each key present only when set, so an empty
// selection is {}.
nlohmann::json RunSelectionToJson(const RunSelection& selection);
// The inverse; missing keys are empty. kStore when `json` is not an object of that shape (a
// stored value only a foreign writer could have produced).
Result<RunSelection> RunSelectionFromJson(const nlohmann::json& json);

struct RunRecord {
  std::int64_t id = 0;
  // A key that names the run in every store (`dlbench db copy` matches runs by it): a random UUID
  // that ResultStore::BeginRun gives the run when this is empty.
  std::string uuid;
  std::string name;  // the matrix's name, or its file name
  std::string matrix_path;
  std::string matrix_text;
  std::int64_t started_wall_ns = 0;
  std::optional<std::int64_t> finished_wall_ns;
  RunStatus status = RunStatus::kRunning;
  std::string environment_hash;                           // hash of the comparability-relevant fields
  nlohmann::json environment = nlohmann::json::object();  // the full fingerprint
  std::string tool_version;
  std::string git_commit;
  int total_cells = 0;
  RunSelection selection;  // the --only/--shard the run was started with
  // The sweep this run is a shard of (`run --shard K/N --sweep NAME`, or the launcher's job:
  // launch::SweepFromLauncher); empty: none. Shards of one sweep read as one run (store/sweep.h).
  std::string sweep;
  // With a sweep: the cells of the whole selection before --shard (every shard's together), so a
  // sweep with a shard missing still knows its total; 0 without a sweep. Schema version 5.
  int sweep_cells = 0;
  std::vector<std::string> tags;
};

struct MetricRecord {
  std::string name;  // a declared name (record/metrics.h): "step_time_mean_ns", "samples_per_s"
  double value = 0;
  std::string unit;  // the declared unit: "ns", "1/s", "bytes", "J", "%", "ratio", ...
};

struct StepRow {
  std::uint32_t rank = 0;
  StepRecord record;
};

// One sampled value of one series (record/series.h names them): "gpu0.sm_util_pct",
// "host.cpu_util_pct", "proc.rss_bytes".
struct SeriesPoint {
  std::int64_t t_ns = 0;  // CLOCK_MONOTONIC, the step records' clock
  std::string series;
  double value = 0;
};

// The steps a cell's figures are computed over, decided once by the measurement policy
// (measure::MeasurePolicy) and stored with the cell: rank 0's steps [first_step, first_step +
// steps) in step order. Everything that summarises a cell (its metrics, the monitor analysis,
// compare, the report's charts) reads this window; none derives its own. Steps before it are
// warm-up; steps after it arrived after the decision to stop and are stored but not measured.
struct MeasuredWindow {
  std::int64_t first_step = 0;  // the warm-up cut: rank-0 steps [0, first_step) are warm-up
  std::int64_t steps = 0;       // measured steps; 0 when none was
  bool operator==(const MeasuredWindow& o) const { return first_step == o.first_step && steps == o.steps; }
};

struct CellRecord {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  int index = 0;
  std::string cell_id;  // plan::Cell::id, unique within the run
  std::string key;      // plan::Cell::key, the same cell across runs
  std::string label;
  nlohmann::json params = nlohmann::json::object();     // requested
  nlohmann::json effective = nlohmann::json::object();  // what ran (from READY)
  nlohmann::json hello = nlohmann::json::object();      // the runner's HELLO
  int repetition = 0;
  std::uint64_t seed = 0;
  Outcome outcome = Outcome::kError;
  std::string message;
  Verdict verdict = Verdict::kNotApplicable;
  nlohmann::json verdict_reasons = nlohmann::json::array();
  std::optional<MeasuredWindow> window;  // absent when the cell produced no step
  std::string warmup_rule;
  std::string stop_reason;
  std::string stdout_path;
  std::string stderr_path;
  std::int64_t started_wall_ns = 0;
  std::int64_t finished_wall_ns = 0;
  nlohmann::json extras = nlohmann::json::object();  // runner EXTRAS and MEMORY snapshots
  std::vector<MetricRecord> metrics;
  std::vector<StepRow> steps;       // loaded only when asked
  std::vector<SeriesPoint> series;  // loaded only when asked

  // The warm-up cut (window->first_step), when the cell has a window.
  std::optional<std::int64_t> warmup_steps() const {
    return window ? std::optional<std::int64_t>(window->first_step) : std::nullopt;
  }
};

// CellRecord::extras["input_verdict"]: a host-data cell against its control (orchestrator/
// input_analysis.h writes it; show, the report and exports read it).
inline constexpr const char* kInputVerdictExtrasKey = "input_verdict";
// CellRecord::extras["ddp_scaling"]: a ddp cell's per-rank figures and its comparisons with the
// same run's cells, or why none (orchestrator/ddp_analysis.h writes it; show and the report read it).
inline constexpr const char* kDdpScalingExtrasKey = "ddp_scaling";
// CellRecord::extras["attempts"]: a cell measured more than once under measure.retry_disturbed,
// every attempt's outcome, verdict, reasons and headline figures (orchestrator/retry.h writes it;
// show reads it).
inline constexpr const char* kAttemptsExtrasKey = "attempts";

// Rank 0's steps in step order (by start time: the records the measurement policy saw).
std::vector<StepRecord> RankZeroSteps(const CellRecord& cell);

// How many of `rank_zero_steps` (RankZeroSteps' order) ended at or before t_ns: the step a
// converge curve's point belongs to (record/series.h). O(log n).
std::int64_t StepsEndedBy(const std::vector<StepRecord>& rank_zero_steps, std::int64_t t_ns);
// The steps of the cell's measured window (rank 0, in step order); empty without a window or
// without loaded steps. A window reaching past the stored steps is clipped to them.
std::vector<StepRecord> MeasuredSteps(const CellRecord& cell);

// Adds or replaces a metric by name; the unit is the declared one (record/metrics.h). A name
// that is not declared is a programmer error (DLBENCH_CHECK): runners' metrics, which may be
// anything, go through AbsorbRunnerMetric instead.
void SetMetric(CellRecord& cell, std::string_view name, double value);
const MetricRecord* FindMetric(const CellRecord& cell, std::string_view name);
std::optional<double> MetricValue(const CellRecord& cell, std::string_view name);

}  // namespace dlbench::record
