// What the load generator itself costs, in-process with a null system under test that completes
// each query inside IssueQuery (LoadGen's perftests_null_sut.cc), and the records going the
// runner's way: QUERIES frames through ProtocolQuerySink into a pipe drained by another thread.
//  - BM_OfflineQueries: offline with one sample per query, queries issued back to back on one
//    thread: the whole per-query path (schedule, timestamps, IssueQuery, completion, record,
//    flush). Counter queries_per_s (target >= 2 M/s).
//  - BM_OfflineSamples: one offline query of 2^20 samples completed one sample at a time
//    (LoadGen's offline shape): the completion path alone. Counter samples_per_s.
//  - BM_SingleStreamAddedLatency: single_stream; added_latency is the mean recorded latency
//    (completed - scheduled), which with a null system under test is the generator's own share
//    of every latency it reports (target < 1 us); cycle is the wall time per query including
//    the generator's work between queries (LoadGen's "QPS w/ loadgen overhead").
//  - BM_ServerIssueDelay: server at 100k queries/s; issue_delay is the mean issued - scheduled,
//    the lateness of the issue thread that counts against a system under test.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "common/subprocess.h"
#include "load/load_generator.h"
#include "load/protocol_sink.h"

namespace {

using namespace dlbench;

class NullSut final : public load::SystemUnderTest {
 public:
  explicit NullSut(bool per_sample) : per_sample_(per_sample) {}
  void IssueQuery(const load::Query& q, load::QueryCompleter& c) override {
    if (!per_sample_) {
      c.Complete(q.id, timing_);
      return;
    }
    for (std::uint32_t i = 0; i < q.samples; ++i) c.CompleteSamples(q.id, 1, timing_);
  }
  void FlushQueries() override {}

 private:
  bool per_sample_;
  load::QueryTiming timing_;
};

class Library final : public load::QuerySampleLibrary {
 public:
  std::uint32_t SampleCount() const override { return 1024; }
};

// The runner's sink into a pipe that another thread drains, plus the sums the counters need.
class PipeSink final : public load::QueryRecordSink {
 public:
  PipeSink() {
    auto pipe = MakePipe();
    read_fd_ = pipe->first;
    write_fd_ = pipe->second;
    drain_ = std::thread([this] {
      char buf[1 << 16];
      while (::read(read_fd_, buf, sizeof buf) > 0) {
      }
    });
    sink_ = std::make_unique<load::ProtocolQuerySink>(write_fd_, 0, nullptr);
  }
  ~PipeSink() override {
    sink_.reset();
    ::close(write_fd_);
    drain_.join();
    ::close(read_fd_);
  }
  void Write(const record::QueryRecord* r, std::size_t n) override {
    for (std::size_t i = 0; i < n; ++i) {
      latency_ns += static_cast<double>(r[i].completed_ns - r[i].scheduled_ns);
      issue_delay_ns += static_cast<double>(r[i].issued_ns - r[i].scheduled_ns);
    }
    records += n;
    sink_->Write(r, n);
  }
  bool StopRequested() override { return false; }
  double latency_ns = 0;
  double issue_delay_ns = 0;
  std::uint64_t records = 0;

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
  std::thread drain_;
  std::unique_ptr<load::ProtocolQuerySink> sink_;
};

load::EffectiveLoadSettings Settings(load::Scenario scenario, std::uint32_t samples) {
  load::EffectiveLoadSettings s;
  s.scenario = scenario;
  s.samples_per_query = samples;
  s.target_qps = 100'000;
  s.schedule_seed = 1;
  s.sample_seed = 2;
  return s;
}

void RunQueries(benchmark::State& state, load::Scenario scenario, std::uint32_t samples, bool per_sample,
                std::uint64_t queries_per_run) {
  load::MonotonicLoadClock clock;
  load::LoadGenerator generator(Settings(scenario, samples), clock);
  NullSut sut(per_sample);
  Library library;
  PipeSink sink;
  load::RunLimits limits;
  limits.max_queries = queries_per_run;
  std::uint64_t queries = 0;
  std::int64_t wall_ns = 0;
  for (auto _ : state) {
    const std::int64_t t0 = MonotonicNowNs();
    const load::RunResult r = generator.Run(sut, library, sink, limits);
    wall_ns += MonotonicNowNs() - t0;
    queries += r.issued;
    if (r.end != load::RunEnd::kMaxQueries) state.SkipWithError(r.error.c_str());
  }
  const double n = static_cast<double>(queries);
  state.counters["queries_per_s"] = benchmark::Counter(n, benchmark::Counter::kIsRate);
  state.counters["samples_per_s"] = benchmark::Counter(n * samples, benchmark::Counter::kIsRate);
  state.counters["cycle"] = static_cast<double>(wall_ns) * 1e-9 / n;
  state.counters["added_latency"] = sink.latency_ns * 1e-9 / static_cast<double>(sink.records);
  state.counters["issue_delay"] = sink.issue_delay_ns * 1e-9 / static_cast<double>(sink.records);
}

void BM_OfflineQueries(benchmark::State& state) {
  RunQueries(state, load::Scenario::kOffline, 1, false, static_cast<std::uint64_t>(state.range(0)));
}
BENCHMARK(BM_OfflineQueries)->Arg(1 << 21)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_OfflineSamples(benchmark::State& state) {
  RunQueries(state, load::Scenario::kOffline, 1u << 20, true, 1);
}
BENCHMARK(BM_OfflineSamples)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SingleStreamAddedLatency(benchmark::State& state) {
  RunQueries(state, load::Scenario::kSingleStream, 1, false, static_cast<std::uint64_t>(state.range(0)));
}
BENCHMARK(BM_SingleStreamAddedLatency)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ServerIssueDelay(benchmark::State& state) {
  RunQueries(state, load::Scenario::kServer, 1, false, static_cast<std::uint64_t>(state.range(0)));
}
BENCHMARK(BM_ServerIssueDelay)->Arg(100'000)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
