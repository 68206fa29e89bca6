// What watching a cell costs (issue: the monitor under 1% of one core at 10 Hz):
//  - BM_ProcFsSample/tree_every:N: one ProcFsSampler::Sample() on this machine, the target being
//    this process with kRunnerThreads idle threads (a LibTorch runner has dozens), the tree found
//    again every Nth round (10, the default) or every round (1: every thread's children file read).
//  - BM_RaplSample, BM_NvmlSample: one Sample() of the real RAPL and NVML samplers; where the
//    source is missing the sampler is unsupported and the figure is the cost of saying so (the
//    label shows the state).
//  - BM_NvmlSampleFake8: NvmlSampler's own work for 8 GPUs against the fake NVML (driver time
//    excluded), the part of the cost dlbench controls on an 8-GPU node.
//  - BM_NvmlCall/<function>: each NVML call a round makes, alone, on GPU 0 of the real driver
//    (registered only where libnvidia-ml loads and has a GPU): which calls a round's cost is
//    made of, in wall and CPU time (issue 21: one round cost 8.6 ms wall, 4.4 ms CPU on an H200),
//    and FieldValues(power,energy), the one call that replaces two with nvml_field_values.
//  - BM_NvmlRound/<option set>: one NvmlSampler round on the real driver with each set of
//    SamplerOptions that issue 21 asks about (one call per reading or field values; the slow
//    readings every round or every 10th), averaged over the rounds' cadences.
// After the benchmarks, the same calls and rounds at the monitor's cadence (one every 100 ms, 20
// each): wall, this thread's CPU and the process's CPU per call and per tick, since a driver may
// answer a call made 100 ms after the last differently from one made back to back (session 18
// measured a round at 0.98 ms CPU back to back, about 0.4 ms more than its calls' sum). Then the
// figure the issue asks for: CPU time of the monitor (all default
// samplers) at 10 Hz over 5 s, as % of one core, measured with getrusage while every other
// thread of this process sleeps; once with the defaults, then once per option set.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/text.h"
#include "monitor/fake_nvml.h"
#include "monitor/nvml_sampler.h"
#include "monitor/procfs_sampler.h"
#include "monitor/sampler.h"

namespace {

using namespace dlbench;
using namespace dlbench::monitor;

constexpr int kRunnerThreads = 32;

// Threads that exist and sleep, so the process tree looks like a real runner's.
class IdleThreads {
 public:
  explicit IdleThreads(int n) {
    for (int i = 0; i < n; ++i) {
      threads_.emplace_back([this] {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [this] { return done_; });
      });
    }
  }
  ~IdleThreads() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::vector<std::thread> threads_;
};

void RunSampler(benchmark::State& state, Sampler& sampler) {
  sampler.SetTargetPid(getpid());
  std::vector<SeriesPoint> out;
  out.reserve(256);
  std::int64_t t = 0;
  for (auto _ : state) {
    out.clear();
    sampler.Sample(++t, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["points"] = static_cast<double>(out.size());
  state.SetLabel(sampler.state());
}

void BM_ProcFsSample(benchmark::State& state) {
  IdleThreads threads(kRunnerThreads);
  ProcFsSampler sampler(std::make_shared<RealProcFs>(), 0, 0, static_cast<int>(state.range(0)));
  RunSampler(state, sampler);
}
// The argument is tree_every_n_samples: 10 (the default) against 1 (the tree found every round).
BENCHMARK(BM_ProcFsSample)->ArgName("tree_every")->Arg(10)->Arg(1);

void BM_RaplSample(benchmark::State& state) {
  RaplSampler sampler(std::make_shared<RealProcFs>());
  RunSampler(state, sampler);
}
BENCHMARK(BM_RaplSample);

void BM_NvmlSample(benchmark::State& state) {
  auto sampler = MakeNvmlSampler(std::make_shared<RealProcFs>(), SamplerOptions{});
  RunSampler(state, *sampler);
}
BENCHMARK(BM_NvmlSample);

// The option sets issue 21 compares, the defaults first.
struct OptionSet {
  const char* name;
  SamplerOptions options;
};
std::vector<OptionSet> OptionSets() {
  std::vector<OptionSet> sets;
  for (auto field_values : {SamplerOptions::FieldValues::kOff, SamplerOptions::FieldValues::kAuto}) {
    for (int slow : {1, 10}) {
      SamplerOptions options;
      options.nvml_field_values = field_values;
      options.slow_every_n_samples = slow;
      const bool batched = field_values == SamplerOptions::FieldValues::kAuto;
      sets.push_back({batched ? (slow == 1 ? "field_values,slow_every_1" : "field_values,slow_every_10")
                              : (slow == 1 ? "per_call,slow_every_1" : "per_call,slow_every_10"),
                      options});
    }
  }
  return sets;
}

void BM_NvmlSampleFake8(benchmark::State& state) {
  FakeNvml fake;
  fake.gpus.resize(8);
  SamplerOptions options;
  options.pcie_every_n_samples = 10;
  NvmlSampler sampler(fake.Api(), nullptr, std::make_shared<RealProcFs>(), options);
  RunSampler(state, sampler);
}
BENCHMARK(BM_NvmlSampleFake8);

// One NVML call per iteration; an error return stops the benchmark with NVML's code.
template <typename Call>
void TimeNvmlCall(benchmark::State& state, Call call) {
  for (auto _ : state) {
    const NvmlReturn rc = call();
    if (rc != kNvmlSuccess && rc != kNvmlErrorInsufficientSize) {
      state.SkipWithError(("NVML returned " + std::to_string(rc)).c_str());
      break;
    }
  }
}

// One NVML call a round makes, on GPU 0 of the real driver.
struct NvmlCall {
  std::string name;
  std::function<NvmlReturn()> call;
};

// The real NVML (loaded once) and its GPU 0; null where NVML cannot be used, with why on stderr.
const NvmlApi* RealNvml(NvmlDevice& device_out, std::shared_ptr<void>* library_out = nullptr) {
  static Result<NvmlLibrary> nvml = LoadNvml();
  static NvmlDevice device{};
  static bool usable = [] {
    if (!nvml.ok()) {
      std::fprintf(stderr, "NVML benchmarks: not registered: %s\n", nvml.error().message.c_str());
      return false;
    }
    const NvmlApi& api = nvml->api;
    unsigned int count = 0;
    if (api.init() != kNvmlSuccess || api.device_get_count(&count) != kNvmlSuccess || count == 0 ||
        api.device_get_handle_by_index(0, &device) != kNvmlSuccess) {
      std::fprintf(stderr, "NVML benchmarks: not registered: NVML has no usable GPU 0\n");
      return false;
    }
    return true;
  }();
  if (!usable) return nullptr;
  device_out = device;
  if (library_out != nullptr) *library_out = nvml->library;
  return &nvml->api;
}

// Every call NvmlSampler::Sample makes, and FieldValues(power,energy), the one call that replaces
// two with nvml_field_values; empty where NVML cannot be used.
std::vector<NvmlCall> NvmlCalls() {
  NvmlDevice device{};
  const NvmlApi* found = RealNvml(device);
  if (found == nullptr) return {};
  const NvmlApi& api = *found;
  std::vector<NvmlCall> calls;
  auto add = [&calls](const char* name, bool present, std::function<NvmlReturn()> call) {
    if (present) calls.push_back({name, std::move(call)});
  };
  static NvmlUtilization utilization{};
  static NvmlMemory memory{};
  static unsigned int value = 0;
  static unsigned long long wide = 0;
  static std::vector<NvmlProcessInfo> processes(64);
  add("UtilizationRates", api.device_get_utilization_rates != nullptr,
      [&api, device] { return api.device_get_utilization_rates(device, &utilization); });
  add("MemoryInfo", api.device_get_memory_info != nullptr,
      [&api, device] { return api.device_get_memory_info(device, &memory); });
  add("PowerUsage", api.device_get_power_usage != nullptr,
      [&api, device] { return api.device_get_power_usage(device, &value); });
  add("TotalEnergyConsumption", api.device_get_total_energy_consumption != nullptr,
      [&api, device] { return api.device_get_total_energy_consumption(device, &wide); });
  add("ClockInfo(SM)", api.device_get_clock_info != nullptr,
      [&api, device] { return api.device_get_clock_info(device, kNvmlClockSm, &value); });
  add("ClockInfo(MEM)", api.device_get_clock_info != nullptr,
      [&api, device] { return api.device_get_clock_info(device, kNvmlClockMem, &value); });
  add("Temperature", api.device_get_temperature != nullptr,
      [&api, device] { return api.device_get_temperature(device, kNvmlTemperatureGpu, &value); });
  add("PcieThroughput(TX)", api.device_get_pcie_throughput != nullptr,
      [&api, device] { return api.device_get_pcie_throughput(device, kNvmlPcieTxBytes, &value); });
  add("ClocksEventReasons", api.device_get_clocks_event_reasons != nullptr,
      [&api, device] { return api.device_get_clocks_event_reasons(device, &wide); });
  add("ComputeRunningProcesses", api.device_get_compute_running_processes != nullptr, [&api, device] {
    unsigned int n = static_cast<unsigned int>(processes.size());
    return api.device_get_compute_running_processes(device, &n, processes.data());
  });
  // NVML's own return is SUCCESS when it looked at the fields; each field's code is its own.
  static NvmlFieldValue fields[2] = {};
  add("FieldValues(power,energy)", api.device_get_field_values != nullptr, [&api, device] {
    fields[0] = NvmlFieldValue{};
    fields[0].field_id = kNvmlFiPowerAverage;
    fields[1] = NvmlFieldValue{};
    fields[1].field_id = kNvmlFiTotalEnergyConsumption;
    return api.device_get_field_values(device, 2, fields);
  });
  return calls;
}

// Registers BM_NvmlCall/<function> for each of NvmlCalls() and BM_NvmlRound/<option set>.
void RegisterNvmlCalls() {
  for (const NvmlCall& c : NvmlCalls()) {
    benchmark::RegisterBenchmark((std::string("BM_NvmlCall/") + c.name).c_str(),
                                 [call = c.call](benchmark::State& state) { TimeNvmlCall(state, call); });
  }
  NvmlDevice device{};
  std::shared_ptr<void> library;
  const NvmlApi* api = RealNvml(device, &library);
  if (api == nullptr) return;
  for (const OptionSet& set : OptionSets()) {
    const SamplerOptions options = set.options;
    benchmark::RegisterBenchmark(
        (std::string("BM_NvmlRound/") + set.name).c_str(), [api, library, options](benchmark::State& state) {
          NvmlSampler sampler(*api, library, std::make_shared<RealProcFs>(), options);
          RunSampler(state, sampler);
        });
  }
}

std::int64_t ClockNs(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// What each NVML call costs at the monitor's cadence, one call every 100 ms rather than back to
// back as in BM_NvmlCall (a driver may cache or rate-limit a reading, so a call's cost depends on
// how long ago it was last made): per call, wall time, this thread's CPU time, and the process's
// CPU time over the call and over the whole 100 ms tick that follows it (NVML's own threads, if it
// wakes any, count there). The first row makes no call: the process's CPU per tick at rest.
void PrintCallCostsAtCadence() {
  constexpr int kTicks = 20;
  constexpr auto kInterval = std::chrono::milliseconds(100);
  std::vector<NvmlCall> calls = NvmlCalls();
  if (calls.empty()) return;
  calls.insert(calls.begin(), NvmlCall{"(no call)", [] { return kNvmlSuccess; }});
  NvmlDevice device{};
  std::shared_ptr<void> library;
  const NvmlApi* api = RealNvml(device, &library);
  for (const OptionSet& set : OptionSets()) {
    auto sampler = std::make_shared<NvmlSampler>(*api, library, std::make_shared<RealProcFs>(), set.options);
    auto out = std::make_shared<std::vector<SeriesPoint>>();
    out->reserve(256);
    calls.push_back({std::string("round ") + set.name, [sampler, out] {
                       out->clear();
                       sampler->Sample(1, *out);
                       return kNvmlSuccess;
                     }});
  }
  IdleThreads threads(kRunnerThreads);
  std::printf("\nNVML at the monitor's cadence: one call every 100 ms, %d calls each, means per call (ms)\n",
              kTicks);
  std::printf("%-34s %9s %11s %12s %14s\n", "call", "wall", "thread CPU", "process CPU", "process/tick");
  for (const NvmlCall& c : calls) {
    std::int64_t wall = 0, thread_cpu = 0, process_cpu = 0;
    NvmlReturn last = kNvmlSuccess;
    auto next = std::chrono::steady_clock::now();
    const std::int64_t loop_cpu_before = ClockNs(CLOCK_PROCESS_CPUTIME_ID);
    for (int i = 0; i < kTicks; ++i) {
      next += kInterval;
      std::this_thread::sleep_until(next);
      const std::int64_t w0 = ClockNs(CLOCK_MONOTONIC);
      const std::int64_t t0 = ClockNs(CLOCK_THREAD_CPUTIME_ID);
      const std::int64_t p0 = ClockNs(CLOCK_PROCESS_CPUTIME_ID);
      const NvmlReturn rc = c.call();
      const std::int64_t p1 = ClockNs(CLOCK_PROCESS_CPUTIME_ID);
      const std::int64_t t1 = ClockNs(CLOCK_THREAD_CPUTIME_ID);
      const std::int64_t w1 = ClockNs(CLOCK_MONOTONIC);
      wall += w1 - w0;
      thread_cpu += t1 - t0;
      process_cpu += p1 - p0;
      if (rc != kNvmlSuccess && rc != kNvmlErrorInsufficientSize) last = rc;
    }
    std::this_thread::sleep_until(next + kInterval);
    const std::int64_t loop_cpu = ClockNs(CLOCK_PROCESS_CPUTIME_ID) - loop_cpu_before;
    auto ms = [](std::int64_t total_ns) { return static_cast<double>(total_ns) / kTicks / 1e6; };
    std::printf("%-34s %9.3f %11.3f %12.3f %14.3f%s\n", c.name.c_str(), ms(wall), ms(thread_cpu),
                ms(process_cpu), ms(loop_cpu),
                last == kNvmlSuccess ? "" : ("  NVML returned " + std::to_string(last)).c_str());
  }
}

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto s = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return s(usage.ru_utime) + s(usage.ru_stime);
}

// The window of each monitor figure: DLBENCH_MONITOR_BENCH_S seconds (1 to 600; default 5).
double MonitorSeconds() {
  const char* text = std::getenv("DLBENCH_MONITOR_BENCH_S");
  if (text == nullptr || *text == '\0') return 5;
  const std::optional<double> seconds = ParseNumber(text);
  if (!seconds || *seconds < 1 || *seconds > 600) {
    std::fprintf(stderr, "DLBENCH_MONITOR_BENCH_S is seconds from 1 to 600 (got '%s')\n", text);
    std::exit(2);
  }
  return *seconds;
}

void PrintMonitorCost(const char* label, const SamplerOptions& options) {
  constexpr double kIntervalMs = 100;
  static const double window_s = MonitorSeconds();
  IdleThreads threads(kRunnerThreads);
  MonotonicClock clock;
  Monitor monitor(DefaultSamplers(options), clock, kIntervalMs);
  const double cpu_before = CpuSeconds();
  const auto wall_before = std::chrono::steady_clock::now();
  monitor.Start(getpid());
  std::this_thread::sleep_for(std::chrono::duration<double>(window_s));
  auto points = monitor.Stop();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
  const double cpu = CpuSeconds() - cpu_before;
  std::printf(
      "\nmonitor (%s) at %.0f Hz over %.1f s (target: this process, %d threads): %zu points, CPU %.4f s = "
      "%.3f%% of one core (target < 1%%)\n",
      label, 1000 / kIntervalMs, wall, kRunnerThreads + 1, points.size(), cpu, 100 * cpu / wall);
  const nlohmann::json description = monitor.Describe();
  for (auto it = description.begin(); it != description.end(); ++it) {
    std::printf("  %-7s %s\n", it.key().c_str(), it.value().value("state", "?").c_str());
  }
  const nlohmann::json& nvml = description.value("nvml", nlohmann::json::object());
  if (nvml.contains("facts") && nvml["facts"].contains("field_values")) {
    std::printf("  nvml field values: %s\n", nvml["facts"]["field_values"].dump().c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RegisterNvmlCalls();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  PrintCallCostsAtCadence();
  PrintMonitorCost("defaults", SamplerOptions{});
  for (const OptionSet& set : OptionSets()) PrintMonitorCost(set.name, set.options);
  // The defaults with one setting changed: the ones a round's CPU time is made of at this cadence
  // (PrintCallCostsAtCadence: the energy counter, PCIe throughput's two calls, the slow readings;
  // the procfs tree).
  struct Variant {
    const char* label;
    void (*apply)(SamplerOptions&);
  };
  const Variant variants[] = {
      {"defaults,proc_tree_every_1", [](SamplerOptions& o) { o.proc_tree_every_n_samples = 1; }},
      {"defaults,energy_every_100", [](SamplerOptions& o) { o.energy_every_n_samples = 100; }},
      {"defaults,pcie_every_20", [](SamplerOptions& o) { o.pcie_every_n_samples = 20; }},
      {"defaults,slow_every_5", [](SamplerOptions& o) { o.slow_every_n_samples = 5; }},
      {"defaults again", [](SamplerOptions&) {}},
  };
  for (const Variant& v : variants) {
    SamplerOptions options;
    v.apply(options);
    PrintMonitorCost(v.label, options);
  }
  return 0;
}
