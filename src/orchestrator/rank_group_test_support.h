// The test fixture of the rank-group tests (rank_group_test.cc: one host's ranks;
// rank_group_remote_test.cc: ranks whose task is on another host, stood in for by the test), with
// dlbench-null ranks in virtual time. In a named namespace: both files' TEST_Fs share this class.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "orchestrator/cell_runner.h"
#include "orchestrator/rank_group.h"
#include "orchestrator/rank_link.h"

namespace dlbench::orchestrator::rank_group_testing {

class RankGroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("dlbench_rank_group_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  CellRunOptions Options() const {
    CellRunOptions o;
    auto runner = ResolveRunner(config::RunnerSpec{"null", {}}, DLBENCH_BIN_DIR);
    EXPECT_TRUE(runner.ok());
    o.runner = *runner;
    o.log_dir = dir_.string();
    o.timeout_s = 20;
    o.measure.min_steps = 20;
    o.measure.min_time_s = 0.05;
    o.measure.max_time_s = 2.0;
    o.measure.target_rel_ci = 0.05;
    o.stop_grace_s = 0.5;
    o.exit_grace_s = 0.5;
    return o;
  }

  // Rank 0 measures long enough (500 steps at 10x real time: 50 ms) for a fault at another rank's
  // first step to happen before rank 0's STOP reaches it.
  CellRunOptions SlowOptions() const {
    CellRunOptions o = Options();
    o.measure.min_steps = 500;
    return o;
  }

  record::CellRecord Run(nlohmann::json params, const CellRunOptions& o) const {
    plan::Cell cell;
    cell.id = "c#r0";
    cell.key = "c";
    cell.seed = 7;
    params["virtual_time"] = true;
    params["virtual_speedup"] = 10.0;
    params["step_ms"] = 1.0;
    for (auto& [k, v] : params.items()) cell.params[k] = v;
    return RunCell(cell, o);
  }

  // Rank 0's settings of a group of two on the loopback at a free port, which a fake task joins as
  // rank 1; false (with the reason) when no port was free.
  static ::testing::AssertionResult TwoRankGroup(GroupSettings& s) {
    auto port = FreeTcpPort();
    if (!port.ok()) return ::testing::AssertionFailure() << port.error().message;
    s.addr = "127.0.0.1";
    s.port = *port;
    s.world_size = 2;
    s.plan_hash = "p";
    s.join_timeout_s = 10;
    return ::testing::AssertionSuccess();
  }

  std::filesystem::path dir_;
};

// A ddp cell of two ranks of the null runner in virtual time (10x), `key` at plan position `index`.
inline plan::Cell DdpCell(const std::string& key, int index) {
  plan::Cell c;
  c.id = key + "#r0";
  c.key = key;
  c.label = key;
  c.index = index;
  c.seed = 7;
  const nlohmann::json params = {{"strategy", "ddp"},
                                 {"world_size", 2},
                                 {"virtual_time", true},
                                 {"virtual_speedup", 10.0},
                                 {"step_ms", 1.0}};
  for (const auto& [k, v] : params.items()) c.params[k] = v;
  return c;
}

// How many steps each rank stored.
inline std::map<std::uint32_t, std::size_t> StepsPerRank(const record::CellRecord& rec) {
  std::map<std::uint32_t, std::size_t> n;
  for (const auto& row : rec.steps) ++n[row.rank];
  return n;
}

}  // namespace dlbench::orchestrator::rank_group_testing
