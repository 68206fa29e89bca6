// Memory limits through the real dlbench binary and real dlbench-null processes, whose memory
// model (runners/null/memory_model.h) makes a cell need memory_base_bytes + memory_per_sample_bytes
// x batch_size: 1 GiB + 256 MiB per sample here, so under a 4 GiB cap batch 12 needs exactly the cap
// and fits, and 13 does not. The cap is also a real RLIMIT_DATA on each runner (4 GiB is far above
// what dlbench-null uses). Checked here: the cap's outcome and message, a cap above the need is as no cap,
// which mechanism applies and what plan says of it, the allocator settings that reach the runner, and bad
// input as a config error at its place in the file. The boundary searches: memory_search_e2e_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/host_allocator.h"
#include "e2e_util.h"
#include "memory_e2e_support.h"
#include "orchestrator/cgroup_v2.h"

namespace dlbench::e2e {
namespace {

using memory_testing::Cells;
using memory_testing::CheckCpuCapRecord;
using memory_testing::kGiB;
using memory_testing::kHead;
using memory_testing::kMiB;
using memory_testing::Metric;
using memory_testing::Model;
using memory_testing::RunByBatch;

// The cap's mechanism is whichever applied (the record says, CheckCpuCapRecord): the outcome is the
// memory model's either way, since dlbench-null allocates none of what it models, so under cgroup
// v2 no OOM kill happens and the runner's own report stands.
TEST(MemoryE2E, ACellBeyondItsCapEndsOomWithWhatItAskedAndWhatTheCapAllowed) {
  TempDir dir("memory_cap");
  auto capped = RunByBatch(
      dir, "capped",
      "matrix:\n  virtual_time: true\n" + Model() + "  batch_size: [12, 13]\n  memory_cap: 4GiB\n");
  auto free =
      RunByBatch(dir, "free", "matrix:\n  virtual_time: true\n" + Model() + "  batch_size: [12, 13]\n");
  ASSERT_EQ(capped.size(), 2u);
  ASSERT_EQ(free.size(), 2u);
  const nlohmann::json& fits = capped.at(12);
  EXPECT_EQ(fits.at("outcome"), "ok") << fits.at("message");
  const std::string mechanism = CheckCpuCapRecord(fits, 4 * kGiB);
  EXPECT_EQ(fits.at("effective").at("memory_model_bytes"), 4 * kGiB);
  const nlohmann::json& over = capped.at(13);
  EXPECT_EQ(over.at("outcome"), "oom");
  EXPECT_EQ(CheckCpuCapRecord(over, 4 * kGiB), mechanism);
  EXPECT_FALSE(over.at("extras").at("memory_cap").contains("oom_kills"))
      << "the model's oom is not the kernel's";
  const std::string message = over.at("message");
  EXPECT_NE(
      message.find("tried to allocate " + std::to_string(kGiB + std::int64_t{13} * 256 * kMiB) + " bytes"),
      std::string::npos)
      << message;
  EXPECT_NE(
      message.find("memory_cap allowed " + std::to_string(4 * kGiB) + " bytes (4096 MiB, " + mechanism + ")"),
      std::string::npos)
      << message;
  EXPECT_EQ(over.at("extras").at("oom_requested_bytes"), kGiB + std::int64_t{13} * 256 * kMiB);
  // A cap the cell stays under changes nothing: the same outcome and steps as without one.
  EXPECT_EQ(free.at(12).at("outcome"), "ok");
  EXPECT_EQ(free.at(12).at("measured_steps"), fits.at("measured_steps"));
  EXPECT_FALSE(free.at(12).at("extras").contains("memory_cap"));
  EXPECT_EQ(free.at(13).at("outcome"), "ok");
}

// Bad input is a config error at its place in the file, before anything runs.
TEST(MemoryE2E, BadCapsAndMaxOnAKeyWithoutASearchAreConfigErrors) {
  TempDir dir("memory_errors");
  struct Case {
    std::string line;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"  memory_cap: 0\n", "bad.yaml:3:15: error"},
      {"  memory_cap: -1GiB\n", "bad.yaml:3:15: error"},
      {"  memory_cap: 2TiB\n", "at most 1TiB"},
      {"  memory_cap: lots\n", "(got 'lots')"},
      {"  step_ms: max\n", "bad.yaml:3:12: error"},
      {"  step_ms: max\n", "`max` (a search) is for batch_size, target_qps, image_size and seq_len only"},
      {"  batch_size: max\n  seq_len: max\n",
       "bad.yaml:4:3: error: batch_size: max and seq_len: max in one cell"},
      {"  seq_len: max\n  boundary_min: 64\n  boundary_max: 32\n",
       "bad.yaml:4:3: error: boundary_min 64 is above boundary_max 32"},
      {"  cuda_alloc_conf: expandable_segment:True\n", "bad.yaml:3:20: error"},
      {"  cuda_alloc_conf: expandable_segments:true\n",
       "expandable_segments: expected True or False (got 'true')"},
      {"  cuda_alloc_conf: max_split_size_mb:20\n", "max_split_size_mb: expected an integer > 20"},
      {"  boundary_max_probes: 65\n", "between 1 and 64"},
  };
  for (const Case& c : cases) {
    WriteText(dir / "bad.yaml", std::string("runner: null\nmatrix:\n") + c.line);
    auto plan = Dlbench({"plan", dir / "bad.yaml"}, dir, dir / "r.db");
    EXPECT_NE(plan.exit_code, 0) << c.line << plan.out;
    EXPECT_NE(plan.err.find(c.expected), std::string::npos) << c.line << plan.err;
  }
}

// cuda_alloc_conf reaches the runner's environment as PYTORCH_CUDA_ALLOC_CONF before it starts (no
// shell): dlbench-null echoes its environment's value in the effective cell; as a matrix axis each
// cell gets its own. Its effect on a GPU's reserved memory is not measurable here (docs/memory.md).
TEST(MemoryE2E, CudaAllocConfIsTheRunnersEnvironment) {
  TempDir dir("memory_alloc_conf");
  WriteText(dir / "a.yaml",
            std::string(kHead) +
                "matrix:\n  virtual_time: true\n  cuda_alloc_conf: [\"expandable_segments:True\", "
                "\"max_split_size_mb:128,garbage_collection_threshold:0.6\"]\n  batch_size: [1, 2]\n");
  auto run = Dlbench({"run", dir / "a.yaml"}, dir, dir / "a.db");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json cells = Cells(dir, dir / "a.db");
  ASSERT_EQ(cells.size(), 4u);
  for (const nlohmann::json& c : cells) {
    EXPECT_EQ(c.at("outcome"), "ok") << c.at("message");
    EXPECT_EQ(c.at("effective").at("pytorch_cuda_alloc_conf"), c.at("params").at("cuda_alloc_conf"))
        << c.dump();
  }
  // Without the key the runner's environment is dlbench's own.
  WriteText(dir / "none.yaml", std::string(kHead) + "matrix:\n  virtual_time: true\n");
  run = Dlbench({"run", dir / "none.yaml"}, dir, dir / "none.db");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json effective = Cells(dir, dir / "none.db").at(0).at("effective");
  if (const char* inherited = std::getenv("PYTORCH_CUDA_ALLOC_CONF")) {
    EXPECT_EQ(effective.value("pytorch_cuda_alloc_conf", ""), inherited);
  } else {
    EXPECT_FALSE(effective.contains("pytorch_cuda_alloc_conf")) << effective.dump();
  }
}

// host_allocator (docs/memory.md "The host allocator"): the runner reports the malloc it found
// itself running with, so a preload that did not take would show. (Not under ASan: an ASan runtime
// must come first in the process; this file runs in the suite stage only, scripts/sanitize.sh.)
TEST(MemoryE2E, HostAllocatorIsTheMallocTheRunnerRunsWith) {
  TempDir dir("memory_host_allocator");
  std::vector<std::string> values = {"system", "glibc_fixed"};
  for (const char* preloaded : {"jemalloc", "tcmalloc"}) {
    if (config::PreloadLibrary(preloaded)) values.emplace_back(preloaded);
  }
  std::string list;
  for (const std::string& v : values) list += (list.empty() ? "" : ", ") + v;
  WriteText(dir / "a.yaml",
            std::string(kHead) + "matrix:\n  virtual_time: true\n  host_allocator: [" + list + "]\n");
  auto run = Dlbench({"run", dir / "a.yaml"}, dir, dir / "a.db");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json cells = Cells(dir, dir / "a.db");
  ASSERT_EQ(cells.size(), values.size());
  for (const nlohmann::json& c : cells) {
    EXPECT_EQ(c.at("outcome"), "ok") << c.at("message");
    const std::string asked = c.at("params").at("host_allocator");
    const nlohmann::json found = c.at("effective").at("host_allocator");
    if (asked == "jemalloc" || asked == "tcmalloc") {
      EXPECT_EQ(found.at("malloc"), asked) << c.dump();
    } else {
      EXPECT_EQ(found.at("malloc"), "glibc") << c.dump();
    }
    if (asked == "glibc_fixed") {
      EXPECT_NE(found.value("glibc_tunables", "")
                    .find("glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296"),
                std::string::npos)
          << found.dump();
    }
  }
  // A value outside the four is refused at its place in the file.
  WriteText(dir / "bad.yaml", std::string(kHead) + "matrix:\n  host_allocator: mimalloc\n");
  auto bad = Dlbench({"plan", dir / "bad.yaml"}, dir, dir / "b.db");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("bad.yaml:"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("jemalloc"), std::string::npos) << bad.err;
}

// A cpu cap above this host's memory cannot bind: plan warns, at the key's place.
TEST(MemoryE2E, ACapAboveTheHostsMemoryIsAPlanWarning) {
  TempDir dir("memory_warn");
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (static_cast<double>(pages) * static_cast<double>(page) >= static_cast<double>(std::int64_t{1} << 40)) {
    GTEST_SKIP() << "this host has 1 TiB or more";
  }
  WriteText(dir / "big.yaml", "runner: null\nmatrix:\n  memory_cap: 1TiB\n");
  auto plan = Dlbench({"plan", dir / "big.yaml"}, dir, dir / "r.db");
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.err.find("big.yaml:3:3: warning: memory_cap 1TiB is above this host's memory"),
            std::string::npos)
      << plan.err;
}

// A cpu cell's cap is cgroup v2's memory.max where this host offers a usable cgroup (a delegated
// parent with the memory controller, orchestrator/cgroup_v2.h), else RLIMIT_DATA, and the record
// says which and why. The cell leaks 16 MiB a step (touched) under a 256 MiB cap, and ends `oom`
// either way, with the cap in its message:
// - RLIMIT_DATA (the development machine binds memory to cgroup v1): malloc fails, dlbench-null
//   catches std::bad_alloc and reports what it asked for (16 MiB), as LibTorch's allocator does;
// - cgroup v2: the allocation succeeds and the kernel's OOM killer ends the runner; dlbench reads
//   memory.events and records the kill, and the cell's cgroup is gone afterwards. No run here has
//   shown this path (the fake-tree tests FakeCgroups.* cover its parts).
TEST(MemoryE2E, ACpuCapIsCgroupV2WhereUsableElseRlimitDataAndTheRecordSaysWhy) {
  TempDir dir("memory_cgroup");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, R"(runner: null
measure: {min_steps: 64, max_steps: 64, min_time_s: 0, max_time_s: 30, min_warmup_steps: 1}
matrix:
  virtual_time: true
  inject: leak
  leak_bytes_per_step: 16777216
  memory_cap: 256MiB
timeout_s: 60
)");
  auto run = Dlbench({"run", matrix}, dir, db);
  const nlohmann::json cells = Cells(dir, db);
  ASSERT_EQ(cells.size(), 1u) << run.out << run.err;
  const nlohmann::json& cell = cells[0];
  const std::string mechanism = CheckCpuCapRecord(cell, 256 * kMiB);
  const nlohmann::json& cap = cell.at("extras").at("memory_cap");
  EXPECT_EQ(cell.at("outcome"), "oom") << cell.at("message");
  const std::string message = cell.at("message");
  EXPECT_NE(message.find("memory_cap allowed 268435456 bytes (256 MiB, " + mechanism + ")"),
            std::string::npos)
      << message;
  if (mechanism == "RLIMIT_DATA") {
    EXPECT_NE(message.find("out of memory (inject: leak): tried to allocate 16777216 bytes at step "),
              std::string::npos)
        << message;
    EXPECT_EQ(cell.at("extras").at("oom_requested_bytes"), 16 * kMiB);
    // 256 MiB holds fewer than 16 blocks beside the runner itself: the refusal comes before step 16.
    EXPECT_LT(Metric(cell, "measured_steps"), 16.0);
  } else {
    EXPECT_NE(message.find("the kernel's OOM killer ended"), std::string::npos) << message;
    EXPECT_GE(cap.value("oom_kills", 0), 1) << cap.dump();
  }
}

// A runner that dies by SIGSEGV or SIGABRT under an RLIMIT_DATA cap is read as `oom`: a library whose
// allocation the limit refused may crash instead of reporting it (dlbench-torch in oneDNN's JIT,
// TorchE2E.CpuCellsAtTheEdgeOfTheirCapEndOomNotCrashedOrTimeout). dlbench-null's inject: crash (SIGSEGV at a
// step) stands for it; another signal, or SIGSEGV without a cap, stays `crashed`, and a boundary
// search reads such a probe as not fitting. Under cgroup v2 the kernel kills instead of refusing, so
// there a crash stays a crash.
TEST(MemoryE2E, ASegfaultUnderAnRlimitDataCapIsOomAndASearchReadsItAsNotFitting) {
  TempDir dir("memory_crash");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, std::string(kHead) + R"(matrix:
  virtual_time: true
  inject_at_step: 2
  batch_size: [1, 2, 3, max]
include:
  - {inject: crash, memory_cap: 256MiB, batch_size: 1}
  - {inject: sigterm_self, memory_cap: 256MiB, batch_size: 2}
  - {inject: crash, batch_size: 3}
  - {inject: crash, memory_cap: 256MiB, batch_size: max, boundary_max: 8}
)");
  auto run = Dlbench({"run", matrix}, dir, db);
  std::map<std::string, nlohmann::json> by;
  for (const nlohmann::json& c : Cells(dir, db)) by[c.at("params").at("batch_size").dump()] = c;
  ASSERT_EQ(by.size(), 4u) << run.out << run.err;
  const nlohmann::json& segv = by.at("1");
  const std::string mechanism = CheckCpuCapRecord(segv, 256 * kMiB);
  const bool rlimit = mechanism == "RLIMIT_DATA";
  EXPECT_EQ(segv.at("outcome"), rlimit ? "oom" : "crashed") << segv.at("message");
  if (rlimit) {
    EXPECT_EQ(segv.at("message").get<std::string>().rfind(
                  "out of memory (taken from a crash): the runner died by SIGSEGV under a 256 MiB memory_cap "
                  "(RLIMIT_DATA): taken as out of memory",
                  0),
              0u)
        << segv.at("message");
    EXPECT_NE(segv.at("message").get<std::string>().find(
                  "; memory_cap allowed 268435456 bytes (256 MiB, RLIMIT_DATA)"),
              std::string::npos)
        << segv.at("message");
    EXPECT_EQ(segv.at("extras").at("memory_cap").at("crash_taken_as_oom"), "SIGSEGV");
  }
  EXPECT_EQ(by.at("2").at("outcome"), "crashed") << by.at("2").at("message");
  EXPECT_NE(by.at("2").at("message").get<std::string>().find("SIGTERM"), std::string::npos);
  EXPECT_FALSE(by.at("2").at("extras").at("memory_cap").contains("crash_taken_as_oom"));
  EXPECT_EQ(by.at("3").at("outcome"), "crashed") << by.at("3").at("message");
  EXPECT_FALSE(by.at("3").at("extras").contains("memory_cap"));

  const nlohmann::json& search = by.at("\"max\"");
  const nlohmann::json& found = search.at("extras").at("boundary_search");
  if (rlimit) {
    EXPECT_EQ(search.at("outcome"), "oom") << search.at("message");
    EXPECT_EQ(found.at("end"), "none_fits") << found.dump();
    EXPECT_EQ(found.at("first_failing"), 1) << found.dump();
    EXPECT_NE(
        search.at("message").get<std::string>().find("even batch_size 1 does not fit: out of memory (taken "
                                                     "from a crash)"),
        std::string::npos)
        << search.at("message");
  } else {
    EXPECT_EQ(search.at("outcome"), "crashed") << search.at("message");
  }
  ASSERT_EQ(found.at("probes").size(), 1u) << found.dump();
  EXPECT_EQ(found.at("probes")[0].at("outcome"), rlimit ? "oom" : "crashed");
}

// `plan` says which mechanism each capped cell's memory_cap will use, in its text and --json, as
// the run records it: cgroup v2 with its parent, or RLIMIT_DATA with the reason v2 is not usable
// (here, with DLBENCH_CGROUP_PARENT pointing at a folder that is no cgroup, that reason is known
// on any host); a cuda cell's cap is the runner's. Nothing is written (FakeCgroups.* cover the
// usable parent and the predictions).
TEST(MemoryE2E, PlanSaysWhichMechanismEachCapWillUse) {
  TempDir dir("memory_plan_cap");
  WriteText(dir / "p.yaml",
            std::string(kHead) +
                "matrix:\n  virtual_time: true\n  memory_cap: [256MiB, 1GiB]\n  batch_size: 2\n"
                "include:\n  - {memory_cap: 1GiB, device: \"cuda:0\"}\n  - {batch_size: 3}\n");
  const std::string fake = dir / "not-a-cgroup";
  const std::vector<std::pair<std::string, std::string>> env = {{"DLBENCH_CGROUP_PARENT", fake}};
  auto json = RunCommand({Bin("dlbench"), "--db", dir / "r.db", "plan", dir / "p.yaml", "--json"}, dir, env);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json cells = nlohmann::json::parse(json.out);
  ASSERT_EQ(cells.size(), 3u) << json.out;
  const nlohmann::json& cpu = cells.at(0).at("memory_cap");
  EXPECT_EQ(cpu.at("bytes"), 256 * kMiB);
  EXPECT_EQ(cpu.at("mechanism"), "RLIMIT_DATA");
  const std::string why = cpu.at("cgroup_v2");
  EXPECT_TRUE(why.rfind("not used: DLBENCH_CGROUP_PARENT=" + fake + " is not under a cgroup2 mount (", 0) ==
                  0 ||
              why == "not used: no cgroup2 file system is mounted (/proc/self/mounts)")
      << why;
  EXPECT_EQ(cells.at(1).at("memory_cap"), nlohmann::json({{"bytes", kGiB}, {"mechanism", "runner"}}));
  EXPECT_FALSE(cells.at(2).contains("memory_cap")) << cells.at(2).dump();
  auto text = RunCommand({Bin("dlbench"), "--db", dir / "r.db", "plan", dir / "p.yaml"}, dir, env);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("memory_cap of #0: RLIMIT_DATA on each runner; cgroup v2 " + why + "\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("memory_cap of #1: applied by the runner (the CUDA caching allocator's per-process "
                          "fraction"),
            std::string::npos)
      << text.out;
  EXPECT_FALSE(std::filesystem::exists(fake)) << "plan creates nothing";

  // Without the variable, plan's answer is this host's, the same that a run records.
  auto host = Dlbench({"plan", dir / "p.yaml", "--json"}, dir, dir / "r.db");
  ASSERT_EQ(host.exit_code, 0) << host.err;
  const orchestrator::CgroupParent parent = orchestrator::FindCgroupParent(
      orchestrator::SystemCgroupSources(), orchestrator::CgroupCheck::kReadOnly);
  const nlohmann::json planned = nlohmann::json::parse(host.out).at(0).at("memory_cap");
  if (parent.path.empty()) {
    EXPECT_EQ(planned.at("cgroup_v2"), "not used: " + parent.why_not) << planned.dump();
  } else {
    EXPECT_EQ(planned.at("cgroup_parent"), parent.path) << planned.dump();
  }
}

}  // namespace
}  // namespace dlbench::e2e
