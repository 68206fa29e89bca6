// Inference under load in the orchestrator (docs/load.md, "What dlbench stores"): a load cell's
// QUERIES records checked (every query id once, in order) and kept, the load policy fed, and once
// the cell is over its measured window, metrics (record/metrics.h, "Inference under load"),
// verdict and stored query series. The conversation and the cell runner call in here; the rules
// live here.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "config/matrix.h"
#include "measure/load_policy.h"
#include "protocol/wire.h"
#include "record/records.h"

namespace dlbench::orchestrator {

// The claim and scenario of a load cell, from its parameters as the runner reads them
// (load::ResolveLoadSettings): kInvalidInput for settings the runner would refuse too.
struct LoadCellSettings {
  std::string scenario;  // "single_stream", "multi_stream", "server", "offline"
  measure::LoadClaim claim;
  bool peak_search = false;
  std::uint32_t peak_max_probes = 0;  // with peak_search: the cell's bounds (load::EffectiveLoadSettings)
  double peak_resolution = 0;
  bool peak_confirm =
      false;  // peak_confirm_s > 0: the search's peak is confirmed (docs/load.md "Confirmation")
};
Result<LoadCellSettings> LoadCellSettingsOf(const nlohmann::json& params, std::uint64_t seed);

// Whether a cell's parameters ask for inference under load.
bool IsLoadCell(const nlohmann::json& params);

// One load cell's records as they arrive. Records must come from rank 0 in query-id order with no
// gap and no repeat (docs/protocol.md, QUERIES); a repeat is not kept, a gap is remembered, and
// both make the cell `invalid` when it ends (IdProblems), naming the first few ids.
class LoadRecorder {
 public:
  static constexpr std::size_t kNamedIds = 5;  // ids a message names before "and N more"

  LoadRecorder(const config::MeasureSettings& measure, const LoadCellSettings& settings);

  // One decoded QUERIES batch. `measuring`: STOP was not sent yet, so the policy sees the records.
  // A violation (a rank other than 0) is returned as its message.
  std::optional<std::string> Add(const protocol::QueryBatch& batch, bool measuring);
  const measure::LoadPolicy& policy() const { return policy_; }
  const LoadCellSettings& settings() const { return settings_; }
  const std::vector<record::QueryRecord>& records() const { return records_; }
  std::int64_t record_count() const { return static_cast<std::int64_t>(records_.size()); }

  // "" when every id arrived once; otherwise what went wrong, naming ids. `issued` is DONE's count
  // of queries the runner issued, when known: ids from the last received to it were dropped.
  std::string IdProblems(std::optional<std::int64_t> issued) const;
  // The queries of `issued` whose records never came, when they are exactly the last ones (no gap
  // before them, no id twice): what a runner that ended with queries still outstanding sends, as
  // its records go out in id order. 0 when nothing is missing or the ids have another problem.
  std::int64_t OutstandingTail(std::optional<std::int64_t> issued) const;

 private:
  LoadCellSettings settings_;
  measure::LoadPolicy policy_;
  std::vector<record::QueryRecord> records_;
  std::uint64_t next_id_ = 0;
  std::vector<std::uint64_t> duplicate_ids_;
  std::int64_t duplicates_ = 0;
  std::vector<std::uint64_t> dropped_ids_;
  std::int64_t dropped_ = 0;
};

// What a finished load cell concludes, for the cell runner.
struct LoadConclusion {
  std::optional<std::string> invalid;  // the cell's outcome is `invalid` with this message
  std::vector<std::string> reasons;    // otherwise its verdict's reasons (none: valid)
};

// Stores the measured window (queries [0, policy's MeasuredQueries()), in id order), the load
// metrics, extras.load (the headline, the claim, the policy's decision), every query record as
// series (record/series.h "load.*"; t_ns the scheduled time), and returns either why the cell is
// `invalid` (ids dropped or repeated, no query) or its verdict's reasons (docs/load.md, "Verdict"),
// which the cell runner applies when the cell ends ok. `done_reason` is the runner's DONE
// reason ("too_many_outstanding": the generator fell behind).
// A peak search's cell (target_qps: max) is concluded by ConcludePeakSearch (peak_cell.h).
LoadConclusion ConcludeLoad(const LoadRecorder& load, std::optional<std::int64_t> issued,
                            const std::string& stop_reason, const std::string& done_reason,
                            record::CellRecord& rec);

// The figures and verdict of one measured window, records [begin, end) in id order: sets
// rec.window to it and the load metrics of record/metrics.h ("Inference under load") computed over
// it, and returns the verdict's reasons (docs/load.md "Metrics and the verdict"; none: valid).
// `floor` is the queries the claim needs at least; `done_reason` "too_many_outstanding" means the
// generator fell behind. A peak search judges each probe with it (peak_cell.h).
std::vector<std::string> MeasureLoadWindow(const LoadCellSettings& settings,
                                           const std::vector<record::QueryRecord>& records, std::size_t begin,
                                           std::size_t end, std::int64_t floor,
                                           const std::string& stop_reason, const std::string& done_reason,
                                           record::CellRecord& rec);

}  // namespace dlbench::orchestrator
