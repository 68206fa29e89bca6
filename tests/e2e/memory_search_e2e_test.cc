// batch_size, seq_len and image_size: max through the real dlbench binary and real dlbench-null
// processes under a memory_cap (the memory model of memory_e2e_support.h: under a 4 GiB cap batch 12
// needs exactly the cap and fits, 13 does not). Checked: the search's answer equals a brute-force
// sweep under the same cap, the probes fit the default measure settings and stay bounded when every
// probe fails and when none does, a first probe that ends in an error says so, and boundary keys
// without a search are a plan warning.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "e2e_util.h"
#include "memory_e2e_support.h"

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

// dlbench killed (SIGKILL) in the middle of a search, then `run --resume`: the probes that had
// ended are kept in the run folder (orchestrator/probe_journal.h) and answer again without runner
// processes; the resumed search asks the rest and ends as an uninterrupted one does (the probes
// 1, 2, 4, 8, 16, 12, 14, 13 of the test above). Real steps of 400 ms, so that the search is still
// probing when three probes are kept.
TEST(MemoryE2E, ASearchKilledMidwayResumesFromItsKeptProbes) {
  namespace fs = std::filesystem;
  TempDir dir("memory_search_resume");
  const std::string matrix = dir / "m.yaml", db = dir / "m.db", out = dir / "out";
  WriteText(matrix, std::string(kHead) + "matrix:\n  step_ms: 400\n  boundary_probe_steps: 2\n" + Model() +
                        "  memory_cap: 4GiB\n  batch_size: max\n");
  SpawnOptions o;
  o.argv = {Bin("dlbench"), "--db", db, "run", matrix, "--out", out};
  o.stdout_path = dir / "bg.out";
  o.stderr_path = dir / "bg.err";
  o.new_process_group = false;  // the signal reaches dlbench alone
  auto p = Subprocess::Spawn(o);
  ASSERT_TRUE(p.ok()) << p.error().message;
  // The journal of cell 0 with three probes in it.
  std::size_t kept = 0;
  for (int i = 0; i < 3000 && kept < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::error_code ec;
    for (fs::recursive_directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().filename() != "cell-0000.probes.json") continue;
      const auto text = ReadFile(it->path().string());
      const nlohmann::json doc =
          nlohmann::json::parse(text.ok() ? *text : std::string(), nullptr, /*allow_exceptions=*/false);
      if (doc.is_object() && doc.contains("probes")) kept = doc["probes"].size();
    }
  }
  ::kill(p->pid(), SIGKILL);
  p->Wait();
  ASSERT_GE(kept, 3u) << ReadFile(dir / "bg.err").value();
  EXPECT_EQ(Cells(dir, db).size(), 0u) << "the search was cut before its cell was stored";

  auto resumed = Dlbench({"run", matrix, "--out", out, "--resume", "1"}, dir, db);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  const nlohmann::json cells = Cells(dir, db);
  ASSERT_EQ(cells.size(), 1u);
  const nlohmann::json& cell = cells.at(0);
  EXPECT_EQ(cell.at("outcome"), "ok") << cell.at("message");
  EXPECT_EQ(Metric(cell, "boundary_batch_size"), 12.0);
  const nlohmann::json& search = cell.at("extras").at("boundary_search");
  std::vector<std::int64_t> probed;
  std::size_t resumed_probes = 0;
  for (const nlohmann::json& probe : search.at("probes")) {
    probed.push_back(probe.at("batch_size"));
    const bool from_journal = probe.at("resumed").get<bool>();
    // The kept probes come first, and only they.
    EXPECT_EQ(from_journal, probed.size() <= search.at("resumed_probes").get<std::size_t>()) << probe.dump();
    resumed_probes += from_journal ? 1 : 0;
  }
  EXPECT_EQ(probed, (std::vector<std::int64_t>{1, 2, 4, 8, 16, 12, 14, 13}));
  EXPECT_GE(resumed_probes, kept);
  auto show = Dlbench({"show", "latest"}, dir, db);
  EXPECT_NE(show.out.find("kept from an interrupted run"), std::string::npos) << show.out;
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

}  // namespace
}  // namespace dlbench::e2e
