// `dlbench db copy SRC DST`: runs from one store into another, SQLite or PostgreSQL either way
// (docs/storage.md, "Copying between stores").
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "store/result_store.h"

namespace dlbench::store {

struct CopyReport {
  int runs_added = 0;     // runs the destination did not have
  int runs_existing = 0;  // runs it had already (same uuid)
  int cells_copied = 0;
  int cells_present = 0;  // cells the destination had already
};

// Copies the runs `refs` names in `from` (ids, tags or "latest"; all runs when empty) into `to`,
// oldest first, each with its environment, cells, metrics, steps and series, its status and its
// tags. Idempotent: runs are matched by uuid and cells by cell_id, so copying again adds only
// what the destination lacks (cells it lacks, or holds only as interrupted where the source has
// them finished) and brings the run's status to the source's; a second copy changes nothing. A
// tag that already names another run in `to` is left as it is and reported through `note`, as is
// every run copied. Run ids are the destination's own. The first failure ends the copy; what was
// copied before it stays, and copying again continues where it stopped.
Result<CopyReport> CopyRuns(ResultStore& from, ResultStore& to, const std::vector<std::string>& refs,
                            const std::function<void(const std::string&)>& note);

}  // namespace dlbench::store
