// A finished cell is never lost to a database server that stays away (docs/storage.md, "Lost
// connections and spill files"). SpillingStore wraps the store a run writes to; the run loop
// calls it like any ResultStore and needs nothing else.
//
// PutCell: the inner store retries a lost connection for its own bounded time (PostgresStore's
// retry window). When it still fails with kUnavailable, the cell is written to a spill file
// (<spill_dir>/run-<ID>/<cell>.cell.json, written whole or not at all) and PutCell fails with
// kUnavailable saying where the cell is and that `dlbench run MATRIX --resume ID` stores it: the
// run ends with that message (exit 3) instead of running cells it cannot store. Any other failure
// is returned as it is, with nothing spilled.
//
// Replay: before PutCell, FinishedCellIds and SetRunStatus of a run, the run's spilled cells are
// written to the inner store, oldest index first, and each file is removed once its cell is
// stored. So a cell spilled during a server outage is stored by the next cell of the same run once
// the server is back, or by `run --resume`, which asks FinishedCellIds first. A spilled file that
// cannot be read, or whose run no longer exists, is left in place and named in the error.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "store/result_store.h"

namespace dlbench::store {

class SpillingStore final : public ResultStore {
 public:
  // Writes through `inner`; spilled cells of this store go under `spill_dir` (created on the
  // first spill).
  SpillingStore(std::unique_ptr<ResultStore> inner, std::string spill_dir)
      : inner_(std::move(inner)), spill_dir_(std::move(spill_dir)) {}

  Result<std::int64_t> BeginRun(const RunRecord& run) override { return inner_->BeginRun(run); }
  Status PutCell(const CellRecord& cell) override;
  Status SetRunStatus(std::int64_t run_id, record::RunStatus status,
                      std::optional<std::int64_t> finished_wall_ns) override;
  Result<std::vector<RunRecord>> ListRuns() override { return inner_->ListRuns(); }
  Result<RunRecord> GetRun(std::int64_t run_id) override { return inner_->GetRun(run_id); }
  Result<std::vector<CellRecord>> GetCells(std::int64_t run_id, const CellQuery& query) override {
    return inner_->GetCells(run_id, query);
  }
  Result<std::set<std::string>> FinishedCellIds(std::int64_t run_id) override;
  Status SetTag(std::int64_t run_id, const std::string& tag) override { return inner_->SetTag(run_id, tag); }
  Status DeleteTag(const std::string& tag) override { return inner_->DeleteTag(tag); }
  Status DeleteRun(std::int64_t run_id) override { return inner_->DeleteRun(run_id); }
  Result<std::int64_t> ResolveRunName(const std::string& name) override {
    return inner_->ResolveRunName(name);
  }
  Result<std::vector<std::pair<RunRecord, CellRecord>>> CellHistory(const std::string& key) override {
    return inner_->CellHistory(key);
  }
  std::string Describe() const override { return inner_->Describe(); }
  Result<std::optional<RunLockOwner>> TryLockRun(std::int64_t run_id, const RunLockOwner& owner) override {
    return inner_->TryLockRun(run_id, owner);
  }
  Status UnlockRun(std::int64_t run_id) override { return inner_->UnlockRun(run_id); }

  // The spill files of `run_id` waiting to be stored, sorted by name.
  std::vector<std::string> SpilledFiles(std::int64_t run_id) const;
  const std::string& spill_dir() const { return spill_dir_; }
  ResultStore& inner() { return *inner_; }

 private:
  Status Replay(std::int64_t run_id);
  std::string RunDir(std::int64_t run_id) const;

  std::unique_ptr<ResultStore> inner_;
  std::string spill_dir_;
};

// The folder for the spilled cells of the store at `location`: under $DLBENCH_SPILL_DIR, else
// $XDG_STATE_HOME/dlbench/spill, else $HOME/.local/state/dlbench/spill, else
// /tmp/dlbench-spill-<uid>; one subfolder per store, named from its location without password or
// query (postgresql://alice@db:5432/bench -> postgresql_alice_db_5432_bench), so `--resume` on
// the same machine with the same server finds them whatever else the URL carries.
std::string DefaultSpillDir(std::string_view location);

// A cell with everything it carries (metrics, steps, series) as JSON and back, exactly: the spill
// file format (docs/storage.md). Non-finite doubles are the strings "NaN", "Infinity" and
// "-Infinity". kStore for JSON that is not such a cell.
nlohmann::json CellToJson(const CellRecord& cell);
Result<CellRecord> CellFromJson(const nlohmann::json& json);

}  // namespace dlbench::store
