// The NVML sampler against a fake NVML served through real C entry points: units, unsupported
// readings, device selection, the runner's process memory, and the "unsupported" states.
#include "monitor/nvml_sampler.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "monitor/fake_nvml.h"
#include "monitor/fake_procfs.h"
#include "monitor/gpu_attribution.h"

namespace dlbench::monitor {
namespace {

std::map<std::string, double> Last(const std::vector<SeriesPoint>& points) {
  std::map<std::string, double> out;
  for (const auto& p : points) out[p.series] = p.value;
  return out;
}

std::unique_ptr<NvmlSampler> Make(const FakeNvml& fake, std::shared_ptr<const ProcFs> fs = nullptr,
                                  SamplerOptions options = {}) {
  if (!fs) fs = std::make_shared<FakeProcFs>();
  return std::make_unique<NvmlSampler>(fake.Api(), nullptr, std::move(fs), options);
}

// Runner 100 with child 101 on the GPU; 200 is another user's process.
std::shared_ptr<FakeProcFs> GpuProcFs() {
  auto fs = std::make_shared<FakeProcFs>();
  auto stat = [](int pid, int ppid) {
    std::string line = std::to_string(pid) + " (p) S " + std::to_string(ppid);
    for (int i = 0; i < 48; ++i) line += " 0";
    return line;
  };
  fs->Set("/proc/100/stat", stat(100, 1));
  fs->Set("/proc/101/stat", stat(101, 100));
  fs->Set("/proc/200/stat", stat(200, 1));
  for (int pid = 300; pid < 310; ++pid) fs->Set("/proc/" + std::to_string(pid) + "/stat", stat(pid, 101));
  return fs;
}

TEST(NvmlSamplerTest, EverySeriesWithItsUnit) {
  FakeNvml fake;
  FakeGpu& g = fake.gpus[0];
  g.sm_util_pct = 97;
  g.mem_util_pct = 41;
  g.mem_used_bytes = 80ull << 30;
  g.power_mw = 695500;
  g.energy_mj = 123456789;
  g.sm_clock_mhz = 1755;
  g.mem_clock_mhz = 2619;
  g.temp_c = 61;
  g.pcie_tx_kb_per_s = 1000;
  g.pcie_rx_kb_per_s = 2;
  g.clocks_event_reasons = kClocksEventSwPowerCap;
  auto sampler = Make(fake);
  ASSERT_EQ(sampler->state(), "ok");
  std::vector<SeriesPoint> out;
  sampler->Sample(99, out);
  auto m = Last(out);
  EXPECT_EQ(m.at("gpu0.sm_util_pct"), 97);
  EXPECT_EQ(m.at("gpu0.mem_util_pct"), 41);
  EXPECT_EQ(m.at("gpu0.mem_used_bytes"), 80.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(m.at("gpu0.power_w"), 695.5);
  EXPECT_DOUBLE_EQ(m.at("gpu0.energy_j"), 123456.789);
  EXPECT_EQ(m.at("gpu0.sm_clock_mhz"), 1755);
  EXPECT_EQ(m.at("gpu0.mem_clock_mhz"), 2619);
  EXPECT_EQ(m.at("gpu0.temp_c"), 61);
  EXPECT_EQ(m.at("gpu0.pcie_tx_bytes_per_s"), 1000.0 * 1024);
  EXPECT_EQ(m.at("gpu0.pcie_rx_bytes_per_s"), 2.0 * 1024);
  EXPECT_EQ(m.at("gpu0.clocks_event_reasons"), 4);
  for (const auto& p : out) EXPECT_EQ(p.t_ns, 99);
  // No target pid: no process memory.
  EXPECT_EQ(m.count("gpu0.proc_mem_bytes"), 0u);
}

// nvmlDeviceGetTotalEnergyConsumption cost 4.1 ms of CPU a call on the H200: it is read on every
// energy_every_n_samples-th round (default 50) and on no other, and Describe() says how often.
TEST(NvmlSamplerTest, TheEnergyCounterIsReadOnEveryNthRoundOnly) {
  FakeNvml fake;
  fake.gpus[0].energy_mj = 5000;
  auto sampler = Make(fake, nullptr, SamplerOptions{});
  std::vector<int> rounds_with_energy;
  for (int round = 0; round < 120; ++round) {
    std::vector<SeriesPoint> out;
    sampler->Sample(round, out);
    if (Last(out).count("gpu0.energy_j")) rounds_with_energy.push_back(round);
    EXPECT_EQ(Last(out).count("gpu0.power_w"), 1u) << "power is read every round";
  }
  EXPECT_EQ(rounds_with_energy, (std::vector<int>{0, 50, 100}));
  EXPECT_EQ(sampler->Describe()["energy_every_n_samples"], 50);

  SamplerOptions every;
  every.energy_every_n_samples = 1;
  auto each = Make(fake, nullptr, every);
  for (int round = 0; round < 3; ++round) {
    std::vector<SeriesPoint> out;
    each->Sample(round, out);
    EXPECT_EQ(Last(out).count("gpu0.energy_j"), 1u) << round;
  }
}

// Temperature, clocks, clocks event reasons and the process list are read on every
// slow_every_n_samples-th round only: absent from the other rounds' samples, never repeated;
// utilisation, memory and power stay in every round.
TEST(NvmlSamplerTest, SlowReadingsAreReadOnEveryNthRoundOnly) {
  FakeNvml fake;
  fake.gpus[0].processes = std::vector<NvmlProcessInfo>{{100, 1000, 0, 0}, {200, 5, 0, 0}};
  SamplerOptions options;
  options.slow_every_n_samples = 4;
  auto sampler = Make(fake, GpuProcFs(), options);
  sampler->SetTargetPid(100);
  const std::set<std::string> slow = {"gpu0.sm_clock_mhz",         "gpu0.mem_clock_mhz",  "gpu0.temp_c",
                                      "gpu0.clocks_event_reasons", "gpu0.proc_mem_bytes", "gpu0.other_procs"};
  std::vector<int> slow_rounds;
  for (int round = 0; round < 9; ++round) {
    std::vector<SeriesPoint> out;
    sampler->Sample(round, out);
    const auto m = Last(out);
    std::size_t present = 0;
    for (const auto& name : slow) present += m.count(name);
    EXPECT_TRUE(present == 0 || present == slow.size()) << "round " << round << ": " << present;
    if (present != 0) slow_rounds.push_back(round);
    for (const char* every : {"gpu0.sm_util_pct", "gpu0.mem_util_pct", "gpu0.mem_used_bytes", "gpu0.power_w"})
      EXPECT_EQ(m.count(every), 1u) << every << " in round " << round;
  }
  EXPECT_EQ(slow_rounds, (std::vector<int>{0, 4, 8}));
  EXPECT_EQ(fake.clock_calls, 2 * 3);
  EXPECT_EQ(fake.process_calls, 2 * 3);  // sizing and fetch
  EXPECT_EQ(sampler->Describe()["slow_every_n_samples"], 4);
  EXPECT_EQ(Make(fake)->Describe()["slow_every_n_samples"], 1) << "the default reads every round";
}

TEST(NvmlSamplerTest, UnsupportedReadingsAreAbsentNotZeroAndNotAskedAgain) {
  FakeNvml fake;
  fake.gpus[0].power_mw.reset();
  fake.gpus[0].pcie_tx_kb_per_s.reset();
  fake.without_energy_function = true;
  SamplerOptions options;
  options.pcie_every_n_samples = 1;
  auto sampler = Make(fake, nullptr, options);
  std::vector<SeriesPoint> out;
  sampler->Sample(1, out);
  auto m = Last(out);
  EXPECT_EQ(m.count("gpu0.power_w"), 0u);
  EXPECT_EQ(m.count("gpu0.energy_j"), 0u);
  EXPECT_EQ(m.count("gpu0.pcie_tx_bytes_per_s"), 0u);
  EXPECT_EQ(m.count("gpu0.pcie_rx_bytes_per_s"), 1u);
  EXPECT_EQ(fake.pcie_calls, 2);
  sampler->Sample(2, out);
  EXPECT_EQ(fake.pcie_calls, 3);  // rx only: tx said NOT_SUPPORTED once
  auto unsupported = sampler->Describe()["unsupported"]["gpu0"];
  std::set<std::string> names(unsupported.begin(), unsupported.end());
  EXPECT_EQ(names, (std::set<std::string>{"power_w", "energy_j", "pcie_tx_bytes_per_s"}));
}

TEST(NvmlSamplerTest, PcieIsReadOnEveryNthRoundOnly) {
  FakeNvml fake;
  SamplerOptions options;
  options.pcie_every_n_samples = 3;
  auto sampler = Make(fake, nullptr, options);
  std::vector<int> rounds_with_pcie;
  for (int round = 0; round < 7; ++round) {
    std::vector<SeriesPoint> out;
    sampler->Sample(round, out);
    if (Last(out).count("gpu0.pcie_tx_bytes_per_s")) rounds_with_pcie.push_back(round);
  }
  EXPECT_EQ(rounds_with_pcie, (std::vector<int>{0, 3, 6}));
}

TEST(NvmlSamplerTest, PcieDisabledNeverCallsTheBlockingFunction) {
  FakeNvml fake;
  SamplerOptions options;
  options.pcie_every_n_samples = 0;
  auto sampler = Make(fake, nullptr, options);
  std::vector<SeriesPoint> out;
  for (int i = 0; i < 5; ++i) sampler->Sample(i, out);
  EXPECT_EQ(fake.pcie_calls, 0);
}

TEST(NvmlSamplerTest, SelectedDevicesOnlyAndMissingOnesReported) {
  FakeNvml fake;
  fake.gpus.resize(3);
  fake.gpus[2].uuid = "GPU-two";
  auto sampler = Make(fake);
  sampler->SetDevices({2, 7});
  std::vector<SeriesPoint> out;
  sampler->Sample(1, out);
  for (const auto& p : out) EXPECT_EQ(p.series.rfind("gpu2.", 0), 0u) << p.series;
  EXPECT_FALSE(out.empty());
  auto d = sampler->Describe();
  EXPECT_EQ(d["sampled"], nlohmann::json::array({2}));
  EXPECT_EQ(d["missing_devices"], nlohmann::json::array({7}));
  EXPECT_EQ(d["devices"][0]["uuid"], "GPU-two");
}

TEST(NvmlSamplerTest, DescribeGivesDriverDevicesAndLimits) {
  FakeNvml fake;
  fake.gpus[0].clocks_event_reasons = kClocksEventHwThermal;
  auto sampler = Make(fake);
  auto d = sampler->Describe();
  EXPECT_EQ(d["driver_version"], "580.159.04");
  EXPECT_EQ(d["nvml_version"], "13.580.159.04");
  EXPECT_EQ(d["device_count"], 1);
  const auto& dev = d["devices"][0];
  EXPECT_EQ(dev["name"], "NVIDIA H200");
  EXPECT_EQ(dev["index"], 0);
  EXPECT_DOUBLE_EQ(dev["power_limit_w"].get<double>(), 700.0);
  EXPECT_EQ(dev["memory_total_bytes"], 150ull << 30);
  EXPECT_EQ(dev["supported_clocks_event_reasons"], 0x1ff);
  EXPECT_EQ(dev["clocks_event_reasons"], kClocksEventHwThermal);
}

TEST(NvmlSamplerTest, ProcessMemoryCountsTheRunnerTreeOnly) {
  FakeNvml fake;
  fake.gpus[0].processes = std::vector<NvmlProcessInfo>{
      {100, 1ull << 30, 0, 0}, {101, 512ull << 20, 0, 0}, {200, 2ull << 30, 0, 0}};
  auto sampler = Make(fake, GpuProcFs());
  sampler->SetTargetPid(100);
  std::vector<SeriesPoint> out;
  sampler->Sample(1, out);
  EXPECT_EQ(Last(out).at("gpu0.proc_mem_bytes"), static_cast<double>((1ull << 30) + (512ull << 20)));
}

TEST(NvmlSamplerTest, ProcessListThatGrowsBetweenCallsIsRefetched) {
  FakeNvml fake;
  fake.gpus[0].processes = std::vector<NvmlProcessInfo>{{100, 1000, 0, 0}};
  // Ten more than the slack the sampler adds: the first fetch is too small and must be retried.
  for (unsigned int pid = 300; pid < 310; ++pid)
    fake.gpus[0].processes_arriving_late.push_back({pid, 10, 0, 0});
  auto sampler = Make(fake, GpuProcFs());
  sampler->SetTargetPid(100);
  std::vector<SeriesPoint> out;
  sampler->Sample(1, out);
  EXPECT_EQ(Last(out).at("gpu0.proc_mem_bytes"), 1000.0 + 10 * 10);
  EXPECT_EQ(fake.process_calls, 3);  // size, too-small fetch, fetch
}

TEST(NvmlSamplerTest, ProcessMemoryAbsentWhenNoTreeProcessOrValueUnknown) {
  FakeNvml fake;
  fake.gpus[0].processes =
      std::vector<NvmlProcessInfo>{{200, 5000, 0, 0}, {101, kNvmlValueNotAvailable, 0, 0}};
  auto sampler = Make(fake, GpuProcFs());
  sampler->SetTargetPid(100);
  std::vector<SeriesPoint> out;
  sampler->Sample(1, out);
  EXPECT_EQ(Last(out).count("gpu0.proc_mem_bytes"), 0u);
  fake.gpus[0].processes = std::vector<NvmlProcessInfo>{};
  sampler->Sample(2, out);
  EXPECT_EQ(Last(out).count("gpu0.proc_mem_bytes"), 0u);
}

// Another process on the cell's GPU before it starts (docs/memory.md): NVML's list taken through
// the Monitor before the runner exists, named from /proc, and warned about for the cell's GPUs only.
TEST(NvmlSamplerTest, ProcessesOnTheCellsGpuBeforeItStartsAreWarnings) {
  FakeNvml fake;
  fake.gpus.push_back(FakeGpu{});
  fake.gpus[0].uuid = "GPU-aaaaaaaa-0000-0000-0000-000000000000";
  fake.gpus[1].uuid = "GPU-bbbbbbbb-1111-1111-1111-111111111111";
  fake.gpus[0].processes =
      std::vector<NvmlProcessInfo>{{4242, 3ull << 30, 0, 0}, {777, kNvmlValueNotAvailable, 0, 0}};
  fake.gpus[1].processes = std::vector<NvmlProcessInfo>{{5151, 512ull << 20, 0, 0}};
  auto fs = std::make_shared<FakeProcFs>();
  fs->Set("/proc/4242/comm", "python3\n");
  fs->Set("/proc/5151/comm", "trainer\n");
  std::vector<std::unique_ptr<Sampler>> samplers;
  samplers.push_back(Make(fake, fs));
  SimulatedClock clock;
  Monitor monitor(std::move(samplers), clock, 1000);
  const std::vector<GpuProcess> before = monitor.GpuProcesses();
  ASSERT_EQ(before.size(), 3u);
  EXPECT_EQ(before[0].nvml_index, 0);
  EXPECT_EQ(before[0].pid, 4242u);
  EXPECT_EQ(before[0].name, "python3");
  EXPECT_EQ(before[0].used_bytes, std::optional<std::uint64_t>(3ull << 30));
  EXPECT_EQ(before[0].gpu_uuid, "GPU-aaaaaaaa-0000-0000-0000-000000000000");
  EXPECT_FALSE(before[1].used_bytes.has_value());
  EXPECT_EQ(before[1].name, "");
  EXPECT_EQ(before[2].nvml_index, 1);

  // The cell runs on gpu0: one warning, naming both processes and the memory known.
  std::vector<std::string> w = OtherGpuProcessWarnings(before, std::vector<int>{0}, true);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("gpu0 (GPU-aaaaaaaa-0000-0000-0000-000000000000) was in use just before the cell's "
                      "runner started: 2 other compute processes held 3072.0 MiB and 1 unknown"),
            std::string::npos)
      << w[0];
  EXPECT_NE(w[0].find("pid 4242 python3 holding 3072.0 MiB"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("pid 777 (no /proc entry here) (its memory not readable)"), std::string::npos) << w[0];
  // On gpu1 the other process is named; a cpu cell (no GPU) and a cell that named none while not
  // on CUDA get nothing; a cuda cell that named none is warned about every GPU.
  w = OtherGpuProcessWarnings(before, std::vector<int>{1}, true);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("1 other compute process held 512.0 MiB (pid 5151 trainer holding 512.0 MiB)"),
            std::string::npos)
      << w[0];
  EXPECT_TRUE(OtherGpuProcessWarnings(before, std::vector<int>{}, false).empty());
  EXPECT_TRUE(OtherGpuProcessWarnings(before, std::nullopt, false).empty());
  EXPECT_EQ(OtherGpuProcessWarnings(before, std::nullopt, true).size(), 2u);
  // A GPU nobody holds, or a list NVML refuses, gives nothing.
  EXPECT_TRUE(OtherGpuProcessWarnings({}, std::vector<int>{0}, true).empty());
  fake.gpus[0].processes = std::nullopt;
  fake.gpus[1].processes = std::vector<NvmlProcessInfo>{};
  EXPECT_TRUE(monitor.GpuProcesses().empty());
}

TEST(NvmlSamplerTest, FailedInitIsUnsupportedWithTheDriversWords) {
  FakeNvml fake;
  fake.init_result = kNvmlErrorDriverNotLoaded;
  {
    auto sampler = Make(fake);
    EXPECT_EQ(sampler->state(), "unsupported: nvmlInit_v2 failed: NVML error 9 (Driver Not Loaded)");
    std::vector<SeriesPoint> out;
    sampler->Sample(1, out);
    EXPECT_TRUE(out.empty());
    EXPECT_TRUE(sampler->Describe().empty());
  }
  EXPECT_EQ(fake.shutdown_calls, 0);  // nothing to shut down after a failed init
}

TEST(NvmlSamplerTest, NoGpuIsUnsupportedAndInitIsBalancedByShutdown) {
  FakeNvml fake;
  fake.gpus.clear();
  {
    auto sampler = Make(fake);
    EXPECT_EQ(sampler->state(), "unsupported: the driver reports no GPU");
    std::vector<SeriesPoint> out;
    sampler->Sample(1, out);
    EXPECT_TRUE(out.empty());
  }
  EXPECT_EQ(fake.init_calls, 1);
  EXPECT_EQ(fake.shutdown_calls, 1);
}

TEST(NvmlSamplerTest, MissingLibraryIsAStateNotACrash) {
  auto lib = LoadNvml("libdlbench-no-such-nvml.so.1");
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.error().kind, ErrorKind::kUnsupported);
  EXPECT_NE(lib.error().message.find("libdlbench-no-such-nvml.so.1"), std::string::npos);
  auto sampler = NvmlSampler::Unsupported(lib.error().message);
  EXPECT_EQ(sampler->state().rfind("unsupported: cannot load libdlbench-no-such-nvml.so.1", 0), 0u);
  std::vector<SeriesPoint> out;
  sampler->SetTargetPid(1);
  sampler->Sample(1, out);
  EXPECT_TRUE(out.empty());
}

TEST(NvmlSamplerTest, ThisMachinesSamplerIsOkOrSaysWhyNot) {
  auto sampler = MakeNvmlSampler(std::make_shared<RealProcFs>(), SamplerOptions{});
  std::vector<SeriesPoint> out;
  sampler->Sample(1, out);
  if (!LoadNvml().ok()) {
    EXPECT_EQ(sampler->state().rfind("unsupported: cannot load libnvidia-ml.so.1", 0), 0u)
        << sampler->state();
    EXPECT_TRUE(out.empty());
  } else if (sampler->state() == "ok") {
    EXPECT_FALSE(out.empty());
  }
}

}  // namespace
}  // namespace dlbench::monitor
