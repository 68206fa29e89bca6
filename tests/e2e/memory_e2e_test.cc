// Memory limits through the real dlbench binary and real dlbench-null processes, whose memory
// model (runners/null/memory_model.h) makes a cell need memory_base_bytes + memory_per_sample_bytes
// x batch_size: 1 GiB + 256 MiB per sample here, so under a 4 GiB cap batch 12 needs exactly the cap
// and fits, and 13 does not. The cap is also a real RLIMIT_DATA on each runner (4 GiB is far above
// what dlbench-null uses). Checked: the cap's outcome and message, a cap above the need is as no
// cap, batch_size: max equals a brute-force sweep under the same cap, the probes stay bounded when
// every probe fails and when none does, `plan` states the most probes, and bad input is a config
// error at its place in the file.
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
#include "orchestrator/cgroup_v2.h"

namespace dlbench::e2e {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;
constexpr std::int64_t kMiB = std::int64_t{1} << 20;

// The measurement is not what these tests are about: a few virtual steps a cell.
constexpr char kHead[] = R"(runner: null
measure: {min_steps: 3, max_steps: 6, min_time_s: 0, max_time_s: 30, min_warmup_steps: 1}
)";

std::string Model() { return "  memory_base_bytes: 1073741824\n  memory_per_sample_bytes: 268435456\n"; }

double Metric(const nlohmann::json& cell, const std::string& name) {
  if (!cell.at("metrics").contains(name)) {
    ADD_FAILURE() << "no metric " << name << " in " << cell.at("metrics").dump();
    return NAN;
  }
  return cell.at("metrics").at(name).at("value").get<double>();
}

nlohmann::json Cells(const TempDir& dir, const std::string& db) {
  auto exported = Dlbench({"export", "latest", "--format", "json"}, dir, db);
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
  return nlohmann::json::parse(exported.out).at("cells");
}

// Each cell of `body` run as `dlbench run` and exported, by batch_size.
std::map<std::int64_t, nlohmann::json> RunByBatch(const TempDir& dir, const std::string& name,
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
std::string CheckCpuCapRecord(const nlohmann::json& cell, std::int64_t bytes) {
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

// batch_size: max under the 4 GiB cap finds 12, as a sweep of batch sizes 1..16 under the same cap
// does; the probes are 1, 2, 4, 8, 16 (oom), 12, 14 (oom), 13 (oom), each a fresh process, and the
// stored cell is the measured run of batch 12.
TEST(MemoryE2E, BatchSizeMaxEqualsABruteForceSweepUnderTheSameCap) {
  TempDir dir("memory_search");
  std::string sweep = "matrix:\n  virtual_time: true\n" + Model() + "  memory_cap: 4GiB\n  batch_size: [";
  for (int b = 1; b <= 16; ++b) sweep += std::to_string(b) + (b < 16 ? ", " : "]\n");
  std::int64_t brute = 0;
  for (const auto& [batch, cell] : RunByBatch(dir, "sweep", sweep)) {
    if (cell.at("outcome") == "ok") {
      brute = std::max(brute, batch);
    } else {
      EXPECT_EQ(cell.at("outcome"), "oom") << batch;
    }
  }
  EXPECT_EQ(brute, 12);

  auto searched = RunByBatch(
      dir, "search", "matrix:\n  virtual_time: true\n" + Model() + "  memory_cap: 4GiB\n  batch_size: max\n");
  ASSERT_EQ(searched.size(), 1u);
  const nlohmann::json& cell = searched.at(-1);
  EXPECT_EQ(cell.at("outcome"), "ok") << cell.at("message");
  EXPECT_EQ(cell.at("params").at("batch_size"), "max");
  EXPECT_EQ(cell.at("effective").at("batch_size"), brute);
  EXPECT_EQ(Metric(cell, "boundary_batch_size"), static_cast<double>(brute));
  EXPECT_EQ(Metric(cell, "boundary_first_failing_batch_size"), static_cast<double>(brute + 1));
  const nlohmann::json& search = cell.at("extras").at("boundary_search");
  EXPECT_EQ(search.at("end"), "converged");
  std::vector<std::int64_t> probed;
  for (const nlohmann::json& p : search.at("probes")) {
    probed.push_back(p.at("batch_size"));
    EXPECT_EQ(p.at("outcome"), p.at("fits").get<bool>() ? "ok" : "oom") << p.dump();
    EXPECT_EQ(p.at("memory").is_null(), false) << p.dump();
  }
  EXPECT_EQ(probed, (std::vector<std::int64_t>{1, 2, 4, 8, 16, 12, 14, 13}));
  EXPECT_EQ(Metric(cell, "boundary_probes"), 8.0);
  CheckCpuCapRecord(cell, 4 * kGiB);

  // boundary_resolution 0.5: after 16 fails, 12 fits and 16 - 12 <= floor(12 x 0.5): resolved in
  // six probes, the cell at 12 (here the boundary itself), its bracket [12, 16) stored.
  auto coarse = RunByBatch(dir, "coarse",
                           "matrix:\n  virtual_time: true\n" + Model() +
                               "  memory_cap: 4GiB\n  batch_size: max\n  boundary_resolution: 0.5\n");
  ASSERT_EQ(coarse.size(), 1u);
  const nlohmann::json& resolved = coarse.at(-1);
  EXPECT_EQ(resolved.at("outcome"), "ok") << resolved.at("message");
  const nlohmann::json& coarse_search = resolved.at("extras").at("boundary_search");
  EXPECT_EQ(coarse_search.at("end"), "resolved") << coarse_search.dump();
  EXPECT_EQ(coarse_search.at("found"), 12);
  EXPECT_EQ(coarse_search.at("first_failing"), 16);
  EXPECT_EQ(coarse_search.at("resolution"), 0.5);
  EXPECT_EQ(Metric(resolved, "boundary_probes"), 6.0);
}

// The same search under the default measure block (min_steps 10, min_warmup_steps 2, min_time_s
// 1), with steps of 100 ms so that each record is a frame of its own, as a real model's are: a
// probe runs boundary_probe_steps (5) steps, fewer than min_steps, and must still count as
// fitting. On the H200 (2026-12-02) the first probe ended `invalid` (too little data: 4 measured
// steps after 2 warm-up steps < min_steps 5) and the search stopped there.
TEST(MemoryE2E, ProbesFitUnderTheDefaultMeasureSettings) {
  TempDir dir("memory_default_measure");
  const std::string matrix = dir / "m.yaml", db = dir / "m.db";
  WriteText(matrix,
            "runner: null\nmeasure: {max_time_s: 30}\nmatrix:\n  virtual_time: true\n  step_ms: 100\n" +
                Model() + "  memory_cap: 4GiB\n  batch_size: max\n");
  auto run = Dlbench({"run", matrix}, dir, db);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  const nlohmann::json cells = Cells(dir, db);
  ASSERT_EQ(cells.size(), 1u);
  const nlohmann::json& cell = cells.at(0);
  EXPECT_EQ(cell.at("outcome"), "ok") << cell.at("message");
  EXPECT_EQ(Metric(cell, "boundary_batch_size"), 12.0);
  for (const nlohmann::json& p : cell.at("extras").at("boundary_search").at("probes"))
    EXPECT_EQ(p.at("outcome"), p.at("fits").get<bool>() ? "ok" : "oom") << p.dump();
  EXPECT_GE(Metric(cell, "measured_steps"), 10.0) << "the cell measured at the batch found keeps min_steps";
}

// Every probe fails: one probe, the cell oom. None fails (no cap): the probe cap ends it, with
// a warning saying what is known. `plan` states the most probes before anything runs.
TEST(MemoryE2E, ProbesAreBoundedWhenEveryProbeFailsAndWhenNoneDoes) {
  TempDir dir("memory_bounds");
  auto none = RunByBatch(
      dir, "none", "matrix:\n  virtual_time: true\n" + Model() + "  memory_cap: 512MiB\n  batch_size: max\n");
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none.at(-1).at("outcome"), "oom");
  EXPECT_NE(none.at(-1).at("message").get<std::string>().find("even batch_size 1 does not fit"),
            std::string::npos);
  EXPECT_EQ(none.at(-1).at("extras").at("boundary_search").at("end"), "none_fits");
  EXPECT_EQ(Metric(none.at(-1), "boundary_probes"), 1.0);

  const std::string all_body =
      "matrix:\n  virtual_time: true\n" + Model() + "  batch_size: max\n  boundary_max_probes: 5\n";
  auto all = RunByBatch(dir, "all", all_body);
  ASSERT_EQ(all.size(), 1u);
  const nlohmann::json& cell = all.at(-1);
  EXPECT_EQ(cell.at("outcome"), "ok") << cell.at("message");
  EXPECT_EQ(cell.at("extras").at("boundary_search").at("end"), "probe_cap");
  EXPECT_EQ(Metric(cell, "boundary_probes"), 5.0);
  EXPECT_EQ(Metric(cell, "boundary_batch_size"), 16.0);
  EXPECT_NE(cell.at("extras").at("warnings").dump().find("at least 16"), std::string::npos);

  const std::string matrix = dir / "all.yaml";
  auto plan = Dlbench({"plan", matrix, "--json"}, dir, dir / "plan.db");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_EQ(nlohmann::json::parse(plan.out).at(0).at("boundary_max_probes"), 5);
  auto text = Dlbench({"plan", matrix}, dir, dir / "plan.db");
  EXPECT_NE(text.out.find("batch_size: max runs at most 5 probes"), std::string::npos) << text.out;
  WriteText(dir / "default.yaml", std::string(kHead) + "matrix:\n  batch_size: max\n");
  plan = Dlbench({"plan", dir / "default.yaml", "--json"}, dir, dir / "plan.db");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_EQ(nlohmann::json::parse(plan.out).at(0).at("boundary_max_probes"), 24);  // min(24, 21 + 19)

  auto show = Dlbench({"show", "latest"}, dir, dir / "all.db");
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("Boundary search"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("largest batch_size 16, first failing none (probe_cap; 5 of at most 5 probes"),
            std::string::npos)
      << show.out;
}

// A first probe that ends `error` (dlbench-null's inject: exit, exit code 3 at step 1) says
// nothing about memory: the cell is that probe, `error` with its message, and the search ends
// probe_failed, not none_fits; the probe's `fits` is null and no batch is the first failing one.
TEST(MemoryE2E, ASearchWhoseFirstProbeEndsErrorSaysSoNotNoneFits) {
  TempDir dir("memory_probe_error");
  auto cells = RunByBatch(dir, "error",
                          "matrix:\n  virtual_time: true\n" + Model() +
                              "  memory_cap: 4GiB\n  batch_size: max\n  inject: exit\n  inject_at_step: 1\n");
  ASSERT_EQ(cells.size(), 1u);
  const nlohmann::json& cell = cells.at(-1);
  EXPECT_EQ(cell.at("outcome"), "error") << cell.at("message");
  const std::string message = cell.at("message");
  EXPECT_EQ(message.rfind(
                "batch_size: max: the probe at batch_size 1 ended error: runner ended with exit code 3", 0),
            0u)
      << message;
  const nlohmann::json& search = cell.at("extras").at("boundary_search");
  EXPECT_EQ(search.at("end"), "probe_failed") << search.dump();
  EXPECT_TRUE(search.at("found").is_null()) << search.dump();
  EXPECT_TRUE(search.at("first_failing").is_null()) << search.dump();
  ASSERT_EQ(search.at("probes").size(), 1u) << search.dump();
  EXPECT_EQ(search.at("probes")[0].at("outcome"), "error");
  EXPECT_TRUE(search.at("probes")[0].at("fits").is_null()) << search.dump();
  EXPECT_FALSE(cell.at("metrics").contains("boundary_first_failing_batch_size")) << cell.at("metrics").dump();
  EXPECT_EQ(Metric(cell, "boundary_probes"), 1.0);
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

// seq_len: max and image_size: max run the same search over the input's size, with dlbench-null's
// per-token and per-pixel terms: 1 GiB + 64 MiB per token x batch 2 x seq_len fits 4 GiB up to
// seq_len 24 exactly; 1 GiB + 16 KiB per pixel x image_size^2 fits up to 443 (443^2 = 196249 <= 3 GiB /
// 16 KiB = 196608 < 444^2). Each answer equals a sweep under the same cap.
TEST(MemoryE2E, SeqLenAndImageSizeMaxEqualSweepsUnderTheSameCap) {
  TempDir dir("memory_shape");
  auto run = [&](const std::string& name, const std::string& body) {
    const std::string matrix = dir / (name + ".yaml"), db = dir / (name + ".db");
    WriteText(matrix, std::string(kHead) + "matrix:\n  virtual_time: true\n  memory_cap: 4GiB\n" +
                          "  memory_base_bytes: 1073741824\n" + body);
    auto r = Dlbench({"run", matrix}, dir, db);
    EXPECT_EQ(r.err.find("error:"), std::string::npos) << r.out << r.err;
    return Cells(dir, db);
  };
  const std::string tokens = "  memory_per_token_bytes: 67108864\n  batch_size: 2\n";
  std::int64_t brute = 0;
  for (const nlohmann::json& c : run("seq_sweep", tokens + "  seq_len: [22, 23, 24, 25, 26]\n")) {
    if (c.at("outcome") == "ok") brute = std::max(brute, c.at("params").at("seq_len").get<std::int64_t>());
  }
  EXPECT_EQ(brute, 24);
  nlohmann::json cells = run("seq", tokens + "  seq_len: max\n");
  ASSERT_EQ(cells.size(), 1u);
  const nlohmann::json& seq = cells[0];
  EXPECT_EQ(seq.at("outcome"), "ok") << seq.at("message");
  EXPECT_EQ(seq.at("params").at("seq_len"), "max");
  EXPECT_EQ(seq.at("effective").at("seq_len"), brute);
  EXPECT_EQ(seq.at("effective").at("memory_model_bytes"), kGiB + std::int64_t{2} * 24 * 64 * kMiB);
  EXPECT_EQ(Metric(seq, "boundary_seq_len"), 24.0);
  EXPECT_EQ(Metric(seq, "boundary_first_failing_seq_len"), 25.0);
  std::vector<std::int64_t> probed;
  for (const nlohmann::json& p : seq.at("extras").at("boundary_search").at("probes"))
    probed.push_back(p.at("seq_len"));
  EXPECT_EQ(probed, (std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 24, 28, 26, 25}));
  EXPECT_EQ(seq.at("extras").at("boundary_search").at("key"), "seq_len");

  const std::string pixels = "  memory_per_pixel_bytes: 16384\n";
  brute = 0;
  for (const nlohmann::json& c : run("img_sweep", pixels + "  image_size: [442, 443, 444, 445]\n")) {
    if (c.at("outcome") == "ok") brute = std::max(brute, c.at("params").at("image_size").get<std::int64_t>());
  }
  EXPECT_EQ(brute, 443);
  cells = run("img", pixels + "  image_size: max\n");
  ASSERT_EQ(cells.size(), 1u);
  const nlohmann::json& img = cells[0];
  EXPECT_EQ(img.at("outcome"), "ok") << img.at("message");
  EXPECT_EQ(img.at("effective").at("image_size"), brute);
  EXPECT_EQ(Metric(img, "boundary_image_size"), 443.0);
  EXPECT_EQ(Metric(img, "boundary_first_failing_image_size"), 444.0);
  // From image_size 32 (the default start): 32 .. 256 fit, 512 does not, then bisection.
  EXPECT_EQ(img.at("extras").at("boundary_search").at("probes").at(0).at("image_size"), 32);
  EXPECT_EQ(img.at("extras").at("boundary_search").at("min"), 32);

  auto show = Dlbench({"show", "latest"}, dir, dir / "img.db");
  EXPECT_NE(show.out.find("largest image_size 443, first failing 444 (converged;"), std::string::npos)
      << show.out;
}

// A boundary_* key without any `max` changes nothing: plan says so at its place.
TEST(MemoryE2E, BoundaryKeysWithoutASearchAreAPlanWarning) {
  TempDir dir("memory_boundary_warn");
  WriteText(dir / "w.yaml", "runner: null\nmatrix:\n  batch_size: 4\n  boundary_max_probes: 8\n");
  auto plan = Dlbench({"plan", dir / "w.yaml"}, dir, dir / "r.db");
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.err.find("w.yaml:4:3: warning: boundary_max_probes applies to a boundary search"),
            std::string::npos)
      << plan.err;
  WriteText(dir / "ok.yaml", "runner: null\nmatrix:\n  batch_size: max\n  boundary_max_probes: 8\n");
  plan = Dlbench({"plan", dir / "ok.yaml"}, dir, dir / "r.db");
  EXPECT_EQ(plan.err.find("warning"), std::string::npos) << plan.err;
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
