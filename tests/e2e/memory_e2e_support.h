// What tests/e2e/memory_e2e_test.cc and memory_search_e2e_test.cc share: dlbench-null's memory
// model (1 GiB + 256 MiB per sample), a matrix head with a few virtual steps a cell, and the calls
// that run a matrix through the real dlbench and read its cells back.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "e2e_util.h"
#include "orchestrator/cgroup_v2.h"

namespace dlbench::e2e::memory_testing {

inline constexpr std::int64_t kGiB = std::int64_t{1} << 30;
inline constexpr std::int64_t kMiB = std::int64_t{1} << 20;

// The measurement is not what these tests are about: a few virtual steps a cell.
inline constexpr char kHead[] = R"(runner: null
measure: {min_steps: 3, max_steps: 6, min_time_s: 0, max_time_s: 30, min_warmup_steps: 1}
)";

inline std::string Model() {
  return "  memory_base_bytes: 1073741824\n  memory_per_sample_bytes: 268435456\n";
}

inline double Metric(const nlohmann::json& cell, const std::string& name) {
  if (!cell.at("metrics").contains(name)) {
    ADD_FAILURE() << "no metric " << name << " in " << cell.at("metrics").dump();
    return NAN;
  }
  return cell.at("metrics").at(name).at("value").get<double>();
}

inline nlohmann::json Cells(const TempDir& dir, const std::string& db) {
  auto exported = Dlbench({"export", "latest", "--format", "json"}, dir, db);
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
  return nlohmann::json::parse(exported.out).at("cells");
}

// Each cell of `body` run as `dlbench run` and exported, by batch_size.
inline std::map<std::int64_t, nlohmann::json> RunByBatch(const TempDir& dir, const std::string& name,
                                                         const std::string& body) {
  const std::string matrix = dir / (name + ".yaml"), db = dir / (name + ".db");
  WriteText(matrix, std::string(kHead) + body);
  auto run = Dlbench({"run", matrix}, dir, db);
  EXPECT_EQ(run.err.find("error:"), std::string::npos) << run.out << run.err;
  std::map<std::int64_t, nlohmann::json> cells;
  for (const nlohmann::json& c : Cells(dir, db)) {
    const nlohmann::json& bs = c.at("params").at("batch_size");
    cells[bs.is_string() ? -1 : bs.get<std::int64_t>()] = c;
  }
  return cells;
}

// Checks a cpu cell's extras.memory_cap against what this host offers and returns the mechanism
// that applied: cgroup v2's memory.max where FindCgroupParent finds a usable parent (then the cell
// names its cgroup, which is gone after the cell), else RLIMIT_DATA with the same reason it gives.
inline std::string CheckCpuCapRecord(const nlohmann::json& cell, std::int64_t bytes) {
  const nlohmann::json& cap = cell.at("extras").at("memory_cap");
  EXPECT_EQ(cap.at("bytes"), bytes) << cap.dump();
  // Read-only, as `plan` asks: this test process must not move itself or write to its cgroup.
  const orchestrator::CgroupParent parent = orchestrator::FindCgroupParent(
      orchestrator::SystemCgroupSources(), orchestrator::CgroupCheck::kReadOnly);
  std::string mechanism = cap.value("mechanism", "");
  if (parent.path.empty()) {
    EXPECT_EQ(mechanism, "RLIMIT_DATA") << cap.dump();
    if (parent.why_not.rfind("cannot give ", 0) == 0) {
      // The prediction of rule 5 words the refusal differently from the kernel's EBUSY.
      EXPECT_EQ(cap.value("cgroup_v2", "").rfind("not used: cannot give ", 0), 0u) << cap.dump();
    } else {
      EXPECT_EQ(cap.value("cgroup_v2", ""), "not used: " + parent.why_not) << cap.dump();
    }
  } else {
    EXPECT_EQ(mechanism, "cgroup_v2_memory_max") << cap.dump();
    EXPECT_EQ(cap.value("cgroup_parent_from", ""), parent.source) << cap.dump();
    const std::string cgroup = cap.value("cgroup", "");
    EXPECT_EQ(cgroup.rfind(parent.path + "/dlbench-", 0), 0u) << cap.dump();
    EXPECT_FALSE(std::filesystem::exists(cgroup)) << "the cell's cgroup is removed after it";
  }
  return mechanism;
}

}  // namespace dlbench::e2e::memory_testing
