// The Prometheus text exposition (R17): what `dlbench serve` answers on /metrics and what
// `dlbench export RUN --format prometheus` writes for node_exporter's textfile collector.
//
// Every stored metric becomes a gauge in base units (docs/reports.md has the table):
//   unit "ns" -> *_seconds (x1e-9), "s" -> *_seconds, "bytes" -> *_bytes, "J" -> *_joules,
//   "%" -> *_ratio (/100), "ratio" -> *_ratio, "1/s" and "FLOP/s" -> *_per_second, "W" -> *_watts;
// other units keep the stored name. Each gauge carries the same few labels: model, scenario,
// batch_size, precision, device, strategy, host, and variant (the cell's remaining parameters as
// "name=value,...", so two cells of one matrix never share a label set).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "record/progress.h"
#include "store/result_store.h"

namespace dlbench::report {

// A stored metric in Prometheus's base units: "step_time_p99_ns" = 2e6 ns ->
// {"dlbench_step_time_p99_seconds", 0.002}.
struct PromGauge {
  std::string name;
  double value = 0;
};
PromGauge ToBaseUnits(const record::MetricRecord& metric);

// The label set of a cell (see the header comment), in a fixed order.
std::vector<std::pair<std::string, std::string>> CellLabels(const record::RunRecord& run,
                                                            const record::CellRecord& cell);

// The host name recorded in a run's environment fingerprint ("hostname", "host.hostname" or
// "host.name"), empty when none is recorded.
std::string EnvironmentHost(const nlohmann::json& environment);

// The progress file `dlbench run` writes next to the database while it runs; its codec is the
// data model's (record/progress.h).
using record::ParseProgress;
using record::ProgressPath;
using record::RunProgress;
// The progress of the run writing to db_path, or nullopt when there is none: no file, a file that
// does not parse (it is replaced atomically, so that means a foreign file), or a pid that is no
// longer alive (a run that was killed before it could remove its file).
std::optional<RunProgress> ReadActiveProgress(const std::string& db_path);

// One cell key's latest result, with the throughput of the same key in the newest earlier run
// that measured it (for the change ratio and the regression flag).
struct LatestCell {
  record::RunRecord run;
  record::CellRecord cell;
  std::optional<double> previous_samples_per_s;
};

struct ExpositionInput {
  std::vector<LatestCell> cells;
  std::optional<record::RunRecord> environment_run;  // the run whose environment is described
  bool with_progress = false;                        // serve: describe run activity
  std::optional<RunProgress> progress;               // when with_progress and a run is active
  // A cell is flagged as a regression when its throughput is below (1 - threshold) of the
  // previous run's. A plain ratio of two runs, not the statistical test of `dlbench compare`.
  double regression_threshold = 0.05;
};

// The exposition text: # HELP and # TYPE once per metric family, families sorted by name,
// samples sorted by labels; dlbench_build_info and dlbench_environment_info always present.
std::string RenderExposition(const ExpositionInput& input);

// The latest cell of every key over the whole store (newest run first, and within a run the
// highest index), each with its previous throughput, in key order. The store's error when it
// cannot be read.
Result<ExpositionInput> CollectLatestCells(store::ResultStore& store);
// The same restricted to one run's cells: its latest cell per key, previous values from older runs.
Result<ExpositionInput> CollectRunCells(store::ResultStore& store, std::int64_t run_id);

}  // namespace dlbench::report
