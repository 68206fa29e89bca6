#include "store/sweep.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <set>

namespace dlbench::store {
namespace {

// "K/N" -> {K, N}; nullopt for anything else (a run stored without a shard).
std::optional<std::pair<int, int>> ParseShardText(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) return std::nullopt;
  int k = 0, n = 0;
  const char* begin = text.data();
  const char* end = begin + text.size();
  const auto [k_end, k_ec] = std::from_chars(begin, begin + slash, k);
  const auto [n_end, n_ec] = std::from_chars(begin + slash + 1, end, n);
  if (k_ec != std::errc() || n_ec != std::errc() || k_end != begin + slash || n_end != end || k < 1 || k > n)
    return std::nullopt;
  return std::make_pair(k, n);
}

std::string ShardOf(int k, int n) { return fmt::format("{}/{}", k, n); }

// Why `run` cannot be a shard of `sweep`, whose first run is `first`; "" when it can.
std::string Disagreement(const RunRecord& first, const RunRecord& run, int n) {
  const auto shard = ParseShardText(run.selection.shard);
  if (!shard) return fmt::format("run {} has no --shard K/N", run.id);
  if (shard->second != n) {
    return fmt::format("run {} is shard {} and run {} is shard {}", first.id, first.selection.shard, run.id,
                       run.selection.shard);
  }
  if (run.matrix_text != first.matrix_text)
    return fmt::format("runs {} and {} ran different matrices", first.id, run.id);
  if (run.selection.only != first.selection.only || run.selection.set != first.selection.set) {
    return fmt::format("runs {} and {} were given different --only or --set", first.id, run.id);
  }
  return "";
}

int StatusRank(record::RunStatus s) {
  switch (s) {
    case record::RunStatus::kRunning:
      return 0;
    case record::RunStatus::kFailed:
      return 1;
    case record::RunStatus::kInterrupted:
      return 2;
    case record::RunStatus::kCompleted:
      return 3;
  }
  return 0;
}

}  // namespace

std::optional<std::string> SweepOfRef(const std::string& ref) {
  if (ref.rfind(kSweepRefPrefix, 0) != 0) return std::nullopt;
  return ref.substr(kSweepRefPrefix.size());
}

std::vector<int> Sweep::Missing() const {
  std::vector<int> missing;
  // Shard K of a plan of fewer than K cells holds none, and stores no run (an empty shard under
  // a launcher ends without one): it is not missing.
  const int holding_cells = planned_cells > 0 ? std::min(shard_count, planned_cells) : shard_count;
  for (int k = 1; k <= holding_cells; ++k) {
    if (shards.find(k) == shards.end()) missing.push_back(k);
  }
  return missing;
}

bool Sweep::Complete() const {
  if (!Missing().empty()) return false;
  return std::all_of(shards.begin(), shards.end(),
                     [](const auto& s) { return s.second.status == record::RunStatus::kCompleted; });
}

std::vector<std::string> Sweep::Notes() const {
  std::vector<std::string> notes;
  for (int k : Missing())
    notes.push_back(fmt::format("shard {} has not stored a run", ShardOf(k, shard_count)));
  for (const auto& [k, run] : shards) {
    if (run.status != record::RunStatus::kCompleted) {
      notes.push_back(
          fmt::format("shard {} (run {}) is {}", ShardOf(k, shard_count), run.id, record::Name(run.status)));
    }
  }
  for (std::int64_t id : repeated) {
    notes.push_back(fmt::format("run {} ran a shard again later: the newer run is read instead", id));
  }
  return notes;
}

Result<std::vector<Sweep>> ListSweeps(ResultStore& store) {
  auto runs = store.ListRuns();  // newest first
  if (!runs.ok()) return runs.error();
  std::vector<Sweep> sweeps;
  std::map<std::string, std::size_t> at;
  std::map<std::string, RunRecord> first_of;
  for (const RunRecord& run : *runs) {
    if (run.sweep.empty()) continue;
    auto [it, added] = at.emplace(run.sweep, sweeps.size());
    if (added) {
      Sweep sweep;
      sweep.name = run.sweep;
      const auto shard = ParseShardText(run.selection.shard);
      if (!shard)
        return MakeError(ErrorKind::kStore,
                         fmt::format("run {} is in sweep {} but has no --shard K/N", run.id, run.sweep));
      sweep.shard_count = shard->second;
      sweep.planned_cells = run.sweep_cells;
      sweep.newest = run.id;
      sweeps.push_back(std::move(sweep));
      first_of[run.sweep] = run;
    }
    Sweep& sweep = sweeps[it->second];
    const std::string why = Disagreement(first_of[run.sweep], run, sweep.shard_count);
    if (!why.empty()) {
      if (sweep.conflict.empty()) sweep.conflict = why;
      continue;
    }
    const int k = ParseShardText(run.selection.shard)->first;
    if (sweep.shards.count(k) != 0) {
      sweep.repeated.push_back(run.id);  // newest first: the one already there is newer
    } else {
      sweep.shards.emplace(k, run);
    }
  }
  for (Sweep& s : sweeps) std::sort(s.repeated.begin(), s.repeated.end());
  return sweeps;
}

Result<Sweep> FindSweep(ResultStore& store, const std::string& name) {
  auto sweeps = ListSweeps(store);
  if (!sweeps.ok()) return sweeps.error();
  std::string known;
  for (Sweep& s : *sweeps) {
    if (s.name == name) return std::move(s);
    known += (known.empty() ? "" : ", ") + s.name;
  }
  return MakeError(ErrorKind::kNotFound,
                   fmt::format("no run in {} is a shard of sweep '{}' ({})", store.Describe(), name,
                               known.empty() ? "it holds no sweep" : "its sweeps: " + known));
}

Result<LoadedRun> LoadRun(ResultStore& store, const std::string& ref, const CellQuery& query) {
  LoadedRun loaded;
  const std::optional<std::string> name = SweepOfRef(ref);
  if (!name) {
    auto id = store.ResolveRun(ref);
    if (!id.ok()) return id.error();
    auto run = store.GetRun(*id);
    if (!run.ok()) return run.error();
    auto cells = store.GetCells(*id, query);
    if (!cells.ok()) return cells.error();
    loaded.run = std::move(run).value();
    loaded.cells = std::move(cells).value();
    return loaded;
  }
  auto sweep = FindSweep(store, *name);
  if (!sweep.ok()) return sweep.error();
  if (!sweep->conflict.empty()) {
    return MakeError(
        ErrorKind::kInvalidInput,
        fmt::format("sweep {} holds runs of different plans ({}): a sweep is the shards of one plan; "
                    "give each sweep its own --sweep NAME, or read its runs one by one",
                    sweep->name, sweep->conflict));
  }
  DLBENCH_CHECK(!sweep->shards.empty(), "a listed sweep has a run");
  RunRecord merged = sweep->shards.begin()->second;
  merged.total_cells = sweep->planned_cells;
  merged.selection.shard.clear();
  bool all_finished = sweep->Missing().empty();
  std::int64_t last_end = 0;
  std::set<std::string> tags, hashes;
  std::set<std::string> seen_cells;
  for (const auto& [k, run] : sweep->shards) {
    if (StatusRank(run.status) < StatusRank(merged.status)) merged.status = run.status;
    merged.started_wall_ns = std::min(merged.started_wall_ns, run.started_wall_ns);
    if (run.finished_wall_ns) {
      last_end = std::max(last_end, *run.finished_wall_ns);
    } else {
      all_finished = false;
    }
    tags.insert(run.tags.begin(), run.tags.end());
    hashes.insert(run.environment_hash);
    auto cells = store.GetCells(run.id, query);
    if (!cells.ok()) return cells.error();
    for (CellRecord& c : *cells) {
      if (seen_cells.insert(c.cell_id).second) loaded.cells.push_back(std::move(c));
    }
  }
  if (!sweep->Missing().empty() && merged.status == record::RunStatus::kCompleted) {
    merged.status = record::RunStatus::kInterrupted;
  }
  merged.finished_wall_ns = all_finished ? std::optional<std::int64_t>(last_end) : std::nullopt;
  merged.tags.assign(tags.begin(), tags.end());
  std::stable_sort(loaded.cells.begin(), loaded.cells.end(),
                   [](const CellRecord& a, const CellRecord& b) { return a.index < b.index; });
  loaded.notes = sweep->Notes();
  if (hashes.size() > 1) {
    loaded.notes.push_back(
        fmt::format("the shards ran in {} different environments; the environment shown is shard "
                    "{}'s (run {})",
                    hashes.size(), ShardOf(sweep->shards.begin()->first, sweep->shard_count), merged.id));
  }
  loaded.run = std::move(merged);
  loaded.sweep = std::move(sweep).value();
  return loaded;
}

}  // namespace dlbench::store
