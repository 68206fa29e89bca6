// Sweeps: the shards of one plan (`run --shard K/N`, one process each) that share a sweep name
// (RunRecord::sweep: `run --sweep NAME`, or the launcher's job) read as one run. Each shard
// stores a run of its own; these functions group them, say which shard is missing, and load the
// shards' cells as one run's cells, for `runs --sweeps`, `show`, `compare`, `report` and `export`
// given `sweep:NAME` (docs/distributed.md "Sweeps").
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/result_store.h"

namespace dlbench::store {

// "sweep:NAME" names a sweep wherever a run reference is read by LoadRun.
inline constexpr std::string_view kSweepRefPrefix = "sweep:";
// NAME of "sweep:NAME"; nullopt for any other reference.
std::optional<std::string> SweepOfRef(const std::string& ref);

struct Sweep {
  std::string name;
  int shard_count = 0;                 // N of the shards' --shard K/N
  std::map<int, RunRecord> shards;     // K -> the shard's run (the newest, when K ran twice)
  std::vector<std::int64_t> repeated;  // runs of a shard that a newer run of it replaces
  int planned_cells = 0;               // the whole sweep's cells (RunRecord::sweep_cells)
  std::optional<std::int64_t> newest;  // the newest run id among the shards
  // Why older runs named this sweep cannot be its shards (a sweep name used for two plans:
  // another matrix, --only, --set or N), naming the runs; "" when they agree. Only the runs that
  // agree with the newest one are its shards.
  std::string conflict;

  // K of every shard with no stored run, ascending; shards past the plan's cells hold none and are
  // never missing.
  std::vector<int> Missing() const;
  // Every shard stored a run, and each of them completed.
  bool Complete() const;
  // "shard 2/4 has not stored a run" for each missing shard, and a line for each repeated one.
  std::vector<std::string> Notes() const;
};

// Every sweep with a run in `store`, the one with the newest run first.
Result<std::vector<Sweep>> ListSweeps(ResultStore& store);
// One sweep by name: kNotFound naming the known sweeps when no run has it.
Result<Sweep> FindSweep(ResultStore& store, const std::string& name);

// A run, or a sweep's shards as one run, with its cells.
struct LoadedRun {
  // A sweep reads as its first stored shard's run with: total_cells the sweep's; the shard taken
  // off the selection; the status completed only when every shard's is (else the first of
  // running, failed, interrupted among them; interrupted when a shard is missing); started at the first
  // shard's start and finished at the last one's end (none while one is unfinished or missing); the tags of
  // every shard.
  RunRecord run;
  std::vector<CellRecord> cells;   // in plan order (CellRecord::index), each cell_id once
  std::optional<Sweep> sweep;      // set for `sweep:NAME`
  std::vector<std::string> notes;  // what the reader must be told: Sweep::Notes, differing environments
};
// `ref` is a run reference (ResultStore::ResolveRun) or sweep:NAME. kInvalidInput for a sweep
// with a conflict (Sweep::conflict).
Result<LoadedRun> LoadRun(ResultStore& store, const std::string& ref, const CellQuery& query);

}  // namespace dlbench::store
