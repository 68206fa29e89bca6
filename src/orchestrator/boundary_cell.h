// A boundary search's cell (batch_size: max, and the same over the input's size, seq_len: max and
// image_size: max; docs/memory.md "Boundary search") in the orchestrator. stats::SearchBoundary
// chooses the values (below: batch sizes); each probe is the cell at one value, run by RunCell in
// a fresh runner process for boundary_probe_steps steps (an out-of-memory
// can leave a process unusable, and a fresh one starts with clean device state). A probe fits when
// it ends `ok` and does not when it ends `oom`; any other end (an error, a crash, a timeout, Ctrl-C)
// ends the search with that probe's outcome and message (end probe_failed; stopped for Ctrl-C), since
// it says nothing about memory: it is not the bracket's failure, and its `fits` is null. The found batch is
// then run once more as an ordinary measured cell (5% lower, at most three times, while that run ends
// `oom`: memory grows over a run longer than a probe), and that run is the one stored cell: its params keep
// batch_size: max, its effective cell the batch that ran, its metrics boundary_batch_size,
// boundary_first_failing_batch_size and boundary_probes, and extras.boundary_search every probe
// (batch, outcome, peak memory, message). The probes' own records are not stored; their logs stay
// in the run folder beside the measured run's (cell-NNNN.probe-bsB.stderr.log).
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "orchestrator/boundary_seeds.h"
#include "orchestrator/cell_runner.h"
#include "plan/plan.h"
#include "record/records.h"
#include "stats/boundary_search.h"
#include "store/result_store.h"

namespace dlbench::orchestrator {

// The key the cell searches: the first of batch_size, seq_len and image_size (config::
// kBoundarySearchKeys) whose value is `max`, or empty when none is (the plan allows one per cell).
std::string BoundarySearchKey(const plan::Cell& cell);

// Whether the cell asks for a boundary search: batch_size, seq_len or image_size: max.
bool IsBoundarySearch(const plan::Cell& cell);

// The search's settings from the cell: from boundary_min (default 1; image_size 32) to
// boundary_max (default the key's registry maximum), at most boundary_max_probes probes.
stats::BoundarySearchSettings BoundarySettings(const plan::Cell& cell);

// How a cell is run; RunCell in production.
using RunCellFn = std::function<record::CellRecord(const plan::Cell&, const CellRunOptions&)>;

// Runs the search and the measured run of the batch found, and returns the record to store. A
// search in which nothing fits stores the smallest batch's `oom` probe; one that ended on another
// outcome stores that probe, its message naming the batch.
// `seeds` serve a seeded search only (FindBoundarySeeds).
record::CellRecord RunBoundarySearch(const plan::Cell& cell, const CellRunOptions& options,
                                     const RunCellFn& run_cell = RunCell, const BoundarySeeds& seeds = {});

}  // namespace dlbench::orchestrator
