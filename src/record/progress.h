// The progress file of an active run: `dlbench run` writes it next to the database
// (<db>.progress.json) as each cell starts, `dlbench serve` reads it to expose the run's progress
// (dlbench_run_* gauges). This is its one codec: the writer and every reader use EncodeProgress
// and ParseProgress, so the keys are spelt once (docs/reports.md describes the file).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"

namespace dlbench::record {

struct RunProgress {
  std::int64_t run_id = 0;
  std::int64_t cells_total = 0;  // cells this invocation runs (a resume: those still to run)
  std::int64_t cells_done = 0;   // of those, finished and stored
  std::string current_cell;      // the label of the cell that runs now
  std::int64_t started_wall_ns = 0;
  std::int64_t updated_wall_ns = 0;
  std::int64_t pid = 0;  // the writing `dlbench run`, so a reader can tell a live run from a dead one
  bool operator==(const RunProgress& o) const {
    return run_id == o.run_id && cells_total == o.cells_total && cells_done == o.cells_done &&
           current_cell == o.current_cell && started_wall_ns == o.started_wall_ns &&
           updated_wall_ns == o.updated_wall_ns && pid == o.pid;
  }
};

// A JSON object with every field, then a newline. Invalid UTF-8 in current_cell is replaced.
std::string EncodeProgress(const RunProgress& progress);

// The inverse, strict about types: kInvalidInput when the text is not a JSON object, has no
// run_id, or a field of the wrong type (an integer field must be a JSON integer within int64; the
// pid must be a valid pid, 0 <= pid <= 2^22, Linux's largest). Absent integer fields read as 0,
// an absent current_cell as "". Unknown keys are ignored (a newer writer may add some).
Result<RunProgress> ParseProgress(std::string_view text);

// "<db_path>.progress.json".
std::string ProgressPath(const std::string& db_path);

}  // namespace dlbench::record
