// A boundary search's probes sharing runner processes (boundary_probe_process: shared) and aimed by
// their peak memory (boundary_guide: peak_memory), through the real dlbench binary and real
// dlbench-null processes on a virtual clock (docs/memory.md "Probes in one process"). dlbench-null's
// memory model: 1 GiB + 256 MiB per sample, so under a 4 GiB cap batch 12 fits and 13 does not; its
// modelled `oom` allocates nothing and says process_usable, so the process goes on after it.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "e2e_util.h"

namespace dlbench::e2e {
namespace {

constexpr char kHead[] = R"(runner: null
measure: {min_steps: 3, max_steps: 6, min_time_s: 0, max_time_s: 30, min_warmup_steps: 1}
matrix:
  virtual_time: true
  memory_base_bytes: 1073741824
  memory_cap: 4GiB
  batch_size: max
  boundary_max: 16
)";

nlohmann::json Cells(const TempDir& dir, const std::string& db) {
  auto exported = Dlbench({"export", "latest", "--format", "json"}, dir, db);
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
  return nlohmann::json::parse(exported.out).at("cells");
}

std::vector<std::int64_t> Probed(const nlohmann::json& cell) {
  std::vector<std::int64_t> values;
  for (const nlohmann::json& p : cell.at("extras").at("boundary_search").at("probes")) {
    values.push_back(p.at("batch_size"));
  }
  return values;
}

// Whether the cell's cap is a cgroup of its own (then its process serves no other cell).
bool CapIsCgroup(const nlohmann::json& cell) {
  return cell.at("extras").at("memory_cap").value("mechanism", "") == "cgroup_v2_memory_max";
}

// The four ways to search find what the fresh bisection finds (12, first failing 13). Guided by the
// peaks, the probes are 1, 2 (1.25 and 1.5 GiB), then where their line meets 4 GiB (12) and one above
// (13): 4 probes for bisection's 8. Shared, every probe and the measured run are one process, the
// oom at 13 included; fresh, each probe has a process of its own.
TEST(BoundaryProcessE2E, SharedAndGuidedSearchesFindWhatFreshBisectionFinds) {
  TempDir dir("boundary_process");
  const std::string matrix = dir / "m.yaml", db = dir / "m.db";
  WriteText(matrix, std::string(kHead) +
                        "  memory_per_sample_bytes: 268435456\n"
                        "  boundary_probe_process: [fresh, shared]\n  boundary_guide: [none, peak_memory]\n");
  auto run = Dlbench({"run", matrix}, dir, db);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  std::map<std::tuple<std::string, std::string>, nlohmann::json> by;
  for (const nlohmann::json& c : Cells(dir, db)) {
    by[{c.at("params").at("boundary_probe_process"), c.at("params").at("boundary_guide")}] = c;
  }
  ASSERT_EQ(by.size(), 4u);
  for (const auto& [how, cell] : by) {
    const std::string name = std::get<0>(how) + "/" + std::get<1>(how);
    EXPECT_EQ(cell.at("outcome"), "ok") << name << ": " << cell.at("message");
    const nlohmann::json& search = cell.at("extras").at("boundary_search");
    EXPECT_EQ(search.at("found"), 12) << name;
    EXPECT_EQ(search.at("first_failing"), 13) << name;
    EXPECT_EQ(search.at("end"), "converged") << name;
    EXPECT_EQ(search.at("probe_process"), std::get<0>(how)) << name;
    EXPECT_EQ(cell.at("effective").at("batch_size"), 12) << name;
    const bool guided = std::get<1>(how) == "peak_memory";
    EXPECT_EQ(Probed(cell), guided ? (std::vector<std::int64_t>{1, 2, 12, 13})
                                   : (std::vector<std::int64_t>{1, 2, 4, 8, 16, 12, 14, 13}))
        << name;
    if (guided) {
      EXPECT_EQ(search.at("guide").at("limit_bytes"), 4.0 * (1 << 30)) << name;
    }

    std::set<std::int64_t> pids;
    std::vector<std::int64_t> order;
    for (const nlohmann::json& p : search.at("probes")) {
      ASSERT_TRUE(p.at("process").is_object()) << name << ": " << p.dump();
      pids.insert(p.at("process").at("pid").get<std::int64_t>());
      order.push_back(p.at("process").at("cell_of_process").get<std::int64_t>());
    }
    const std::size_t n = search.at("probes").size();
    if (std::get<0>(how) == "fresh" || CapIsCgroup(cell)) {
      EXPECT_EQ(pids.size(), n) << name;
      EXPECT_FALSE(cell.at("extras").contains("runner_process") &&
                   cell.at("extras").at("runner_process").contains("cell_of_process") &&
                   cell.at("extras").at("runner_process").at("cell_of_process") != 1)
          << name;
    } else {
      EXPECT_EQ(pids.size(), 1u) << name;
      std::vector<std::int64_t> expected(n);
      for (std::size_t i = 0; i < n; ++i) expected[i] = static_cast<std::int64_t>(i) + 1;
      EXPECT_EQ(order, expected) << name;
      // The measured run is the process's next cell, under the cap the first probe applied.
      const nlohmann::json& process = cell.at("extras").at("runner_process");
      EXPECT_EQ(process.at("pid").get<std::int64_t>(), *pids.begin()) << name;
      EXPECT_EQ(process.at("cell_of_process"), n + 1) << name;
      EXPECT_EQ(cell.at("extras").at("memory_cap").at("bytes"), std::int64_t{4} << 30) << name;
    }
  }
}

// Under --runner-reuse, consecutive shared searches of one process key go on in one process: two
// searches (256 and 512 MiB per sample: 12 and 6 fit) and their measured runs, one start-up.
TEST(BoundaryProcessE2E, UnderRunnerReuseSharedSearchesShareOneProcess) {
  TempDir dir("boundary_process_reuse");
  const std::string matrix = dir / "m.yaml", db = dir / "m.db";
  WriteText(matrix, std::string(kHead) +
                        "  memory_per_sample_bytes: [268435456, 536870912]\n"
                        "  boundary_probe_process: shared\n  boundary_guide: peak_memory\n");
  auto run = Dlbench({"run", matrix, "--runner-reuse"}, dir, db);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const nlohmann::json cells = Cells(dir, db);
  ASSERT_EQ(cells.size(), 2u);
  if (CapIsCgroup(cells[0])) GTEST_SKIP() << "the cap is a cgroup of each process here: nothing is shared";
  std::set<std::int64_t> pids;
  std::map<std::int64_t, std::int64_t> found;  // per-sample bytes -> batch
  for (const nlohmann::json& c : cells) {
    const nlohmann::json& search = c.at("extras").at("boundary_search");
    found[c.at("params").at("memory_per_sample_bytes").get<std::int64_t>()] = search.at("found");
    for (const nlohmann::json& p : search.at("probes"))
      pids.insert(p.at("process").at("pid").get<std::int64_t>());
    pids.insert(c.at("extras").at("runner_process").at("pid").get<std::int64_t>());
  }
  EXPECT_EQ(found, (std::map<std::int64_t, std::int64_t>{{268435456, 12}, {536870912, 6}}));
  EXPECT_EQ(pids.size(), 1u);
}

// `plan` states the bound and how the probes run: with boundary_max 16, bisection probes at most
// 5 doubling + 3 bisecting = 8; guided by peaks, 5 + 4 (a bracket as wide as 1..16) + 5 guesses = 14.
TEST(BoundaryProcessE2E, PlanStatesTheBoundAndTheProcesses) {
  TempDir dir("boundary_process_plan");
  const std::string matrix = dir / "m.yaml";
  WriteText(matrix, std::string(kHead) +
                        "  memory_per_sample_bytes: 268435456\n"
                        "  boundary_probe_process: shared\n  boundary_guide: [none, peak_memory]\n");
  auto plan = Dlbench({"plan", matrix, "--json"}, dir, dir / "p.db");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  std::map<std::string, std::int64_t> bound;
  for (const nlohmann::json& c : nlohmann::json::parse(plan.out)) {
    EXPECT_EQ(c.at("boundary_probe_process"), "shared");
    bound[c.at("params").at("boundary_guide")] = c.at("boundary_max_probes");
  }
  EXPECT_EQ(bound, (std::map<std::string, std::int64_t>{{"none", 8}, {"peak_memory", 14}}));
  auto text = Dlbench({"plan", matrix}, dir, dir / "p.db");
  EXPECT_NE(text.out.find("batch_size: max runs at most 14 probes (sharing runner processes"),
            std::string::npos)
      << text.out;
  // Without a search the keys change nothing: a warning at their place.
  WriteText(dir / "w.yaml", "runner: null\nmatrix:\n  batch_size: 4\n  boundary_probe_process: shared\n");
  auto warn = Dlbench({"plan", dir / "w.yaml"}, dir, dir / "p.db");
  EXPECT_NE(warn.err.find("w.yaml:4:3: warning: boundary_probe_process applies to a boundary search"),
            std::string::npos)
      << warn.err;
}

// boundary_seed: other_caps over memory_cap 3, 4 and 6 GiB (8, 12 and 20 fit; boundary_max 32),
// in plan order. 3 GiB has no other search stored: 1, 2, then the peaks' line, 8 and 9. 4 GiB
// starts from 3 GiB's fits (2 and 8, 1.5 and 3 GiB: their line meets 4 GiB at 12): 12 and 13.
// 6 GiB from both: 12 and 2 say 20, then 21. A later run of `--only memory_cap=6GiB` in a store
// holding only the 3 GiB search is seeded from it (the matrix's other caps, not the selection's).
TEST(BoundaryProcessE2E, SeedsFromOtherCapsStartAtTheirLine) {
  TempDir dir("boundary_seed");
  const std::string matrix = dir / "m.yaml", db = dir / "m.db";
  std::string head = kHead;
  head.replace(head.find("  memory_cap: 4GiB\n"), std::string("  memory_cap: 4GiB\n").size(),
               "  memory_cap: [3GiB, 4GiB, 6GiB]\n");
  head.replace(head.find("  boundary_max: 16\n"), std::string("  boundary_max: 16\n").size(),
               "  boundary_max: 32\n");
  WriteText(matrix, head +
                        "  memory_per_sample_bytes: 268435456\n"
                        "  boundary_guide: peak_memory\n  boundary_seed: other_caps\n");
  // The bound grows by one probe: 6 doubling + 5 (a bracket as wide as 1..32) + 5 guesses + 1.
  auto plan = Dlbench({"plan", matrix, "--json"}, dir, dir / "p.db");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  for (const nlohmann::json& c : nlohmann::json::parse(plan.out)) EXPECT_EQ(c.at("boundary_max_probes"), 17);

  auto run = Dlbench({"run", matrix}, dir, db);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  std::map<std::string, nlohmann::json> by;
  for (const nlohmann::json& c : Cells(dir, db)) by[c.at("params").at("memory_cap")] = c;
  ASSERT_EQ(by.size(), 3u);
  const std::map<std::string, std::vector<std::int64_t>> probed = {
      {"3GiB", {1, 2, 8, 9}}, {"4GiB", {12, 13}}, {"6GiB", {20, 21}}};
  const std::map<std::string, std::size_t> seed_points = {{"3GiB", 0}, {"4GiB", 3}, {"6GiB", 4}};
  for (const auto& [cap, cell] : by) {
    EXPECT_EQ(cell.at("outcome"), "ok") << cap << ": " << cell.at("message");
    const nlohmann::json& search = cell.at("extras").at("boundary_search");
    EXPECT_EQ(Probed(cell), probed.at(cap)) << cap << ": " << search.dump();
    EXPECT_EQ(search.at("end"), "converged") << cap;
    EXPECT_EQ(search.at("first_failing").get<std::int64_t>(), probed.at(cap).back()) << cap;
    EXPECT_EQ(search.at("seeds").at("points"), seed_points.at(cap))
        << cap << ": " << search.at("seeds").dump();
    // The first probe of a seeded search is the seeds' guess; the rest are the search's own.
    const nlohmann::json& first = search.at("probes").at(0);
    EXPECT_EQ(first.at("from_seeds"), cap != "3GiB") << cap;
    EXPECT_FALSE(search.at("probes").at(1).at("from_seeds")) << cap;
  }
  EXPECT_EQ(by.at("6GiB").at("extras").at("boundary_search").at("seeds").at("from").size(), 2u);
  auto show = Dlbench({"show", "latest"}, dir, db);
  EXPECT_NE(show.out.find("seeded by 4 fits under 3GiB, 4GiB"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("no seeds stored under other caps"), std::string::npos) << show.out;

  const std::string only = dir / "only.db";
  auto small = Dlbench({"run", matrix, "--only", "memory_cap=3GiB"}, dir, only);
  ASSERT_EQ(small.exit_code, 0) << small.out << small.err;
  auto large = Dlbench({"run", matrix, "--only", "memory_cap=6GiB"}, dir, only);
  ASSERT_EQ(large.exit_code, 0) << large.out << large.err;
  const nlohmann::json cells = Cells(dir, only);
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(Probed(cells.at(0)), (std::vector<std::int64_t>{20, 21}));
  EXPECT_EQ(cells.at(0).at("extras").at("boundary_search").at("found"), 20);
}

}  // namespace
}  // namespace dlbench::e2e
