// Helpers shared by the store tests: a scratch directory and fully populated records.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "store/result_store.h"

namespace dlbench::store::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it when destroyed.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "dlbench-store-XXXXXX").string();
    char* made = mkdtemp(pattern.data());
    path_ = made != nullptr ? made : "";
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  bool ok() const { return !path_.empty(); }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline RunRecord MakeRun(const std::string& name, const std::string& hash = "env-hash-1") {
  RunRecord run;
  run.name = name;
  run.matrix_path = "/matrices/" + name + ".yaml";
  run.matrix_text = "name: " + name + "\nmodels: [resnet50]\nbatch_sizes: [32, 64]\n";
  run.started_wall_ns = 1'700'000'000'000'000'000;
  run.environment_hash = hash;
  run.environment = {{"os", "Debian GNU/Linux 12"}, {"kernel", "6.1.0-18-amd64"}, {"cpu", "AMD EPYC 7B13"}};
  run.tool_version = "0.1.0";
  run.git_commit = "a660ff1deadb";
  run.total_cells = 4;
  return run;
}

// A cell whose every field differs from its default; `steps` step rows with all three present
// combinations cycling.
inline CellRecord MakeCell(std::int64_t run_id, int index, int steps = 3) {
  CellRecord cell;
  cell.run_id = run_id;
  cell.index = index;
  cell.cell_id = "c" + std::to_string(index);
  // Distinct for the first 32 indices; the shift stays defined for any index (the crash test
  // stores more than 26 cells, and 32 << 27 overflowed int: UBSan).
  const std::int64_t batch = std::int64_t{32} << (index % 32);
  cell.key = "resnet50/bs" + std::to_string(batch) + "/cpu/fp32";
  cell.label = "resnet50 bs=" + std::to_string(batch);
  cell.params = {{"model", "resnet50"}, {"batch_size", batch}};
  cell.effective = {{"device", "cpu"}, {"threads", 16}};
  cell.hello = {{"runner", "null"}, {"protocol", 1}};
  cell.repetition = index % 2;
  cell.seed = 1234567 + static_cast<std::uint64_t>(index);
  cell.outcome = record::Outcome::kOk;
  cell.message = "";
  cell.verdict = record::Verdict::kValid;
  cell.verdict_reasons = nlohmann::json::array({"ci within target"});
  cell.window = record::MeasuredWindow{5, std::max(0, steps - 5)};
  cell.warmup_rule = "mser5";
  cell.stop_reason = "ci_target";
  cell.stdout_path = "/logs/c" + std::to_string(index) + ".out";
  cell.stderr_path = "/logs/c" + std::to_string(index) + ".err";
  cell.started_wall_ns = 1'700'000'000'000'000'000 + index;
  cell.finished_wall_ns = 1'700'000'001'000'000'000 + index;
  cell.extras = {{"peak_bytes", 123456789}};
  cell.metrics = {{"step_time_mean_ns", 1.5e6 + index, "ns"}, {"samples_per_s", 21333.25, "1/s"}};
  for (int i = 0; i < steps; ++i) {
    StepRow row;
    row.rank = static_cast<std::uint32_t>(i % 2);
    row.record.start_ns = 12'000'000'000LL + i * 1'000'000LL;
    row.record.end_ns = row.record.start_ns + 900'000 + i;
    row.record.samples = 32;
    row.record.present = static_cast<std::uint32_t>(i % 8);
    if (row.record.present & record::kHasDataWait) row.record.data_wait_ns = 1000 + i;
    if (row.record.present & record::kHasCompute) row.record.compute_ns = 800'000 + i;
    if (row.record.present & record::kHasComm) row.record.comm_ns = 50'000 + i;
    cell.steps.push_back(row);
  }
  cell.series = {{12'000'000'000LL, "gpu0.sm_util_pct", 87.5}, {12'100'000'000LL, "proc.rss_bytes", 1.5e9}};
  return cell;
}

}  // namespace dlbench::store::testing
