// How much the harness itself costs:
//  - BM_StepLoopOverhead: the per-step cost inside a runner of RunStepLoop with an empty step
//    (two clock reads, the record copy, amortised STEPS encoding and pipe writes). Counter
//    s_per_step (printed with an SI prefix, e.g. 45n = 45 ns) is compared with the 100 ns target.
//  - BM_CellFixedCost: one whole cell of the null runner with a zero-work step, from process start
//    to a committed SQLite transaction (spawn, HELLO, CONFIGURE, READY, a minimal measurement,
//    STOP, DONE, exit, PutCell). Compared with the 0.3 s target.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "common/subprocess.h"
#include "orchestrator/cell_runner.h"
#include "protocol/runner_session.h"
#include "store/result_store.h"

namespace {

using namespace dlbench;

// This thread's CPU time: the runner's own cost per step, which other processes on a shared
// machine do not inflate as they do the wall-clock figure (s_per_step).
std::int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Sets s_per_step (wall clock) and cpu_s_per_step (this thread's CPU time) for `steps` steps.
void SetPerStepCounters(benchmark::State& state, std::int64_t steps, std::int64_t cpu_ns) {
  state.counters["s_per_step"] = benchmark::Counter(
      static_cast<double>(steps), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["cpu_s_per_step"] =
      steps > 0 ? static_cast<double>(cpu_ns) * 1e-9 / static_cast<double>(steps) : 0.0;
}

void BM_StepLoopOverhead(benchmark::State& state) {
  auto to_runner = MakePipe();
  auto to_orch = MakePipe();
  // The orchestrator's side: drain the pipe as fast as it fills.
  std::thread drain([&] {
    char buf[1 << 16];
    while (::read(to_orch->first, buf, sizeof buf) > 0) {
    }
  });
  auto session = protocol::RunnerSession::FromFds(to_runner->first, to_orch->second);
  protocol::RunnerLimits limits;
  limits.max_steps = state.range(0);
  limits.max_time_s = 1e9;
  std::int64_t steps = 0;
  const std::int64_t cpu0 = ThreadCpuNs();
  for (auto _ : state) {
    auto r = protocol::RunStepLoop(*session, limits, [](record::StepRecord& rec) {
      rec.samples = 1;
      return true;
    });
    steps += r.steps;
  }
  SetPerStepCounters(state, steps, ThreadCpuNs() - cpu0);
  state.SetItemsProcessed(steps);
  ::close(to_orch->second);
  drain.join();
  for (int fd : {to_runner->first, to_runner->second, to_orch->first}) ::close(fd);
}
BENCHMARK(BM_StepLoopOverhead)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();

// The floor: two clock reads per step and nothing else.
void BM_TwoClockReads(benchmark::State& state) {
  std::int64_t steps = 0;
  const std::int64_t cpu0 = ThreadCpuNs();
  for (auto _ : state) {
    for (std::int64_t i = 0; i < state.range(0); ++i) {
      const std::int64_t t0 = MonotonicNowNs();
      const std::int64_t t1 = MonotonicNowNs();
      benchmark::DoNotOptimize(t0);
      benchmark::DoNotOptimize(t1);
    }
    steps += state.range(0);
  }
  SetPerStepCounters(state, steps, ThreadCpuNs() - cpu0);
}
BENCHMARK(BM_TwoClockReads)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();

// The step loop writing to /dev/null: the loop and the record without the pipe's cost.
void BM_StepLoopToDevNull(benchmark::State& state) {
  auto to_runner = MakePipe();
  const int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  auto session = protocol::RunnerSession::FromFds(to_runner->first, null_fd);
  protocol::RunnerLimits limits;
  limits.max_steps = state.range(0);
  limits.max_time_s = 1e9;
  std::int64_t steps = 0;
  const std::int64_t cpu0 = ThreadCpuNs();
  for (auto _ : state) {
    auto r = protocol::RunStepLoop(*session, limits, [](record::StepRecord& rec) {
      rec.samples = 1;
      return true;
    });
    steps += r.steps;
  }
  SetPerStepCounters(state, steps, ThreadCpuNs() - cpu0);
  for (int fd : {to_runner->first, to_runner->second, null_fd}) ::close(fd);
}
BENCHMARK(BM_StepLoopToDevNull)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CellFixedCost(benchmark::State& state) {
  const auto dir = std::filesystem::temp_directory_path() / ("dlbench_bench_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto store = store::OpenSqliteStore((dir / "bench.db").string());
  if (!store.ok()) {
    state.SkipWithError(store.error().message.c_str());
    return;
  }
  record::RunRecord run;
  run.name = "bench";
  run.environment_hash = "bench";
  auto run_id = (*store)->BeginRun(run);
  auto runner = orchestrator::ResolveRunner(config::RunnerSpec{"null", {}}, DLBENCH_BIN_DIR);
  if (!runner.ok() || !run_id.ok()) {
    state.SkipWithError("cannot prepare the null runner or the store");
    return;
  }
  orchestrator::CellRunOptions options;
  options.runner = *runner;
  options.log_dir = dir.string();
  options.timeout_s = 30;
  options.measure.min_steps = 10;
  options.measure.min_time_s = 0.0;
  options.measure.max_time_s = 1.0;
  options.measure.min_warmup_steps = 0;
  int i = 0;
  for (auto _ : state) {
    plan::Cell cell;
    cell.index = i;
    cell.id = "cell#" + std::to_string(i++);
    cell.key = "cell";
    cell.params = {{"step_ms", 0.0}, {"batch_size", 1}};
    auto rec = orchestrator::RunCell(cell, options);
    rec.run_id = *run_id;
    if (rec.outcome != record::Outcome::kOk || !(*store)->PutCell(rec).ok()) {
      state.SkipWithError(("cell did not end ok: " + rec.message).c_str());
      break;
    }
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_CellFixedCost)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(20);

}  // namespace

BENCHMARK_MAIN();
