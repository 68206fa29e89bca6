// How much the harness itself costs:
//  - BM_StepLoopOverhead: the per-step cost inside a runner of RunStepLoop with an empty step
//    (two clock reads, the record copy, amortised STEPS encoding and pipe writes). Counter
//    s_per_step (printed with an SI prefix, e.g. 45n = 45 ns) is compared with the 100 ns target.
//  - BM_CellFixedCost: one whole cell of the null runner with a zero-work step, from process start
//    to a committed SQLite transaction (spawn, HELLO, CONFIGURE, READY, a minimal measurement,
//    STOP, DONE, exit, PutCell). Compared with the 0.3 s target.
#include <benchmark/benchmark.h>
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
  for (auto _ : state) {
    auto r = protocol::RunStepLoop(*session, limits, [](record::StepRecord& rec) {
      rec.samples = 1;
      return true;
    });
    steps += r.steps;
  }
  state.counters["s_per_step"] = benchmark::Counter(
      static_cast<double>(steps), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetItemsProcessed(steps);
  ::close(to_orch->second);
  drain.join();
  for (int fd : {to_runner->first, to_runner->second, to_orch->first}) ::close(fd);
}
BENCHMARK(BM_StepLoopOverhead)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();

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
