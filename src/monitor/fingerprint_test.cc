// The environment fingerprint from canned host facts, its comparability hash, diffs and warnings.
#include "monitor/fingerprint.h"

#include <gtest/gtest.h>

#include "common/hash.h"
#include "monitor/fake_procfs.h"
#include "monitor/nvml_sampler.h"

namespace dlbench::monitor {
namespace {

// `loadavg`: the contents of /proc/loadavg; none when empty.
HostSources FakeHost(const std::string& loadavg = "") {
  auto fs = std::make_shared<FakeProcFs>();
  if (!loadavg.empty()) fs->Set("/proc/loadavg", loadavg);
  fs->Set("/etc/os-release",
          "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n");
  fs->Set("/proc/cpuinfo",
          "processor\t: 0\nmodel name\t: AMD EPYC 9654 96-Core Processor\nflags\t\t: fpu sse2 avx512f "
          "avx512_bf16\n\n"
          "processor\t: 1\nmodel name\t: AMD EPYC 9654 96-Core Processor\nflags\t\t: fpu sse2 avx512f "
          "avx512_bf16\n");
  fs->Set("/proc/meminfo", "MemTotal: 1048576 kB\nMemAvailable: 524288 kB\n");
  fs->Set("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
  fs->Set("/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance\n");
  fs->Set("/sys/devices/system/cpu/cpufreq/policy0/x", "");
  HostSources s;
  s.files = fs;
  s.uname = {{"sysname", "Linux"},
             {"nodename", "gpu-node-7"},
             {"release", "6.1.0-18-amd64"},
             {"version", "#1 SMP Debian"},
             {"machine", "x86_64"}};
  s.environment = {"OMP_NUM_THREADS=8",
                   "HOME=/root",
                   "DLBENCH_PG_PASSWORD=hunter2",
                   "NCCL_DEBUG=INFO",
                   "DLBENCH_DB=postgresql://bench:hunter3@db.example:5432/results",
                   "PATH=/usr/bin"};
  s.blas_path = "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3";
  return s;
}

nlohmann::json Hello(const std::string& cudnn) {
  return {{"runner", "torch"},
          {"pid", 4242},
          {"framework", {{"name", "libtorch"}, {"version", "2.5.1"}, {"cuda", "12.4"}, {"cudnn", cudnn}}}};
}

nlohmann::json MonitorDescription() {
  return {
      {"nvml",
       {{"state", "ok"},
        {"facts",
         {{"driver_version", "580.159.04"},
          {"nvml_version", "13.580.159.04"},
          {"devices",
           {{{"index", 0},
             {"name", "NVIDIA H200"},
             {"uuid", "GPU-abc"},
             {"power_limit_w", 700.0},
             {"clocks_event_reasons", kClocksEventGpuIdle}}}}}}}},
      {"rapl", {{"state", "unsupported: no RAPL package domain under /sys/class/powercap"}, {"facts", {}}}}};
}

TEST(FingerprintTest, CollectsHostLibrariesEnvironmentGpuAndRunner) {
  auto fp = CollectFingerprintFrom(FakeHost(), Hello("9.1.0"), MonitorDescription());
  EXPECT_EQ(fp["host"]["os"], "Debian GNU/Linux 12 (bookworm)");
  EXPECT_EQ(fp["host"]["os_version_id"], "12");
  EXPECT_EQ(fp["host"]["kernel"], "6.1.0-18-amd64");
  EXPECT_EQ(fp["host"]["cpu_model"], "AMD EPYC 9654 96-Core Processor");
  EXPECT_EQ(fp["host"]["cpu_logical_cores"], 2);
  EXPECT_EQ(fp["host"]["cpu_governor"], "performance");
  EXPECT_EQ(fp["host"]["memory_total_bytes"], 1048576ull * 1024);
  EXPECT_EQ(fp["blas"]["name"], "openblas-pthread");
  EXPECT_EQ(fp["env"]["OMP_NUM_THREADS"], "8");
  EXPECT_EQ(fp["env"]["NCCL_DEBUG"], "INFO");
  EXPECT_EQ(fp["env"]["DLBENCH_PG_PASSWORD"], "<redacted>");
  EXPECT_EQ(fp["env"]["DLBENCH_DB"], "postgresql://bench:***@db.example:5432/results")
      << "a store URL's password";
  EXPECT_EQ(fp.dump().find("hunter"), std::string::npos) << fp.dump();
  EXPECT_FALSE(fp["env"].contains("HOME"));
  EXPECT_FALSE(fp["env"].contains("PATH"));
  EXPECT_EQ(fp["gpu"]["driver_version"], "580.159.04");
  EXPECT_EQ(fp["gpu"]["models"], nlohmann::json::array({"NVIDIA H200"}));
  EXPECT_EQ(fp["gpu"]["power_limits_w"], nlohmann::json::array({700.0}));
  EXPECT_EQ(fp["runner"]["framework"]["cudnn"], "9.1.0");
  EXPECT_EQ(fp["monitor"]["rapl"], "unsupported: no RAPL package domain under /sys/class/powercap");
  EXPECT_FALSE(fp["dlbench"]["version"].get<std::string>().empty());
}

TEST(FingerprintTest, MixedAndAbsentGovernors) {
  auto host = FakeHost();
  auto fs = std::make_shared<FakeProcFs>();
  fs->Set("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
  fs->Set("/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "powersave\n");
  host.files = fs;
  EXPECT_EQ(CollectFingerprintFrom(host, {}, {})["host"]["cpu_governor"], "mixed: performance, powersave");
  host.files = std::make_shared<FakeProcFs>();
  auto fp = CollectFingerprintFrom(host, {}, {});
  EXPECT_EQ(fp["host"]["cpu_governor"], "unknown");
  EXPECT_EQ(fp["gpu"]["state"], "not sampled");
}

TEST(FingerprintTest, BlasNamesFromPaths) {
  struct Case {
    const char* path;
    const char* name;
  };
  for (const Case& c : {Case{"/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3", "openblas-pthread"},
                        Case{"/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3", "openblas-openmp"},
                        Case{"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3", "reference"},
                        Case{"/usr/lib/x86_64-linux-gnu/blis-pthread/libblas.so.3", "blis"},
                        Case{"/opt/intel/mkl/lib/libmkl_rt.so", "mkl"},
                        Case{"/usr/lib/x86_64-linux-gnu/atlas/libblas.so.3", "atlas"}, Case{"", "unknown"}}) {
    EXPECT_EQ(BlasNameFromPath(c.path), c.name) << c.path;
  }
}

// The environment id is this hash (common/hash.h): stored ids depend on its values.
TEST(FingerprintTest, Fnv1aKnownValues) {
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(FingerprintTest, HashIgnoresHostnamePidsAndCommitsButNotCudnn) {
  auto base = CollectFingerprintFrom(FakeHost(), Hello("9.1.0"), MonitorDescription());
  std::string hash = ComparabilityHash(base);
  EXPECT_EQ(hash.size(), 16u);
  EXPECT_EQ(hash, ComparabilityHash(base));

  auto moved = base;
  moved["host"]["hostname"] = "gpu-node-8";
  moved["runner"]["pid"] = 1;
  moved["dlbench"]["git_commit"] = "deadbeef";
  moved["gpu"]["devices"][0]["uuid"] = "GPU-other";
  EXPECT_EQ(ComparabilityHash(moved), hash);

  auto cudnn = CollectFingerprintFrom(FakeHost(), Hello("9.3.0"), MonitorDescription());
  EXPECT_NE(ComparabilityHash(cudnn), hash);
  auto tf32 = base;
  tf32["env"]["NVIDIA_TF32_OVERRIDE"] = "0";
  EXPECT_NE(ComparabilityHash(tf32), hash);
  auto blas = base;
  blas["blas"]["name"] = "reference";
  EXPECT_NE(ComparabilityHash(blas), hash);
  auto limit = base;
  limit["gpu"]["power_limits_w"][0] = 500.0;
  EXPECT_NE(ComparabilityHash(limit), hash);
}

TEST(FingerprintTest, DiffNamesEachChangedLeafAndWhetherItDecides) {
  auto a = CollectFingerprintFrom(FakeHost(), Hello("9.1.0"), MonitorDescription());
  auto b = CollectFingerprintFrom(FakeHost(), Hello("9.3.0"), MonitorDescription());
  b["host"]["hostname"] = "gpu-node-8";
  b["env"]["CUDA_VISIBLE_DEVICES"] = "1";
  auto changes = DiffFingerprints(a, b);
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0].path, "/env/CUDA_VISIBLE_DEVICES");
  EXPECT_TRUE(changes[0].before.is_null());
  EXPECT_EQ(changes[0].after, "1");
  EXPECT_FALSE(changes[0].decides_comparability);
  EXPECT_EQ(changes[1].path, "/host/hostname");
  EXPECT_FALSE(changes[1].decides_comparability);
  EXPECT_EQ(changes[2].path, "/runner/framework/cudnn");
  EXPECT_EQ(changes[2].before, "9.1.0");
  EXPECT_EQ(changes[2].after, "9.3.0");
  EXPECT_TRUE(changes[2].decides_comparability);
  EXPECT_TRUE(DiffFingerprints(a, a).empty());
}

TEST(FingerprintTest, WarningsForDebugGovernorReferenceBlasAndThrottledGpu) {
  auto host = FakeHost();
  auto fp = CollectFingerprintFrom(host, Hello("9.1.0"), MonitorDescription());
  fp["dlbench"]["build_type"] = "Release";
  EXPECT_TRUE(FingerprintWarnings(fp).empty());

  fp["dlbench"]["build_type"] = "Debug";
  fp["host"]["cpu_governor"] = "powersave";
  fp["blas"] = {{"path", "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"}, {"name", "reference"}};
  fp["start_state"]["gpu"][0]["clocks_event_reasons"] = kClocksEventSwThermal | kClocksEventGpuIdle;
  fp["env"]["CUDA_LAUNCH_BLOCKING"] = "1";
  auto warnings = FingerprintWarnings(fp);
  ASSERT_EQ(warnings.size(), 5u);
  EXPECT_NE(warnings[0].find("Debug"), std::string::npos);
  EXPECT_NE(warnings[1].find("'powersave'"), std::string::npos);
  EXPECT_NE(warnings[2].find("reference BLAS"), std::string::npos);
  EXPECT_NE(warnings[3].find("CUDA_LAUNCH_BLOCKING"), std::string::npos);
  EXPECT_EQ(warnings[4], "gpu0 clocks are limited before the run: sw_thermal_slowdown");
}

// Issue 17: a compare once named "/gpu/devices/0/clocks_event_reasons: 1 -> 0" as an environment
// change. The instant's event reasons are device state: kept apart and never diffed.
TEST(FingerprintTest, ClocksEventReasonsAreStateNotEnvironment) {
  auto host = FakeHost();
  auto a = CollectFingerprintFrom(host, Hello("9.1.0"), MonitorDescription());
  ASSERT_TRUE(a.contains("start_state")) << a.dump();
  EXPECT_FALSE(a["gpu"]["devices"][0].contains("clocks_event_reasons"));
  EXPECT_EQ(a["start_state"]["gpu"][0]["index"], a["gpu"]["devices"][0]["index"]);
  auto b = a;
  b["start_state"]["gpu"][0]["clocks_event_reasons"] = kClocksEventSwThermal;
  EXPECT_TRUE(DiffFingerprints(a, b).empty());
  EXPECT_EQ(ComparabilityHash(a), ComparabilityHash(b));
}

// Issue 17: a run started on a busy host says so before its first cell, and the load is state:
// two runs that differ only in it stay comparable.
TEST(FingerprintTest, ABusyHostAtTheStartIsWarnedAboutAndIsStateNotEnvironment) {
  auto busy = CollectFingerprintFrom(FakeHost("7.50 3.20 1.00 9/300 4242\n"), Hello("9.1.0"), {});
  busy["dlbench"]["build_type"] = "Release";
  ASSERT_EQ(busy["host"]["cpu_logical_cores"], 2) << busy["host"].dump();
  EXPECT_DOUBLE_EQ(busy["start_state"]["host"]["load_average_1m"].get<double>(), 7.5);
  const auto warnings = FingerprintWarnings(busy);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(
      warnings[0].rfind("the host is busy: load average 7.5 over the last minute on 2 logical cores", 0), 0u)
      << warnings[0];
  auto quiet = busy;
  quiet["start_state"]["host"]["load_average_1m"] = 2.9;  // below 1.5 x 2 cores
  EXPECT_TRUE(FingerprintWarnings(quiet).empty());
  EXPECT_TRUE(DiffFingerprints(busy, quiet).empty());
  EXPECT_EQ(ComparabilityHash(busy), ComparabilityHash(quiet));
  EXPECT_FALSE(CollectFingerprintFrom(FakeHost("garbage\n"), {}, {}).contains("start_state"))
      << "unreadable: left out";
}

// Issue 18: BERT bs1 bf16 took 30.9 ms on a CPU without bf16 instructions, fp32 1.46 ms.
TEST(FingerprintTest, LowPrecisionOnACpuWithoutItsInstructionsIsAnEmulationWarning) {
  auto fp = CollectFingerprintFrom(FakeHost(), {}, {});
  ASSERT_TRUE(fp["host"].contains("cpu_low_precision_flags")) << fp["host"].dump();
  EXPECT_EQ(fp["host"]["cpu_low_precision_flags"], nlohmann::json::array({"avx512_bf16"}));
  const auto with_flag = EmulatedPrecisionWarning(fp, "bf16", 3);
  ASSERT_TRUE(with_flag.has_value())
      << "the instructions exist, but LibTorch 1.13 emulated bf16 on such a CPU";
  EXPECT_EQ(
      *with_flag,
      "3 cells run bf16 on the CPU: it has bf16 instructions (avx512_bf16), but the framework's CPU "
      "kernels may not use them and emulate bf16 instead; run an fp32 twin before trusting the comparison");
  const auto fp16 = EmulatedPrecisionWarning(fp, "fp16", 1);
  ASSERT_TRUE(fp16.has_value());
  EXPECT_EQ(*fp16,
            "1 cell runs fp16 on the CPU, which has no fp16 instructions (no avx512_fp16 or amx_fp16 in "
            "/proc/cpuinfo): LibTorch emulates it, so expect it slower than fp32; the figures measure the "
            "emulation, not fp16 hardware");
  fp["host"]["cpu_low_precision_flags"] = nlohmann::json::array();
  ASSERT_TRUE(EmulatedPrecisionWarning(fp, "bf16", 2).has_value());
  EXPECT_EQ(EmulatedPrecisionWarning(fp, "bf16", 2)->rfind("2 cells run bf16 on the CPU", 0), 0u);
  EXPECT_FALSE(EmulatedPrecisionWarning(fp, "fp32", 2).has_value());
  EXPECT_FALSE(EmulatedPrecisionWarning(fp, "bf16", 0).has_value());
  fp["host"].erase("cpu_low_precision_flags");
  EXPECT_FALSE(EmulatedPrecisionWarning(fp, "bf16", 2).has_value()) << "flags unknown: no claim";
}

TEST(FingerprintTest, ThisMachineHasTheBasics) {
  auto fp = CollectFingerprint({{"runner", "null"}}, {});
  EXPECT_NE(fp["host"]["kernel"], "unknown");
  EXPECT_GT(fp["host"]["cpu_logical_cores"].get<int>(), 0);
  EXPECT_EQ(fp["runner"]["runner"], "null");
  EXPECT_EQ(ComparabilityHash(fp).size(), 16u);
}

}  // namespace
}  // namespace dlbench::monitor
