#include "report/prometheus.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <set>
#include <sstream>

#include "common/files.h"
#include "report/test_store.h"

namespace dlbench::report {
namespace {

using testing::MakeCell;
using testing::MemoryStore;

TEST(ToBaseUnits, ConvertsEveryKnownUnit) {
  struct Case {
    record::MetricRecord in;
    std::string name;
    double value;
  };
  const Case cases[] = {
      {{"step_time_p99_ns", 2e6, "ns"}, "dlbench_step_time_p99_seconds", 0.002},
      {{"measured_window_s", 3, "s"}, "dlbench_measured_window_seconds", 3},
      {{"peak_allocated_bytes", 1024, "bytes"}, "dlbench_peak_allocated_bytes", 1024},
      {{"energy_per_sample_j", 0.5, "J"}, "dlbench_energy_per_sample_joules", 0.5},
      {{"gpu_util_mean_pct", 85, "%"}, "dlbench_gpu_util_mean_ratio", 0.85},
      {{"step_time_cv", 0.02, "ratio"}, "dlbench_step_time_cv_ratio", 0.02},
      {{"mfu_ratio", 0.4, "ratio"}, "dlbench_mfu_ratio", 0.4},
      {{"samples_per_s", 1200, "1/s"}, "dlbench_samples_per_second", 1200},
      {{"achieved_flops_per_s", 1e12, "FLOP/s"}, "dlbench_achieved_flops_per_second", 1e12},
      {{"gpu_power_mean_w", 300, "W"}, "dlbench_gpu_power_mean_watts", 300},
      {{"warmup_steps", 4, "steps"}, "dlbench_warmup_steps", 4},
      {{"odd-name.x", 1, ""}, "dlbench_odd_name_x", 1},
  };
  for (const auto& c : cases) {
    const PromGauge g = ToBaseUnits(c.in);
    EXPECT_EQ(g.name, c.name) << c.in.name;
    EXPECT_DOUBLE_EQ(g.value, c.value) << c.in.name;
  }
}

TEST(CellLabels, FixedSetWithHostAndVariant) {
  record::RunRecord run;
  run.environment = {{"host", {{"hostname", "gpu-box-1"}}}};
  auto cell = MakeCell(1, 0, "resnet50", 32, 1);
  cell.params["compile"] = true;
  cell.params["threads"] = 8;
  const auto labels = CellLabels(run, cell);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"model", "resnet50"}, {"scenario", "train"},
      {"batch_size", "32"},  {"precision", "fp32"},
      {"device", "cpu"},     {"strategy", "none"},
      {"host", "gpu-box-1"}, {"variant", "compile=true,threads=8"}};
  EXPECT_EQ(labels, want);
}

TEST(EnvironmentHost, KnownPlacesOrEmpty) {
  EXPECT_EQ(EnvironmentHost({{"hostname", "a"}}), "a");
  EXPECT_EQ(EnvironmentHost({{"host", {{"name", "b"}}}}), "b");
  EXPECT_EQ(EnvironmentHost({{"os", "linux"}}), "");
  EXPECT_EQ(EnvironmentHost(nlohmann::json()), "");
}

TEST(ParseProgress, ReadsFieldsAndRejectsJunk) {
  auto p = ParseProgress(R"({"run_id": 4, "cells_total": 10, "cells_done": 3, "current_cell": "m bs=8",
                             "started_wall_ns": 5, "updated_wall_ns": 6, "pid": 99})");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->run_id, 4);
  EXPECT_EQ(p->cells_done, 3);
  EXPECT_EQ(p->current_cell, "m bs=8");
  EXPECT_EQ(p->pid, 99);
  EXPECT_FALSE(ParseProgress("not json").ok());
  EXPECT_FALSE(ParseProgress("[1,2]").ok());
  EXPECT_FALSE(ParseProgress(R"({"run_id": "x"})").ok());
}

TEST(ParseProgress, NumbersThatDoNotFitAreRefusedNotConverted) {
  // fuzz/corpus/progress/huge_numbers.json: converting 1e300 to int64 was undefined behaviour
  // (UBSan: "1e+300 is outside the range of representable values of type 'long'").
  const char* refused[] = {
      R"({"run_id": 1e300})",
      R"({"run_id": 1.5})",
      R"({"run_id": 1, "cells_total": 18446744073709551615})",
      R"({"run_id": 1, "pid": 4294967297})",  // would truncate to pid 1 in kill()
      R"({"run_id": 1, "pid": -1})",          // kill(-1, 0) asks about every process
      R"({"run_id": 1, "cells_done": [1]})",
  };
  for (const char* text : refused) {
    auto p = ParseProgress(text);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_EQ(p.error().kind, ErrorKind::kInvalidInput);
  }
  // What `dlbench run` writes (cells counts as unsigned JSON numbers) reads back.
  auto written = ParseProgress(R"({"run_id": 2, "cells_total": 18446744073709551, "pid": 4194304})");
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_EQ(written->cells_total, 18446744073709551);
  EXPECT_EQ(written->pid, 4194304);  // PID_MAX_LIMIT; a larger pid is refused (record/progress.cc)
}

TEST(ReadActiveProgress, LiveSelfPidCountsAndDeadPidDoesNot) {
  const std::string db = ::testing::TempDir() + "/prom_progress_test.db";
  EXPECT_FALSE(ReadActiveProgress(db).has_value());  // no file
  ASSERT_TRUE(
      WriteFileAtomic(ProgressPath(db), nlohmann::json({{"run_id", 2}, {"pid", getpid()}}).dump()).ok());
  EXPECT_TRUE(ReadActiveProgress(db).has_value());
  // pid_max is at most 2^22 on Linux: this pid cannot be alive.
  ASSERT_TRUE(
      WriteFileAtomic(ProgressPath(db), nlohmann::json({{"run_id", 2}, {"pid", 1 << 23}}).dump()).ok());
  EXPECT_FALSE(ReadActiveProgress(db).has_value());
  std::remove(ProgressPath(db).c_str());
}

std::int64_t AddRun(MemoryStore& store, const std::vector<record::CellRecord>& cells,
                    const std::string& host = "h") {
  record::RunRecord run;
  run.name = "r";
  run.environment = {{"hostname", host}, {"os", "Debian"}};
  run.environment_hash = "hash-" + host;
  const std::int64_t id = *store.BeginRun(run);
  for (auto c : cells) {
    c.run_id = id;
    EXPECT_TRUE(store.PutCell(c).ok());
  }
  return id;
}

TEST(CollectLatestCells, NewestResultPerKeyWithPreviousThroughput) {
  MemoryStore store;
  AddRun(store, {MakeCell(0, 0, "a", 8, 100), MakeCell(0, 1, "b", 8, 50)});
  AddRun(store, {MakeCell(0, 0, "a", 8, 90)});  // a regressed by 10%; b not measured
  auto input = CollectLatestCells(store);
  ASSERT_TRUE(input.ok());
  ASSERT_EQ(input->cells.size(), 2u);
  EXPECT_EQ(input->cells[0].run.id, 2);
  EXPECT_EQ(input->cells[0].cell.metrics[0].value, 90);
  ASSERT_TRUE(input->cells[0].previous_samples_per_s.has_value());
  EXPECT_EQ(*input->cells[0].previous_samples_per_s, 100);
  EXPECT_EQ(input->cells[1].run.id, 1);
  EXPECT_FALSE(input->cells[1].previous_samples_per_s.has_value());
  EXPECT_EQ(input->environment_run->id, 2);

  const std::string text = RenderExposition(*input);
  const std::string a_labels =
      "{model=\"a\",scenario=\"train\",batch_size=\"8\",precision=\"fp32\",device=\"cpu\",strategy=\"none\","
      "host=\"h\",variant=\"\"}";
  EXPECT_NE(text.find("\ndlbench_samples_per_second_change_ratio" + a_labels + " 0.9\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\ndlbench_cell_regression" + a_labels + " 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\ndlbench_samples_per_second" + a_labels + " 90\n"), std::string::npos) << text;
  // b has no previous run: no change ratio, no regression flag.
  EXPECT_EQ(text.find("dlbench_cell_regression{model=\"b\""), std::string::npos);
}

TEST(CollectLatestCells, RepetitionsInOneRunAreNotPrevious) {
  MemoryStore store;
  auto r0 = MakeCell(0, 0, "a", 8, 100);
  auto r1 = MakeCell(0, 1, "a", 8, 110);
  r1.cell_id = r1.key + "#r1";
  AddRun(store, {r0, r1});
  auto input = CollectLatestCells(store);
  ASSERT_TRUE(input.ok());
  ASSERT_EQ(input->cells.size(), 1u);
  EXPECT_EQ(input->cells[0].cell.index, 1);  // the last repetition
  EXPECT_FALSE(input->cells[0].previous_samples_per_s.has_value());
}

TEST(CollectRunCells, OnlyThatRunButPreviousFromOlderRuns) {
  MemoryStore store;
  AddRun(store, {MakeCell(0, 0, "a", 8, 100)});
  const auto second = AddRun(store, {MakeCell(0, 0, "a", 8, 120), MakeCell(0, 1, "c", 8, 7)});
  AddRun(store, {MakeCell(0, 0, "a", 8, 10)});
  auto input = CollectRunCells(store, second);
  ASSERT_TRUE(input.ok());
  ASSERT_EQ(input->cells.size(), 2u);
  EXPECT_EQ(input->cells[0].cell.metrics[0].value, 120);
  EXPECT_EQ(*input->cells[0].previous_samples_per_s, 100);
  EXPECT_EQ(input->environment_run->id, second);
  EXPECT_FALSE(CollectRunCells(store, 42).ok());
}

TEST(CollectLatestCells, StoreFailureIsAnError) {
  MemoryStore store;
  store.fail_reads = true;
  auto input = CollectLatestCells(store);
  ASSERT_FALSE(input.ok());
  EXPECT_EQ(input.error().kind, ErrorKind::kStore);
}

TEST(RenderExposition, WellFormedFamiliesAndEscapedLabels) {
  ExpositionInput input;
  record::RunRecord run;
  run.id = 3;
  run.environment = {{"hostname", "h\"1"}};
  auto cell = MakeCell(3, 0, "<script>\"x\"\\\n", 8, 1000);
  cell.metrics.push_back({"step_time_mean_ns", 5e6, "ns"});
  cell.verdict = record::Verdict::kNoisy;
  input.cells.push_back({run, cell, std::nullopt});
  input.environment_run = run;
  input.with_progress = true;
  const std::string text = RenderExposition(input);

  EXPECT_NE(text.find("# TYPE dlbench_build_info gauge\ndlbench_build_info{version=\""), std::string::npos);
  EXPECT_NE(text.find("dlbench_environment_info{host=\"h\\\"1\""), std::string::npos);
  EXPECT_NE(text.find("model=\"<script>\\\"x\\\"\\\\\\n\""), std::string::npos) << text;
  EXPECT_NE(text.find("} 0.005\n"), std::string::npos);
  EXPECT_NE(text.find("dlbench_cell_valid{"), std::string::npos);
  EXPECT_NE(text.find("dlbench_run_active 0\n"), std::string::npos);
  EXPECT_EQ(text.find("dlbench_cell_regression"), std::string::npos);  // no previous value

  // Every non-comment line is NAME{labels} VALUE or NAME VALUE, and each family's TYPE comes once,
  // before its samples.
  std::set<std::string> typed;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    ASSERT_FALSE(line.empty());
    if (line.rfind("# TYPE ", 0) == 0) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(typed.insert(name).second) << "TYPE twice: " << name;
      continue;
    }
    if (line.rfind("# HELP ", 0) == 0) continue;
    const std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_TRUE(typed.count(name)) << "sample before its TYPE: " << line;
    const std::string value = line.substr(line.rfind(' ') + 1);
    EXPECT_FALSE(value.empty());
  }
}

TEST(RenderExposition, ActiveProgress) {
  ExpositionInput input;
  input.with_progress = true;
  input.progress = RunProgress{9, 4, 1, "cell \"b\"", 2'000'000'000, 3'000'000'000, 1};
  const std::string text = RenderExposition(input);
  EXPECT_NE(text.find("dlbench_run_active 1\n"), std::string::npos);
  EXPECT_NE(text.find("dlbench_run_progress_ratio{run_id=\"9\"} 0.25\n"), std::string::npos);
  EXPECT_NE(text.find("dlbench_run_cells_total{run_id=\"9\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("dlbench_run_started_timestamp_seconds{run_id=\"9\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("dlbench_run_current_cell_info{run_id=\"9\",cell=\"cell \\\"b\\\"\"} 1\n"),
            std::string::npos);
}

}  // namespace
}  // namespace dlbench::report
