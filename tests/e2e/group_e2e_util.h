// Shared by the group-run e2e tests (slurm_group*_e2e_test.cc, torchrun_e2e_test.cc): `dlbench run`
// under a launcher of several tasks without --shard runs the matrix once, rank 0 storing it
// (docs/distributed.md#several-hosts). The matrices, and the checks of what rank 0 stored.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e_util.h"
#include "store/result_store.h"

namespace dlbench::e2e {

// A group run's matrix (no --shard under a launcher of 2 tasks): a non-ddp cell and a ddp cell of
// world_size 2, null runners in virtual time. Null ranks do not wait for each other, so rank 0
// measures 1,000 steps (100 ms at 10x real time) for rank 1, started a moment later on the other
// task, to step before rank 0's STOP reaches it.
inline constexpr char kGroupMatrix[] = R"(name: group
runner: null
matrix:
  model: [a]
  strategy: [none, ddp]
  world_size: [1, 2]
  step_ms: 1
  virtual_time: true
  virtual_speedup: 10
exclude:
  - strategy: none
    world_size: 2
  - strategy: ddp
    world_size: 1
measure:
  min_steps: 1000
  min_time_s: 0.05
  max_time_s: 5
)";

// A group run's matrix of null ranks in virtual time whose rank 1 fails (`inject`, one fault or
// a list) at its first step: a ddp cell of world_size 2 (model a; rank 0 measures 500 steps
// first: 50 ms at 10x real time), then a non-ddp cell (model b). `head` adds top-level lines
// after the runner's, `exclude` more excludes (each "  - key: value\n    key: value\n").
inline std::string GroupFailureMatrix(const std::string& name, const std::string& inject,
                                      const std::string& head = "", const std::string& exclude = "") {
  return "name: " + name + "\nrunner: null\n" + head + R"(matrix:
  model: [a, b]
  strategy: [ddp, none]
  world_size: [2, 1]
  step_ms: 1
  virtual_time: true
  virtual_speedup: 10
  inject: )" +
         inject + R"(
  inject_rank: 1
  inject_at_step: 1
exclude:
  - model: a
    strategy: none
  - model: b
    strategy: ddp
  - strategy: none
    world_size: 2
  - strategy: ddp
    world_size: 1
)" + exclude +
         R"(measure:
  min_steps: 500
  min_time_s: 0.05
  max_time_s: 2
)";
}

// A ddp cell whose rank 1 crashes at its first step, then a non-ddp cell.
inline const std::string kGroupCrashMatrix = GroupFailureMatrix("group-crash", "crash");

// A ddp cell whose rank 1 hangs at its first step (stops stepping and answering, ignores SIGTERM)
// under a 3 s cell timeout (rank 0 needs far less): rank 0 ends by itself, rank 1's task kills its
// runner at the timeout. Then a non-ddp cell.
inline const std::string kGroupHangMatrix = GroupFailureMatrix("group-hang", "hang", "timeout_s: 3\n");

// Two ddp cells whose rank 1 exits early at its first step: with exit code 3, and with exit code 0
// after closing its protocol output (a clean exit mid-cell, no DONE). Then a non-ddp cell.
inline const std::string kGroupExitMatrix =
    GroupFailureMatrix("group-exit", "[exit, close_protocol_exit, none]", "",
                       "  - strategy: ddp\n    inject: none\n  - strategy: none\n    inject: exit\n"
                       "  - strategy: none\n    inject: close_protocol_exit\n");

// For killing rank 1's task mid-cell: a ddp cell whose rank 1 hangs at its first step (so only
// its task, never the runner itself, can end it), a second ddp cell that needs the lost task, and
// a non-ddp cell.
inline constexpr char kGroupLostTaskMatrix[] = R"(name: group-lost-task
runner: null
timeout_s: 30
matrix:
  model: [a, b, c]
  strategy: [ddp, none]
  world_size: [2, 1]
  inject: [hang, none]
  step_ms: 1
  virtual_time: true
  virtual_speedup: 10
  inject_rank: 1
  inject_at_step: 1
exclude:
  - model: c
    strategy: ddp
  - model: a
    strategy: none
  - model: b
    strategy: none
  - strategy: none
    world_size: 2
  - strategy: ddp
    world_size: 1
  - model: a
    inject: none
  - model: b
    inject: hang
  - model: c
    inject: hang
measure:
  min_steps: 500
  min_time_s: 0.05
  max_time_s: 2
)";

// For resuming a group run: three ddp cells of about a second each (virtual time at real speed),
// so that a test can interrupt rank 0 while the second runs; a first run given `--only model!=c`
// never runs the third.
inline constexpr char kGroupResumeMatrix[] = R"(name: group-resume
runner: null
matrix:
  model: [a, b, c]
  strategy: ddp
  world_size: 2
  step_ms: 1
  virtual_time: true
  virtual_speedup: 1
measure:
  min_steps: 10
  min_time_s: 1
  max_time_s: 2
)";

// Whether `pid` is a live process (a zombie counts as gone).
inline bool ProcessLives(std::int64_t pid) {
  if (pid <= 0) return false;
  auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return false;
  const auto close = stat->rfind(')');
  return close == std::string::npos || stat->substr(close + 2, 1) != "Z";
}

// The store of a group run of kGroupMatrix: one completed run by rank 0, its launcher `launcher`
// with the rank from `rank_from` and the group's port from `port_from`; the non-ddp cell once with
// rank 0's steps, the ddp cell with both ranks' steps, rank 1 from the other task.
inline void CheckGroupRun(const std::string& db, const std::string& launcher, const std::string& rank_from,
                          const std::string& port_from) {
  auto store = store::OpenSqliteStore(db);
  ASSERT_TRUE(store.ok()) << db << ": " << store.error().message;
  auto runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u) << db;
  auto run = (*store)->GetRun(runs->front().id);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->status, record::RunStatus::kCompleted);
  EXPECT_TRUE(run->selection.shard.empty()) << "a group run is no shard";
  EXPECT_TRUE(run->sweep.empty());
  const nlohmann::json& l = run->environment["launcher"];
  EXPECT_EQ(l["launcher"], launcher) << l.dump();
  EXPECT_EQ(l["rank"], (nlohmann::json{{"value", 0}, {"from", rank_from}})) << l.dump();
  EXPECT_EQ(l["group"]["tasks"], 2) << l.dump();
  EXPECT_EQ(l["group"]["port"]["from"], port_from) << l.dump();
  store::CellQuery with_steps;
  with_steps.with_steps = true;
  auto cells = (*store)->GetCells(run->id, with_steps);
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ(cells->size(), 2u);
  for (const record::CellRecord& c : *cells) {
    EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
    std::map<std::uint32_t, std::size_t> per_rank;
    for (const record::StepRow& row : c.steps) ++per_rank[row.rank];
    if (c.params.value("strategy", "") == "ddp") {
      EXPECT_EQ(per_rank.size(), 2u) << c.label;
      EXPECT_GT(per_rank[1], 0u) << c.label;
      const nlohmann::json& ddp = c.extras["ddp"];
      EXPECT_EQ(ddp["launcher"], "launcher tasks: rank r runs on task r") << ddp.dump();
      EXPECT_EQ(ddp["rendezvous"].get<std::string>().rfind("tcp://", 0), 0u) << ddp.dump();
      ASSERT_EQ(ddp["ranks"].size(), 2u) << ddp.dump();
      EXPECT_EQ(ddp["ranks"][1]["outcome"], "ok") << ddp.dump();
      EXPECT_EQ(ddp["ranks"][1]["steps"], per_rank[1]) << ddp.dump();
      EXPECT_TRUE(ddp["ranks"][1].contains("clock_offset_ns")) << ddp.dump();
      // Rank 1's steps, on rank 0's clock, overlap rank 0's.
      std::int64_t first[2] = {INT64_MAX, INT64_MAX}, last[2] = {0, 0};
      for (const record::StepRow& row : c.steps) {
        first[row.rank] = std::min(first[row.rank], row.record.start_ns);
        last[row.rank] = std::max(last[row.rank], row.record.end_ns);
      }
      EXPECT_LT(first[1], last[0]);
      EXPECT_LT(first[0], last[1]);
      for (const auto& rank : ddp["ranks"])
        EXPECT_FALSE(ProcessLives(rank["pid"].get<std::int64_t>())) << rank.dump();
    } else {
      EXPECT_EQ(per_rank.size(), 1u) << c.label << ": a non-ddp cell runs once, on rank 0";
      EXPECT_FALSE(c.extras.contains("ddp"));
    }
  }
}

// The store of a group run of kGroupCrashMatrix: the ddp cell crashed naming rank 1, whose task
// reported it; the next cell ran; no rank is left running.
inline void CheckCrashedRemoteRank(const std::string& db) {
  auto store = store::OpenSqliteStore(db);
  ASSERT_TRUE(store.ok()) << db << ": " << store.error().message;
  auto runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  auto cells = (*store)->GetCells(runs->front().id, store::CellQuery{});
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ(cells->size(), 2u);
  for (const record::CellRecord& c : *cells) {
    if (c.params.value("strategy", "") == "ddp") {
      EXPECT_EQ(c.outcome, record::Outcome::kCrashed) << c.message;
      EXPECT_EQ(c.message.rfind("rank 1 of 2: ", 0), 0u) << c.message;
      const nlohmann::json& ranks = c.extras["ddp"]["ranks"];
      ASSERT_EQ(ranks.size(), 2u);
      EXPECT_EQ(ranks[1]["outcome"], "crashed") << ranks.dump();
      for (const auto& rank : ranks)
        EXPECT_FALSE(ProcessLives(rank["pid"].get<std::int64_t>())) << rank.dump();
    } else {
      EXPECT_EQ(c.outcome, record::Outcome::kOk) << "the next cell still runs: " << c.message;
    }
  }
}

// What one cell of a group run with a failing rank 1 must have ended as.
struct ExpectedGroupCell {
  std::string model;
  record::Outcome outcome;
  std::string message_part;   // in the cell's message, after "rank 1 of 2: " for a ddp cell
  bool ranks_started = true;  // a ddp cell's ranks started (extras.ddp lists them)
};

// The store of a group run whose rank 1 fails: one completed run (rank 0 finished it), each cell
// as `expected` says (a ddp cell named after rank 1), and none of the ranks rank 0 knows of alive.
inline void CheckFailingRemoteRank(const std::string& db, const std::vector<ExpectedGroupCell>& expected) {
  auto store = store::OpenSqliteStore(db);
  ASSERT_TRUE(store.ok()) << db << ": " << store.error().message;
  auto runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  auto run = (*store)->GetRun(runs->front().id);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->status, record::RunStatus::kCompleted) << "rank 0 finishes the run";
  auto cells = (*store)->GetCells(runs->front().id, store::CellQuery{});
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ(cells->size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const record::CellRecord& c = (*cells)[i];
    const ExpectedGroupCell& e = expected[i];
    EXPECT_EQ(c.params.value("model", ""), e.model) << c.label;
    EXPECT_EQ(c.outcome, e.outcome) << c.label << ": " << c.message;
    EXPECT_NE(c.message.find(e.message_part), std::string::npos) << c.label << ": " << c.message;
    if (c.params.value("strategy", "") != "ddp") continue;
    EXPECT_EQ(c.message.rfind("rank 1 of 2: ", 0), 0u) << c.label << ": " << c.message;
    EXPECT_EQ(c.extras.contains("ddp"), e.ranks_started) << c.label << ": " << c.extras.dump();
    if (!e.ranks_started) continue;
    const nlohmann::json& ranks = c.extras["ddp"]["ranks"];
    ASSERT_EQ(ranks.size(), 2u) << c.label;
    EXPECT_EQ(ranks[1]["outcome"], std::string(record::Name(e.outcome))) << ranks.dump();
    for (const auto& rank : ranks)
      EXPECT_FALSE(ProcessLives(rank["pid"].get<std::int64_t>())) << c.label << ": " << rank.dump();
  }
}

}  // namespace dlbench::e2e
