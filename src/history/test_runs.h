// Test-only helpers: synthetic runs whose steps are drawn the way the null runner draws them
// (step_ms times a normal multiplier with mean 1 and sd jitter_pct / 100), and a SQLite store in a
// fresh temporary directory to hold them.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "record/metrics.h"
#include "stats/random.h"
#include "store/result_store.h"

namespace dlbench::history::testing {

struct CellSpec {
  std::string model = "a";
  double step_ms = 2.0;
  double jitter_pct = 1.0;
  int measured_steps = 300;
  int warmup_steps = 5;  // drawn 3x slower, as a real warm-up, and cut by warmup_steps
  std::uint32_t samples = 8;
  std::uint64_t seed = 1;
  int repetition = 0;
  record::Outcome outcome = record::Outcome::kOk;
  double energy_per_sample_j = 0;  // stored as a metric when > 0
  bool step_ms_in_params = false;  // step_ms as a cell parameter (part of the key), as the null runner's
  record::Verdict verdict = record::Verdict::kValid;
  std::vector<std::string> verdict_reasons;
};

inline nlohmann::json ParamsOf(const CellSpec& spec) {
  nlohmann::json params = {{"model", spec.model}};
  if (spec.step_ms_in_params) params["step_ms"] = spec.step_ms;
  return params;
}

inline std::string KeyOf(const CellSpec& spec) {
  const nlohmann::json json = ParamsOf(spec);
  std::map<std::string, config::Value> params;
  for (auto it = json.begin(); it != json.end(); ++it) params[it.key()] = it.value();
  return plan::CellKey(params);
}

inline record::CellRecord MakeCell(const CellSpec& spec) {
  record::CellRecord cell;
  cell.key = KeyOf(spec);
  cell.cell_id = cell.key + "#r" + std::to_string(spec.repetition);
  cell.label = spec.model;
  cell.params = ParamsOf(spec);
  cell.repetition = spec.repetition;
  cell.seed = spec.seed;
  cell.outcome = spec.outcome;
  cell.verdict = spec.verdict;
  for (const auto& r : spec.verdict_reasons) cell.verdict_reasons.push_back(r);
  cell.window = record::MeasuredWindow{spec.warmup_steps, spec.measured_steps};
  stats::Random rng(spec.seed);
  // A large CLOCK_MONOTONIC-like offset, as real records have.
  std::int64_t t = std::int64_t{1'200'000'000'000} + static_cast<std::int64_t>(spec.seed % 1000) * 1'000'000;
  const int total = spec.outcome == record::Outcome::kOk ? spec.warmup_steps + spec.measured_steps : 3;
  double sum_ns = 0;
  std::int64_t window_start = 0, window_end = 0;
  for (int i = 0; i < total; ++i) {
    double m = 1.0 + spec.jitter_pct / 100.0 * rng.Normal();
    if (i < spec.warmup_steps) m *= 3.0;
    const auto d = static_cast<std::int64_t>(spec.step_ms * 1e6 * m);
    record::StepRow row;
    row.record.start_ns = t;
    row.record.end_ns = t + d;
    row.record.samples = spec.samples;
    cell.steps.push_back(row);
    if (i >= spec.warmup_steps) sum_ns += static_cast<double>(d);
    if (i == spec.warmup_steps) window_start = t;
    window_end = t + d;
    t += d + 1000;
  }
  if (spec.outcome == record::Outcome::kOk) {
    const double mean_ns = sum_ns / spec.measured_steps;
    record::SetMetric(cell, record::metric::kStepTimeMeanNs, mean_ns);
    // As the orchestrator stores it: samples over the measured window (first start to last end).
    record::SetMetric(cell, record::metric::kSamplesPerS,
                      static_cast<double>(spec.samples) * spec.measured_steps /
                          (static_cast<double>(window_end - window_start) * 1e-9));
    if (spec.energy_per_sample_j > 0)
      record::SetMetric(cell, record::metric::kEnergyPerSampleJ, spec.energy_per_sample_j);
  }
  return cell;
}

// A SQLite store in a new temporary directory, removed with the object.
class TempStore {
 public:
  TempStore() {
    char tmpl[] = "/tmp/dlbench-history-XXXXXX";
    const char* dir = mkdtemp(tmpl);
    EXPECT_NE(dir, nullptr);
    dir_ = dir != nullptr ? dir : "/tmp";
    auto opened = store::OpenSqliteStore(dir_ + "/dlbench.db");
    EXPECT_TRUE(opened.ok()) << (opened.ok() ? "" : opened.error().message);
    if (opened.ok()) store_ = std::move(opened).value();
  }
  ~TempStore() {
    store_.reset();
    for (const char* suffix : {"/dlbench.db", "/dlbench.db-wal", "/dlbench.db-shm"}) {
      std::remove((dir_ + suffix).c_str());
    }
    rmdir(dir_.c_str());
  }
  store::ResultStore& store() { return *store_; }

  // Stores a completed run holding these cells; returns its id.
  std::int64_t AddRun(const std::vector<CellSpec>& cells,
                      const nlohmann::json& environment = {{"os", "linux"}},
                      std::int64_t started_wall_ns = 0) {
    record::RunRecord run;
    run.name = "synthetic";
    run.status = record::RunStatus::kCompleted;
    run.environment = environment;
    run.environment_hash = environment.dump();
    run.started_wall_ns = started_wall_ns != 0 ? started_wall_ns : next_start_ns_;
    next_start_ns_ = run.started_wall_ns + std::int64_t{86'400} * 1'000'000'000;
    run.total_cells = static_cast<int>(cells.size());
    auto id = store_->BeginRun(run);
    EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error().message);
    if (!id.ok()) return 0;
    int index = 0;
    for (const CellSpec& spec : cells) {
      record::CellRecord cell = MakeCell(spec);
      cell.run_id = *id;
      cell.index = index++;
      const Status put = store_->PutCell(cell);
      EXPECT_TRUE(put.ok()) << (put.ok() ? "" : put.error().message);
    }
    return *id;
  }

 private:
  std::string dir_;
  std::unique_ptr<store::ResultStore> store_;
  std::int64_t next_start_ns_ = std::int64_t{1'767'225'600} * 1'000'000'000;  // 2026-01-01T00:00:00Z
};

}  // namespace dlbench::history::testing
