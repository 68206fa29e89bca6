// A peak search's cell (target_qps: max; docs/load.md "Peak search") in the orchestrator. The
// runner chose the rates and reports its probes in EXTRAS (info.load.peak_search: each probe's
// rate, its warm-up and measured query-id ranges, its own verdict); the orchestrator judges every
// probe again from the probe's stored query records, with the server cell's verdict
// (MeasureLoadWindow), and keeps one stored cell: its measured window and load metrics are the
// peak probe's queries, its headline load_peak_qps, and extras.load.peak_search every probe as
// judged here (target_qps, achieved rate, percentile and p99, valid and why not).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "orchestrator/load_cell.h"
#include "record/records.h"

namespace dlbench::orchestrator {

// Concludes a peak-search cell whose received query ids already checked out (ConcludeLoad: no gap,
// no repeat). The cell is `invalid` when the runner's report is missing or malformed, does not
// account for every record and every issued query (the probes' warm-up, measured and dropped ranges
// must tile ids [0, issued), only the last probe may have dropped queries, and the records must be
// every id but those dropped), or a probe's verdict from its records differs from the runner's (the
// search's choices rested on it). A probe with dropped queries (STOP came while its queue was longer
// than the runner's STOP drain) is judged as a server cell that ended dropped_after_stop:
// fell_behind. Otherwise its verdict: valid when the search's bracket is within peak_resolution;
// over_bound when no probed rate passed; too_short when the search ended (probe cap, time, STOP,
// the rate cap) before that, saying so (and, after STOP, how many queries were dropped). With
// peak_confirm_s, the confirmations (probes flagged `confirmation`, after the search's) decide the
// peak: the highest confirmed rate, the window its confirmation's; every confirmation failing makes
// the cell fail with the last one's reason, and a search's end before a confirmation passed or all
// were used makes it too_short, "unconfirmed" (docs/load.md "Confirmation").
LoadConclusion ConcludePeakSearch(const LoadRecorder& load, std::optional<std::int64_t> issued,
                                  const std::string& stop_reason, const std::string& done_reason,
                                  record::CellRecord& rec);

}  // namespace dlbench::orchestrator
