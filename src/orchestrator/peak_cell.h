// A peak search's cell (target_qps: max; docs/load.md "Peak search") in the orchestrator. The
// runner chose the rates and reports its probes in EXTRAS (info.load.peak_search: each probe's
// rate, its warm-up and measured query-id ranges, its own verdict); the orchestrator judges every
// probe again from the probe's stored query records, with the server cell's verdict
// (MeasureLoadWindow), and keeps one stored cell: its measured window and load metrics are the
// peak probe's queries, its headline load_peak_qps, and extras.load.peak_search every probe as
// judged here (target_qps, achieved rate, percentile and p99, valid and why not).
#pragma once

#include <string>

#include "orchestrator/load_cell.h"
#include "record/records.h"

namespace dlbench::orchestrator {

// Concludes a peak-search cell whose query ids already checked out (ConcludeLoad). The cell is
// `invalid` when the runner's report is missing or malformed, does not account for every record
// (the probes' ranges must tile ids [0, n)), or a probe's verdict from its records differs from
// the runner's (the search's choices rested on it). Otherwise its verdict: valid when the bracket
// is within peak_resolution; over_bound when no probed rate passed; too_short when the search ended
// (probe cap, time, STOP, the rate cap) before that.
LoadConclusion ConcludePeakSearch(const LoadRecorder& load, const std::string& stop_reason,
                                  const std::string& done_reason, record::CellRecord& rec);

}  // namespace dlbench::orchestrator
