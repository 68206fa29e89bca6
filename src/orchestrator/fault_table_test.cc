// Every fault dlbench-null can inject (runners/null/faults.h), run through the real cell runner:
// each row of docs/protocol.md's outcome table, the wrong-typed fields, and what a runner does to
// try to kill, hang or bloat the driver. The runner reports its steps in virtual time, so no row
// depends on how fast this machine is.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include "orchestrator/cell_runner.h"
#include "record/metrics.h"

namespace dlbench::orchestrator {
namespace {

struct FaultCase {
  std::string name;  // the test's name
  nlohmann::json params;
  std::vector<std::string> argv_extra;  // faults of HELLO itself are dlbench-null options
  record::Outcome outcome;
  std::vector<std::string> message_has;
  std::vector<std::string> message_lacks = {};
};

void PrintTo(const FaultCase& c, std::ostream* os) { *os << c.name; }

std::filesystem::path LogDir(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("dlbench_fault_" + std::to_string(::getpid()) + "_" + name);
}

CellRunOptions Options(const std::string& log_dir, const std::vector<std::string>& argv_extra) {
  CellRunOptions o;
  auto runner = ResolveRunner(config::RunnerSpec{"null", {}}, DLBENCH_BIN_DIR);
  EXPECT_TRUE(runner.ok());
  o.runner = *runner;
  o.runner.argv.insert(o.runner.argv.end(), argv_extra.begin(), argv_extra.end());
  o.log_dir = log_dir;
  o.timeout_s = 20;
  o.measure.min_steps = 20;
  o.measure.min_time_s = 0.05;
  o.measure.max_time_s = 2.0;
  o.measure.target_rel_ci = 0.05;
  o.stop_grace_s = 0.5;
  o.exit_grace_s = 0.5;
  o.log_head_bytes = 256 << 10;
  o.log_tail_bytes = 64 << 10;
  o.limits.max_records_after_stop = 100'000;
  return o;
}

record::CellRecord RunFault(const std::string& name, nlohmann::json params,
                            const std::vector<std::string>& argv_extra,
                            const std::function<void(CellRunOptions&)>& adjust = {}) {
  const std::filesystem::path dir = LogDir(name);
  std::filesystem::create_directories(dir);
  CellRunOptions o = Options(dir.string(), argv_extra);
  if (adjust) adjust(o);
  plan::Cell cell;
  cell.index = 0;
  cell.id = "c#r0";
  cell.key = "c";
  cell.seed = 7;
  params["virtual_time"] = true;
  if (!params.contains("step_ms")) params["step_ms"] = 1.0;
  if (!params.contains("inject_at_step")) params["inject_at_step"] = 5;
  for (auto& [k, v] : params.items()) cell.params[k] = v;
  return RunCell(cell, o);
}

class FaultTableTest : public ::testing::TestWithParam<FaultCase> {
 protected:
  void TearDown() override { std::filesystem::remove_all(LogDir(GetParam().name)); }
};

TEST_P(FaultTableTest, EndsWithItsOutcomeAndMessage) {
  const FaultCase& c = GetParam();
  const record::CellRecord rec = RunFault(c.name, c.params, c.argv_extra, [&](CellRunOptions& o) {
    if (c.name == "hang") o.timeout_s = 1;
    // The runner exits 0.5 s after it closed its pipe: a grace of the same 0.5 s would race it.
    if (c.name == "close_protocol_exit") o.exit_grace_s = 5;
  });
  EXPECT_EQ(rec.outcome, c.outcome) << rec.message;
  for (const auto& part : c.message_has) EXPECT_NE(rec.message.find(part), std::string::npos) << rec.message;
  for (const auto& part : c.message_lacks)
    EXPECT_EQ(rec.message.find(part), std::string::npos) << rec.message;
}

std::vector<FaultCase> Rows() {
  using O = record::Outcome;
  std::vector<FaultCase> rows = {
      // DONE, exit 0, enough data: ok.
      {"none", {{"inject", "none"}}, {}, O::kOk, {}},
      {"leak", {{"inject", "leak"}}, {}, O::kOk, {}},
      // Too little data: invalid.
      {"too_little_data", {{"inject", "none"}, {"step_ms", 0.0}}, {}, O::kInvalid, {"too little data"}},
      // ERROR: its kind.
      {"oom", {{"inject", "oom"}}, {}, O::kOom, {"out of memory"}},
      // A signal the runner died of, not one dlbench sent: crashed.
      {"crash", {{"inject", "crash"}}, {}, O::kCrashed, {"killed by SIGSEGV", "crashing on purpose"}},
      {"sigterm_self", {{"inject", "sigterm_self"}}, {}, O::kCrashed, {"killed by SIGTERM"}},
      // A non-zero exit: error with the code and stderr.
      {"exit", {{"inject", "exit"}, {"exit_code", 7}}, {}, O::kError, {"exit code 7", "on purpose"}},
      // No DONE before timeout_s: timeout.
      {"hang", {{"inject", "hang"}}, {}, O::kTimeout, {"no result within timeout_s=1"}},
      {"hang_after_stop",
       {{"inject", "hang_after_stop"}},
       {},
       O::kTimeout,
       {"did not stop within the grace period after STOP"}},
      // Malformed, out of order, or exit without DONE: invalid.
      {"garbage", {{"inject", "garbage"}}, {}, O::kInvalid, {"protocol violation"}},
      {"no_hello",
       {},
       {"--inject", "no_hello"},
       O::kInvalid,
       {"protocol violation: first message was READY, not HELLO"}},
      {"wrong_protocol",
       {},
       {"--inject", "wrong_protocol"},
       O::kInvalid,
       {"runner speaks protocol 2, dlbench speaks 1"}},
      {"hello_twice", {{"inject", "hello_twice"}}, {}, O::kInvalid, {"protocol violation: HELLO sent twice"}},
      {"steps_before_ready",
       {{"inject", "steps_before_ready"}},
       {},
       O::kInvalid,
       {"protocol violation: STEPS before READY"}},
      {"ready_twice", {{"inject", "ready_twice"}}, {}, O::kInvalid, {"protocol violation: READY sent twice"}},
      {"unknown_frame",
       {{"inject", "unknown_frame"}},
       {},
       O::kInvalid,
       {"protocol violation: unknown frame type 77"}},
      {"oversized_frame",
       {{"inject", "oversized_frame"}},
       {},
       O::kInvalid,
       {"protocol violation", "exceeds the limit"}},
      {"bad_json",
       {{"inject", "bad_json"}},
       {},
       O::kInvalid,
       {"protocol violation: MEMORY payload is not valid JSON"}},
      {"runner_stop",
       {{"inject", "runner_stop"}},
       {},
       O::kInvalid,
       {"runner sent STOP, which only the orchestrator sends"}},
      {"step_backwards",
       {{"inject", "step_backwards"}},
       {},
       O::kInvalid,
       {"STEPS: rank 0 step 5 ends before it starts"}},
      {"step_overlap",
       {{"inject", "step_overlap"}},
       {},
       O::kInvalid,
       {"STEPS: rank 0 step 5 starts at", "before step 4 ended"}},
      {"steps_after_done",
       {{"inject", "steps_after_done"}},
       {},
       O::kInvalid,
       {"protocol violation: STEPS after DONE"}},
      {"done_twice", {{"inject", "done_twice"}}, {}, O::kInvalid, {"protocol violation: DONE after DONE"}},
      // Without --runner-reuse the driver reads on after DONE until the runner exits (under reuse
      // the pool finds the frame: ReuseE2E.AFrameSentAfterDone...).
      {"late_steps_after_done",
       {{"inject", "late_steps_after_done"}},
       {},
       O::kInvalid,
       {"protocol violation: STEPS after DONE"}},
      // The same without --runner-reuse: the pipe's end lets the frame out (under reuse the next
      // cell's CONFIGURE does, and that cell runs in a fresh process: ReuseE2E.AFrameSentAfter...).
      {"late_steps_after_configure",
       {{"inject", "late_steps_after_configure"}},
       {},
       O::kInvalid,
       {"protocol violation: STEPS after DONE"}},
      {"frame_after_error",
       {{"inject", "frame_after_error"}},
       {},
       O::kInvalid,
       {"protocol violation: STEPS after ERROR"}},
      {"exit_without_done",
       {{"inject", "exit_without_done"}},
       {},
       O::kInvalid,
       {"runner exited without sending DONE"}},
      // A closed protocol pipe is the runner's doing; the signal that then ends it is dlbench's.
      {"close_protocol",
       {{"inject", "close_protocol"}},
       {},
       O::kInvalid,
       {"closed its protocol pipe without sending DONE and was still running"},
       {"crashed", "killed by SIGTERM"}},
      {"close_protocol_exit",
       {{"inject", "close_protocol_exit"}},
       {},
       O::kInvalid,
       {"runner exited without sending DONE"}},
      // The runner's own ceilings: it never hears STOP (the write gets EPIPE, not SIGPIPE).
      {"close_commands", {{"inject", "close_commands"}}, {}, O::kOk, {}},
      // A runner that ignores STOP and floods, or floods JSON: invalid with the limit.
      {"step_flood",
       {{"inject", "step_flood"}},
       {},
       O::kInvalid,
       {"more than 100000 step records after STOP"}},
      {"json_flood", {{"inject", "json_flood"}}, {}, O::kInvalid, {"JSON messages exceed 16777216 bytes"}},
      // A load cell's query records that are not each issued query once (inject_at_step is the id).
      {"drop_query",
       {{"inject", "drop_query"}, {"scenario", "infer"}, {"load", "single_stream"}},
       {},
       O::kInvalid,
       {"query records are not each issued query once: 1 issued query never arrived (query id 5)"}},
      {"duplicate_query",
       {{"inject", "duplicate_query"}, {"scenario", "infer"}, {"load", "single_stream"}},
       {},
       O::kInvalid,
       {"1 record repeated a query id already received (query id 5)"}},
  };
  // Every field with the wrong type: invalid, naming the frame and the field.
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"HELLO.protocol", "HELLO.protocol must be an integer"},
      {"HELLO.pid", "HELLO.pid must be an integer >= 0"},
      {"HELLO.runner", "HELLO.runner must be a string"},
      {"HELLO.framework", "HELLO.framework must be an object"},
      {"HELLO.devices", "HELLO.devices must be an array"},
      {"HELLO.multi_cell", "HELLO.multi_cell must be true or false"},
      {"READY.effective", "READY.effective must be an object"},
      {"READY.samples_per_step", "READY.effective.samples_per_step must be an integer >= 1"},
      {"READY.device_uuids", "READY.effective.device_uuids must be an array"},
      {"READY.virtual_time", "READY.effective.virtual_time must be true or false"},
      {"MEMORY.label", "MEMORY.label must be a string"},
      {"MEMORY.bytes", "MEMORY.host_rss_bytes must be a number >= 0"},
      {"EXTRAS.metrics", "EXTRAS.metrics must be an array"},
      {"EXTRAS.metric", "EXTRAS.metrics[0] must be an object"},
      {"EXTRAS.name", "EXTRAS.metrics[0].name must be a string"},
      {"EXTRAS.value", "EXTRAS.metrics[0].value must be a number"},
      {"EXTRAS.unit", "EXTRAS.metrics[0].unit must be a string"},
      {"EXTRAS.info", "EXTRAS.info must be an object"},
      {"ERROR.kind", "ERROR.kind must be a string"},
      {"ERROR.message", "ERROR.message must be a string"},
      {"ERROR.requested_bytes", "ERROR.requested_bytes must be a number >= 0"},
      {"DONE.reason", "DONE.reason must be a string"},
      {"DONE.steps", "DONE.steps must be an integer >= 0"},
  };
  for (const auto& [field, message] : fields) {
    std::string name = "wrong_type_" + field;
    for (char& ch : name) ch = ch == '.' ? '_' : ch;
    FaultCase row{name, {}, {}, record::Outcome::kInvalid, {"protocol violation: " + message}};
    if (field.rfind("HELLO.", 0) == 0) {
      row.argv_extra = {"--inject", "wrong_type", "--fault-field", field};
    } else {
      row.params = {{"inject", "wrong_type"}, {"fault_field", field}};
    }
    rows.push_back(row);
  }
  return rows;
}

INSTANTIATE_TEST_SUITE_P(Faults, FaultTableTest, ::testing::ValuesIn(Rows()),
                         [](const ::testing::TestParamInfo<FaultCase>& info) { return info.param.name; });

bool ProcessGone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

// The child keeps the runner's pipes open after the runner sent DONE and exited 0: the cell is
// ok (today's code waited for the pipe's end until timeout_s) and the child is killed.
TEST(RunnerChildrenTest, AChildHoldingThePipesNeitherDelaysNorSurvivesTheCell) {
  for (const char* fault : {"child_holds_pipe", "setsid_child"}) {
    const record::CellRecord rec =
        RunFault(fault, {{"inject", fault}}, {}, [](CellRunOptions& o) { o.timeout_s = 30; });
    ASSERT_EQ(rec.outcome, record::Outcome::kOk) << fault << ": " << rec.message;
    ASSERT_TRUE(rec.extras.contains("info")) << rec.extras.dump();
    const pid_t child = rec.extras["info"]["child_pid"].get<pid_t>();
    ASSERT_GT(child, 0);
    EXPECT_TRUE(ProcessGone(child)) << fault << ": the runner's child " << child << " outlived the cell";
    ASSERT_TRUE(rec.extras["warnings"].is_array()) << rec.extras.dump();
    EXPECT_NE(rec.extras["warnings"].dump().find("killed 1 process the runner left running"),
              std::string::npos)
        << rec.extras["warnings"].dump();
    std::filesystem::remove_all(LogDir(fault));
  }
}

// A flood of stdout or stderr is capped in the log (head, marker, tail) and costs the driver only
// the tail in memory; the cell itself is fine.
TEST(RunnerLogsTest, AFloodedStreamIsCappedInItsLog) {
  for (const char* stream : {"stderr", "stdout"}) {
    const std::string fault = std::string(stream) + "_flood";
    const record::CellRecord rec = RunFault(fault, {{"inject", fault}, {"flood_bytes", 3 << 20}}, {});
    ASSERT_EQ(rec.outcome, record::Outcome::kOk) << rec.message;
    const nlohmann::json& facts = rec.extras["logs"][stream];
    EXPECT_GE(facts["bytes"].get<std::int64_t>(), 3 << 20) << facts.dump();
    EXPECT_GT(facts["dropped_bytes"].get<std::int64_t>(), 0) << facts.dump();
    const std::string path = std::string(stream) == "stderr" ? rec.stderr_path : rec.stdout_path;
    const auto size = std::filesystem::file_size(path);
    EXPECT_LE(size, (256u << 10) + (64u << 10) + 200u) << path;
    EXPECT_GE(size, (256u << 10) + (64u << 10)) << path;
    std::filesystem::remove_all(LogDir(fault));
  }
}

// A log on a full disk (here /dev/full, as a full filesystem answers) is reported with the cell.
TEST(RunnerLogsTest, ALogThatCannotBeWrittenIsReported) {
  const std::filesystem::path dir = LogDir("full_disk");
  std::filesystem::create_directories(dir);
  std::filesystem::create_symlink("/dev/full", dir / "cell-0000.stderr.log");
  const record::CellRecord rec =
      RunFault("full_disk", {{"inject", "stderr_flood"}, {"flood_bytes", 4096}}, {});
  EXPECT_EQ(rec.outcome, record::Outcome::kOk) << rec.message;
  EXPECT_EQ(rec.extras["logs"]["stderr"]["error"], "No space left on device after 0 bytes")
      << rec.extras.dump();
  EXPECT_NE(rec.extras["warnings"].dump().find("the runner's stderr could not be logged to"),
            std::string::npos)
      << rec.extras.dump();
  std::filesystem::remove_all(dir);
}

// The monitor analysis of a virtual-time cell is skipped with a note: its samples cover a few real
// milliseconds of a window that claims seconds.
TEST(VirtualTimeTest, StepTimesAreExactAndTheMonitorAnalysisIsSkipped) {
  const record::CellRecord rec = RunFault("virtual", {{"inject", "none"}, {"step_ms", 4.0}}, {});
  ASSERT_EQ(rec.outcome, record::Outcome::kOk) << rec.message;
  EXPECT_EQ(rec.effective["virtual_time"], true);
  EXPECT_DOUBLE_EQ(record::MetricValue(rec, record::metric::kStepTimeMeanNs).value_or(0), 4e6);
  EXPECT_DOUBLE_EQ(record::MetricValue(rec, record::metric::kSamplesPerS).value_or(0), 250.0);
  EXPECT_EQ(rec.extras["monitor"]["analysis"],
            "skipped: the runner reported virtual step times (virtual_time)");
}

}  // namespace
}  // namespace dlbench::orchestrator
