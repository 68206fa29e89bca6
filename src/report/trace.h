// `dlbench export RUN --format trace`: a cell's timeline in the Chrome trace event format, which
// Perfetto (ui.perfetto.dev) and chrome://tracing open (R12).
//
// Each cell is a process (pid = cell index + 1) named by its label; rank r's steps are spans on
// tid r ("X" events, ts/dur in microseconds from the cell's first step start). Where the runner
// reported phases, a step holds child spans data_wait, compute and comm, laid out in that order
// from the step's start: the durations are measured, their order within the step is a convention.
// A runner whose effective cell declares step_phases.remainder "copy" (the torch runner's host-fed
// data sources) also gets a copy span, the rest of the step, between data_wait and compute.
// Every sampled series is a counter track ("C" events) over the same window, so the gaps where
// the device idles between steps line up with its utilisation.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "store/result_store.h"

namespace dlbench::report {

// Steps [begin, end) by their 0-based position in each rank's sequence.
struct StepRange {
  std::int64_t begin = 0;
  std::optional<std::int64_t> end;  // absent: to the last step
};

// "A:B" (steps A..B-1), "A:" (from A), ":B" (the first B). kInvalidInput naming the form when
// the text is not one of these or B <= A.
Result<StepRange> ParseStepRange(const std::string& text);

struct TraceOptions {
  std::optional<StepRange> steps;
};

// The trace of the given cells (steps and series loaded): {"traceEvents": [...],
// "displayTimeUnit": "ms", "otherData": {run_id, run_name, tool_version}}.
nlohmann::json BuildTrace(const record::RunRecord& run, const std::vector<record::CellRecord>& cells,
                          const TraceOptions& options);

}  // namespace dlbench::report
