// The latency decomposition of a load cell (docs/load.md "Latency decomposition"): from the parts
// each query record carries (host pre-processing, H2D, compute, D2H, host post-processing; the
// runner times them, trtexec's split) and the queue part the orchestrator derives (latency minus
// the parts present: the issue delay, the wait in the batcher's queue and for a stream, and host
// time that no part covers), each part's mean and p99 over the measured queries and its share of
// the mean latency, as metrics (record/metrics.h).
#pragma once

#include <cstddef>
#include <vector>

#include "record/query.h"
#include "record/records.h"

namespace dlbench::orchestrator {

// Sets query_<part>_{mean_ns,p99_ns,share_pct} of records [begin, end) in `rec`. A runner part is
// summarised over the queries whose record carries it (its `present` bit), and left out when none
// does; the queue part is summarised over every query. The p99 is LoadGen's index rule
// (stats::LoadGenPercentileSorted), as for the latency. Nothing is set for an empty range.
void AddLatencyDecomposition(const std::vector<record::QueryRecord>& records, std::size_t begin,
                             std::size_t end, record::CellRecord& rec);

}  // namespace dlbench::orchestrator
