// How much the harness itself costs (docs/benchmarks.md "The harness's own overhead"):
//  - BM_StepLoopOverhead: the per-step cost inside a runner of RunStepLoop with an empty step
//    (two clock reads, the record written in place, amortised STEPS header and pipe writes), with
//    another thread draining the pipe; vmsplice:1 as runners send (frames handed to the pipe by
//    reference), vmsplice:0 copied into it as before session 22. Counters s_per_step (wall clock, printed
//    with an SI prefix: 45n = 45 ns) and cpu_s_per_step (the loop thread's CPU time), against the 50 ns
//    target.
//  - BM_TwoClockReads: the floor, two CLOCK_MONOTONIC reads per step and nothing else.
//  - BM_StepLoopToDevNull: the step loop writing to /dev/null: the loop without the pipe's cost.
//  - BM_CellFixedCost: one whole cell of the null runner, from RunCell to a committed SQLite
//    transaction (spawn, HELLO, CONFIGURE, READY, a minimal measurement, STOP, DONE, exit,
//    leftovers, analysis, PutCell), with where the time went. virtual:0 steps zero-work steps in
//    real time (a thousand or more stored), virtual:1 1 ms steps on the virtual clock (about a
//    hundred stored): the fixed cost, against the 5 ms target.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "common/subprocess.h"
#include "orchestrator/cell_runner.h"
#include "protocol/runner_session.h"
#include "record/metrics.h"
#include "record/records.h"
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

// With --benchmark_repetitions=N, the fastest repetition next to the mean and median: on a shared
// machine the minimum is the figure least inflated by other processes.
double Min(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end()); }

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
  // vmsplice:0 writes the frames by copy, as before session 22 (DLBENCH_NO_VMSPLICE=1).
  if (state.range(1) == 0) ::setenv("DLBENCH_NO_VMSPLICE", "1", 1);
  auto session = protocol::RunnerSession::FromFds(to_runner->first, to_orch->second);
  ::unsetenv("DLBENCH_NO_VMSPLICE");
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
  // The share of STEPS frames the pipe took by reference (the rest were copied into it).
  const auto counts = session->frame_counts();
  const double frames = static_cast<double>(counts.spliced + counts.copied);
  state.counters["spliced_share"] = frames > 0 ? static_cast<double>(counts.spliced) / frames : 0.0;
  ::close(to_orch->second);
  drain.join();
  for (int fd : {to_runner->first, to_runner->second, to_orch->first}) ::close(fd);
}
BENCHMARK(BM_StepLoopOverhead)
    ->ArgNames({"steps", "vmsplice"})
    ->Args({1 << 20, 1})
    ->Args({1 << 20, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->ComputeStatistics("min", Min);

// The floor: two clock reads per step and nothing else.
// NOLINTNEXTLINE(readability-identifier-naming): Google Benchmark's BM_ names
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
BENCHMARK(BM_TwoClockReads)
    ->Arg(1 << 20)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->ComputeStatistics("min", Min);

// The step loop writing to /dev/null: the loop and the record without the pipe's cost.
// NOLINTNEXTLINE(readability-identifier-naming): Google Benchmark's BM_ names
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
BENCHMARK(BM_StepLoopToDevNull)
    ->Arg(1 << 20)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->ComputeStatistics("min", Min);

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
  // Where a cell's time goes (averages per cell, seconds): spawn to HELLO (process start and
  // library loading), HELLO to the first step (CONFIGURE, the runner's setup, READY), the steps,
  // the last step's end to the runner's exit as the driver saw it (STOP, DONE, exit; with virtual
  // steps, from the first step's start, the steps included), RunCell's
  // own time outside the runner's life (spawning, logs, leftovers, analysis), the store's
  // transaction, and how many step records the cell stored.
  double to_hello_s = 0, setup_s = 0, stepping_s = 0, after_steps_s = 0, outside_s = 0, store_s = 0,
         stored_steps = 0;
  int i = 0;
  for (auto _ : state) {
    plan::Cell cell;
    cell.index = i;
    cell.id = "cell#" + std::to_string(i++);
    cell.key = "cell";
    cell.params = {{"step_ms", 0.0}, {"batch_size", 1}};
    // virtual: 1 ms steps on the null runner's virtual clock, so a STEPS frame holds 50 of them
    // and the cell stores about a hundred whatever the host's load; zero-work real steps fill
    // 1,024-record frames, and the slower the orchestrator, the more of them a cell stores.
    if (state.range(0) == 1) cell.params = {{"step_ms", 1.0}, {"virtual_time", true}, {"batch_size", 1}};
    const std::int64_t t0 = MonotonicNowNs();
    auto rec = orchestrator::RunCell(cell, options);
    const std::int64_t t1 = MonotonicNowNs();
    rec.run_id = *run_id;
    if (rec.outcome != record::Outcome::kOk || rec.steps.empty() || !(*store)->PutCell(rec).ok()) {
      state.SkipWithError(("cell did not end ok: " + rec.message).c_str());
      break;
    }
    store_s += NsToSeconds(MonotonicNowNs() - t1);
    stored_steps += static_cast<double>(rec.steps.size());
    const double hello = record::MetricValue(rec, record::metric::kTimeToHelloS).value_or(0);
    const double setup = record::MetricValue(rec, record::metric::kSetupS).value_or(0);
    const double wall = record::MetricValue(rec, record::metric::kCellWallS).value_or(0);
    // Virtual steps' times are not real ones: their span counts as part of d.
    const double steps =
        state.range(0) == 1 ? 0.0
                            : NsToSeconds(rec.steps.back().record.end_ns - rec.steps.front().record.start_ns);
    to_hello_s += hello;
    setup_s += setup;
    stepping_s += steps;
    after_steps_s += wall - hello - setup - steps;
    outside_s += NsToSeconds(t1 - t0) - wall;
  }
  for (const auto& [name, total] : {std::pair{"a_spawn_to_hello_s", to_hello_s},
                                    {"b_hello_to_first_step_s", setup_s},
                                    {"c_steps_s", stepping_s},
                                    {"d_last_step_to_exit_s", after_steps_s},
                                    {"e_driver_outside_runner_s", outside_s},
                                    {"f_store_s", store_s},
                                    {"stored_steps", stored_steps}}) {
    state.counters[name] = benchmark::Counter(total, benchmark::Counter::kAvgIterations);
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_CellFixedCost)
    ->ArgName("virtual")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(20)
    ->ComputeStatistics("min", Min);

}  // namespace

BENCHMARK_MAIN();
