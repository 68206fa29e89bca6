#include "store/store_copy.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>

namespace dlbench::store {
namespace {

Status CopyTags(const RunRecord& run, std::int64_t to_id, ResultStore& to,
                const std::function<void(const std::string&)>& note) {
  for (const std::string& tag : run.tags) {
    auto named = to.ResolveRun(tag);
    if (named.ok() && *named == to_id) continue;
    if (named.ok()) {
      note(fmt::format("tag '{}' already names run {} in {}; left as it is", tag, *named, to.Describe()));
      continue;
    }
    if (named.error().kind != ErrorKind::kNotFound) return named.error();
    DLBENCH_RETURN_IF_ERROR(to.SetTag(to_id, tag));
  }
  return Status::Ok();
}

}  // namespace

Result<CopyReport> CopyRuns(ResultStore& from, ResultStore& to, const std::vector<std::string>& refs,
                            const std::function<void(const std::string&)>& note) {
  std::set<std::int64_t> ids;
  if (refs.empty()) {
    auto runs = from.ListRuns();
    if (!runs.ok()) return runs.error();
    for (const RunRecord& run : *runs) ids.insert(run.id);
  } else {
    for (const std::string& ref : refs) {
      auto id = from.ResolveRun(ref);
      if (!id.ok()) return id.error();
      ids.insert(*id);
    }
  }
  std::map<std::string, std::int64_t> to_by_uuid;
  {
    auto runs = to.ListRuns();
    if (!runs.ok()) return runs.error();
    for (const RunRecord& run : *runs) to_by_uuid[run.uuid] = run.id;
  }

  CopyReport report;
  for (std::int64_t id : ids) {  // ascending: the destination's ids keep the source's order
    auto run = from.GetRun(id);
    if (!run.ok()) return run.error();
    if (run->uuid.empty()) {
      return MakeError(ErrorKind::kStore, fmt::format("run {} in {} has no uuid", id, from.Describe()));
    }
    auto cells = from.GetCells(id, CellQuery{});
    if (!cells.ok()) return cells.error();

    std::int64_t to_id = 0;
    std::map<std::string, record::Outcome> present;
    const auto existing = to_by_uuid.find(run->uuid);
    const bool was_there = existing != to_by_uuid.end();
    if (was_there) {
      to_id = existing->second;
      ++report.runs_existing;
      auto stored = to.GetCells(to_id, CellQuery{});
      if (!stored.ok()) return stored.error();
      for (const CellRecord& cell : *stored) present[cell.cell_id] = cell.outcome;
    } else {
      RunRecord copy = *run;
      copy.tags.clear();  // CopyTags decides each tag
      auto added = to.BeginRun(copy);
      if (!added.ok()) return added.error();
      to_id = *added;
      to_by_uuid[run->uuid] = to_id;
      ++report.runs_added;
    }

    int copied = 0, kept = 0;
    for (const CellRecord& cell : *cells) {
      const auto there = present.find(cell.cell_id);
      const bool needed = there == present.end() || (there->second == record::Outcome::kInterrupted &&
                                                     cell.outcome != record::Outcome::kInterrupted);
      if (!needed) {
        ++kept;
        continue;
      }
      // One cell at a time with its steps and series: a run's cells together may not fit in memory.
      auto full = from.GetCells(id, CellQuery{true, true, cell.index});
      if (!full.ok()) return full.error();
      auto it = std::find_if(full->begin(), full->end(),
                             [&](const CellRecord& c) { return c.cell_id == cell.cell_id; });
      if (it == full->end()) {
        return MakeError(ErrorKind::kStore, fmt::format("cell '{}' of run {} vanished from {} while copying",
                                                        cell.cell_id, id, from.Describe()));
      }
      it->run_id = to_id;
      DLBENCH_RETURN_IF_ERROR(to.PutCell(*it));
      ++copied;
    }
    report.cells_copied += copied;
    report.cells_present += kept;

    auto stored_run = to.GetRun(to_id);
    if (!stored_run.ok()) return stored_run.error();
    if (stored_run->status != run->status || stored_run->finished_wall_ns != run->finished_wall_ns) {
      DLBENCH_RETURN_IF_ERROR(to.SetRunStatus(to_id, run->status, run->finished_wall_ns));
    }
    DLBENCH_RETURN_IF_ERROR(CopyTags(*run, to_id, to, note));
    note(fmt::format("run {} ({}): {} as run {}; {} cell{} copied, {} already there", id, run->name,
                     was_there ? "present" : "added", to_id, copied, copied == 1 ? "" : "s", kept));
  }
  return report;
}

}  // namespace dlbench::store
