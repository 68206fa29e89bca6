// An in-memory ResultStore for the report module's tests: what a store returns, without SQLite.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "store/result_store.h"

namespace dlbench::report::testing {

class MemoryStore final : public store::ResultStore {
 public:
  Result<std::int64_t> BeginRun(const record::RunRecord& run) override {
    record::RunRecord r = run;
    r.id = static_cast<std::int64_t>(runs_.size()) + 1;
    runs_[r.id] = r;
    return r.id;
  }
  Status PutCell(const record::CellRecord& cell) override {
    auto& cells = cells_[cell.run_id];
    cells.erase(
        std::remove_if(cells.begin(), cells.end(), [&](const auto& c) { return c.cell_id == cell.cell_id; }),
        cells.end());
    cells.push_back(cell);
    return Status::Ok();
  }
  Status SetRunStatus(std::int64_t run_id, record::RunStatus status,
                      std::optional<std::int64_t> finished) override {
    runs_[run_id].status = status;
    runs_[run_id].finished_wall_ns = finished;
    return Status::Ok();
  }
  Result<std::vector<record::RunRecord>> ListRuns() override {
    if (fail_reads) return MakeError(ErrorKind::kStore, "test store: reads fail");
    std::vector<record::RunRecord> out;
    for (const auto& [id, r] : runs_) out.push_back(r);
    return out;
  }
  Result<record::RunRecord> GetRun(std::int64_t run_id) override {
    auto it = runs_.find(run_id);
    if (it == runs_.end()) return MakeError(ErrorKind::kNotFound, "no run " + std::to_string(run_id));
    return it->second;
  }
  Result<std::vector<record::CellRecord>> GetCells(std::int64_t run_id,
                                                   const store::CellQuery& query) override {
    std::vector<record::CellRecord> out;
    for (auto c : cells_[run_id]) {
      if (query.index && c.index != *query.index) continue;
      if (!query.with_steps) c.steps.clear();
      if (!query.with_series) c.series.clear();
      out.push_back(std::move(c));
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
    return out;
  }
  Result<std::optional<store::RunLockOwner>> TryLockRun(std::int64_t run_id,
                                                        const store::RunLockOwner&) override {
    locked_.insert(run_id);
    return std::optional<store::RunLockOwner>();
  }
  Status UnlockRun(std::int64_t run_id) override {
    locked_.erase(run_id);
    return Status::Ok();
  }
  Result<std::set<std::string>> FinishedCellIds(std::int64_t run_id) override {
    std::set<std::string> out;
    for (const auto& c : cells_[run_id]) out.insert(c.cell_id);
    return out;
  }
  Status SetTag(std::int64_t run_id, const std::string& tag) override {
    tags_[tag] = run_id;
    return Status::Ok();
  }
  Status DeleteTag(const std::string& tag) override {
    if (tags_.erase(tag) == 0) return MakeError(ErrorKind::kNotFound, "no run is tagged '" + tag + "'");
    return Status::Ok();
  }
  Status DeleteRun(std::int64_t) override {
    return MakeError(ErrorKind::kUnsupported, "the report tests' memory store deletes no runs");
  }
  Result<std::int64_t> ResolveRunName(const std::string& ref) override {
    if (ref == "latest" && !runs_.empty()) return runs_.rbegin()->first;
    if (tags_.count(ref)) return tags_[ref];
    return MakeError(ErrorKind::kNotFound, "no run " + ref);
  }
  Result<std::vector<std::pair<record::RunRecord, record::CellRecord>>> CellHistory(
      const std::string& key) override {
    std::vector<std::pair<record::RunRecord, record::CellRecord>> out;
    for (const auto& [id, cells] : cells_) {
      for (const auto& c : cells) {
        if (c.key == key) out.emplace_back(runs_[id], c);
      }
    }
    return out;
  }
  std::string Describe() const override { return "memory:"; }

  bool fail_reads = false;

 private:
  std::map<std::int64_t, record::RunRecord> runs_;
  std::map<std::int64_t, std::vector<record::CellRecord>> cells_;
  std::map<std::string, std::int64_t> tags_;
  std::set<std::int64_t> locked_;
};

// A cell with the usual parameters and one throughput metric.
inline record::CellRecord MakeCell(std::int64_t run_id, int index, const std::string& model, int batch,
                                   double samples_per_s, const std::string& scenario = "train") {
  record::CellRecord c;
  c.run_id = run_id;
  c.index = index;
  c.params = {{"model", model},      {"scenario", scenario}, {"batch_size", batch},
              {"precision", "fp32"}, {"device", "cpu"},      {"strategy", "none"}};
  c.key = "batch_size=" + std::to_string(batch) + ",device=cpu,model=" + model +
          ",precision=fp32,scenario=" + scenario + ",strategy=none";
  c.cell_id = c.key + "#r0";
  c.label = model + " " + scenario + " bs=" + std::to_string(batch);
  c.outcome = record::Outcome::kOk;
  c.verdict = record::Verdict::kValid;
  c.metrics = {{"samples_per_s", samples_per_s, "1/s"}};
  return c;
}

}  // namespace dlbench::report::testing
