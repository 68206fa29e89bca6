// A boundary search's finished probes, kept on disk while the search runs, so that a search cut
// short (Ctrl-C, a deadline's SIGINT, dlbench itself killed) does not lose them: `dlbench run
// --resume` runs the search again, and while it asks for the values the journal holds, in the
// journal's order, their stored records answer instead of new runner processes (docs/memory.md,
// "An interrupted search").
//
// The file is <log_dir>/cell-NNNN.probes.json (the run folder a resumed run keeps), rewritten
// whole after each probe whose outcome says something about memory (ok or oom; an interrupted or
// failed probe is never kept), and removed once the search's cell has a result. It holds the
// search's fingerprint (the cell's id and params, the search settings and its seeds): a journal
// written for another fingerprint is not used, and the first value the search asks that differs
// from the journal's next one drops the rest, so a replay never answers a question it was not
// asked. Without a log folder (tests, or a caller with no run folder) nothing is kept.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "record/records.h"

namespace dlbench::orchestrator {

class ProbeJournal {
 public:
  // Reads the journal of the cell at `cell_index` under `log_dir` when its fingerprint is
  // `fingerprint`; an absent, unreadable or foreign journal is started afresh.
  ProbeJournal(const std::string& log_dir, int cell_index, nlohmann::json fingerprint);

  // The kept record of the next probe when the journal's next entry is for `value`; nullopt (and
  // the rest of the journal dropped) otherwise.
  std::optional<record::CellRecord> Next(std::int64_t value);
  // Keeps a probe that ran (ok or oom; others are ignored) and rewrites the file. A failure to
  // write is remembered (error()) and the search goes on without the journal.
  void Add(std::int64_t value, const record::CellRecord& probe);
  // Removes the file (the search's cell has its result).
  void Remove();

  // How many probes the journal held when it was read, for the cell's note.
  std::size_t kept_at_start() const { return kept_at_start_; }
  // The first failure to write the file, empty when none.
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;  // empty: no journal
  nlohmann::json fingerprint_;
  std::vector<std::int64_t> values_;
  std::vector<nlohmann::json> records_;
  std::size_t next_ = 0;
  std::size_t kept_at_start_ = 0;
  std::string error_;
};

}  // namespace dlbench::orchestrator
