#include "monitor/fingerprint.h"

#include <fmt/core.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "common/credentials.h"
#include "common/hash.h"
#include "common/text.h"
#include "common/version.h"
#include "monitor/nvml_sampler.h"

extern char** environ;

namespace dlbench::monitor {
namespace {

constexpr int kFingerprintVersion = 1;

// Variables that change how fast a model runs (thread pools, allocators, math modes, device
// selection, communication).
constexpr const char* kEnvPrefixes[] = {"OMP_",
                                        "MKL_",
                                        "OPENBLAS_",
                                        "GOTO_",
                                        "BLIS_",
                                        "KMP_",
                                        "CUDA_",
                                        "CUBLAS_",
                                        "CUBLASLT_",
                                        "CUDNN_",
                                        "NCCL_",
                                        "TORCH_",
                                        "PYTORCH_",
                                        "DLBENCH_",
                                        "NVIDIA_",
                                        "TF_",
                                        "XLA_",
                                        "ONEDNN_",
                                        "DNNL_",
                                        "MALLOC_",
                                        "TCMALLOC_",
                                        "JE_MALLOC_",
                                        "MASTER_",
                                        "WORLD_SIZE",
                                        "LOCAL_WORLD_SIZE",
                                        "GLIBC_TUNABLES",
                                        "LD_PRELOAD",
                                        "LD_LIBRARY_PATH"};
// A name containing one of these may hold a credential (a database URL with a password).
constexpr const char* kSecretMarkers[] = {"PASSWORD", "PASSWD", "SECRET", "TOKEN",
                                          "KEY",      "DSN",    "URL",    "CREDENTIAL"};

// Trimmed from values of os-release (which may be quoted), cpuinfo and sysfs.
constexpr std::string_view kTrimmed = " \t\r\n\"";

std::map<std::string, std::string> ParseOsRelease(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::size_t eq = line.find('=');
    if (eq == std::string::npos || line[0] == '#') continue;
    out[line.substr(0, eq)] = Trim(line.substr(eq + 1), kTrimmed);
  }
  return out;
}

void CpuFacts(const ProcFs& files, nlohmann::json& host) {
  host["cpu_model"] = "unknown";
  int processors = 0;
  bool have_flags = false;
  nlohmann::json low_precision = nlohmann::json::array();
  if (auto text = files.Read("/proc/cpuinfo"); text.ok()) {
    std::istringstream in(*text);
    std::string line;
    bool have_model = false;
    while (std::getline(in, line)) {
      std::size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string key = Trim(line.substr(0, colon), kTrimmed);
      std::string value = Trim(line.substr(colon + 1), kTrimmed);
      if (key == "processor") ++processors;
      // x86 says "model name"; arm64 kernels say "Model" (device tree) or only "CPU part".
      if (!have_model && (key == "model name" || key == "Model" || key == "Hardware")) {
        host["cpu_model"] = value;
        have_model = true;
      }
      // x86 "flags", arm64 "Features": which low-precision matrix instructions the CPU has.
      if (!have_flags && (key == "flags" || key == "Features")) {
        have_flags = true;
        std::istringstream words(value);
        std::string word;
        while (words >> word) {
          for (const char* wanted : kLowPrecisionCpuFlags) {
            if (word == wanted) low_precision.push_back(word);
          }
        }
      }
    }
  }
  host["cpu_logical_cores"] = processors;
  if (have_flags) host[kCpuLowPrecisionFlags] = low_precision;
  std::set<std::string> governors;
  if (auto entries = files.List("/sys/devices/system/cpu"); entries.ok()) {
    for (const auto& e : *entries) {
      if (e.size() < 4 || e.compare(0, 3, "cpu") != 0 || !std::all_of(e.begin() + 3, e.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c));
          })) {
        continue;
      }
      if (auto g = files.Read("/sys/devices/system/cpu/" + e + "/cpufreq/scaling_governor"); g.ok()) {
        governors.insert(Trim(*g, kTrimmed));
      }
    }
  }
  if (governors.empty()) {
    host["cpu_governor"] = "unknown";
  } else if (governors.size() == 1) {
    host["cpu_governor"] = *governors.begin();
  } else {
    std::string mixed = "mixed:";
    for (const auto& g : governors) mixed += (mixed.back() == ':' ? " " : ", ") + g;
    host["cpu_governor"] = mixed;
  }
}

bool IsPerformanceVariable(const std::string& name) {
  for (const char* prefix : kEnvPrefixes) {
    std::size_t n = std::char_traits<char>::length(prefix);
    if (name.compare(0, n, prefix) == 0) return true;
  }
  return false;
}

bool LooksSecret(const std::string& name) {
  for (const char* marker : kSecretMarkers) {
    if (name.find(marker) != std::string::npos) return true;
  }
  return false;
}

std::string RealPath(const std::string& path) {
  char buffer[PATH_MAX];
  if (::realpath(path.c_str(), buffer) == nullptr) return "";
  return buffer;
}

std::string Multiarch(const std::string& machine) {
  if (machine == "x86_64") return "x86_64-linux-gnu";
  if (machine == "aarch64") return "aarch64-linux-gnu";
  if (machine == "ppc64le") return "powerpc64le-linux-gnu";
  return machine + "-linux-gnu";
}

// RFC 6901: "~" -> "~0", "/" -> "~1".
std::string EscapePointerToken(const std::string& token) {
  std::string out;
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

void Flatten(const nlohmann::json& j, const std::string& path, std::map<std::string, nlohmann::json>& out) {
  if (j.is_object() && !j.empty()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      Flatten(it.value(), path + "/" + EscapePointerToken(it.key()), out);
    }
  } else if (j.is_array() && !j.empty()) {
    for (std::size_t i = 0; i < j.size(); ++i) Flatten(j[i], path + "/" + std::to_string(i), out);
  } else {
    out[path] = j;
  }
}

bool Decides(const std::string& path) {
  for (const auto& field : ComparabilityFields()) {
    if (path == field || (path.compare(0, field.size(), field) == 0 && path[field.size()] == '/'))
      return true;
  }
  return false;
}

// The throttle bits that mean the environment, not the workload, limits the clocks.
std::string EnvironmentalThrottle(std::uint64_t mask) {
  struct Bit {
    std::uint64_t bit;
    const char* name;
  };
  constexpr Bit kBits[] = {{kClocksEventHwSlowdown, "hw_slowdown"},
                           {kClocksEventSwThermal, "sw_thermal_slowdown"},
                           {kClocksEventHwThermal, "hw_thermal_slowdown"},
                           {kClocksEventHwPowerBrake, "hw_power_brake_slowdown"}};
  std::string names;
  for (const auto& b : kBits) {
    if (mask & b.bit) names += (names.empty() ? "" : ", ") + std::string(b.name);
  }
  return names;
}

}  // namespace

HostSources RealHostSources() {
  HostSources sources;
  sources.files = std::make_shared<RealProcFs>();
  utsname u{};
  if (::uname(&u) == 0) {
    sources.uname = {{"sysname", u.sysname},
                     {"nodename", u.nodename},
                     {"release", u.release},
                     {"version", u.version},
                     {"machine", u.machine}};
  }
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) sources.environment.emplace_back(*e);
  std::string arch = Multiarch(sources.uname.value("machine", ""));
  sources.blas_path = RealPath("/etc/alternatives/libblas.so.3-" + arch);
  if (sources.blas_path.empty()) sources.blas_path = RealPath("/usr/lib/" + arch + "/libblas.so.3");
  return sources;
}

std::string BlasNameFromPath(const std::string& path) {
  if (path.empty()) return "unknown";
  for (const char* variant : {"openblas-pthread", "openblas-openmp", "openblas-serial"}) {
    if (path.find(variant) != std::string::npos) return variant;
  }
  if (path.find("openblas") != std::string::npos) return "openblas";
  if (path.find("blis") != std::string::npos) return "blis";
  if (path.find("mkl") != std::string::npos) return "mkl";
  if (path.find("atlas") != std::string::npos) return "atlas";
  // Debian's netlib reference implementation lives in .../blas/libblas.so.3.
  if (path.find("/blas/") != std::string::npos) return "reference";
  return "unknown";
}

nlohmann::json CollectFingerprint(const nlohmann::json& runner_hello,
                                  const nlohmann::json& monitor_description) {
  return CollectFingerprintFrom(RealHostSources(), runner_hello, monitor_description);
}

nlohmann::json CollectFingerprintFrom(const HostSources& sources, const nlohmann::json& runner_hello,
                                      const nlohmann::json& monitor_description) {
  nlohmann::json fp = nlohmann::json::object();
  fp["fingerprint_version"] = kFingerprintVersion;

  nlohmann::json host = nlohmann::json::object();
  host["hostname"] = sources.uname.value("nodename", "unknown");
  host["kernel"] = sources.uname.value("release", "unknown");
  host["kernel_version"] = sources.uname.value("version", "unknown");
  host["arch"] = sources.uname.value("machine", "unknown");
  host["os"] = "unknown";
  if (sources.files) {
    if (auto text = sources.files->Read("/etc/os-release"); text.ok()) {
      auto os = ParseOsRelease(*text);
      host["os"] = os.count("PRETTY_NAME") ? os["PRETTY_NAME"] : "unknown";
      host["os_id"] = os.count("ID") ? os["ID"] : "unknown";
      host["os_version_id"] = os.count("VERSION_ID") ? os["VERSION_ID"] : "unknown";
    }
    CpuFacts(*sources.files, host);
    if (auto text = sources.files->Read("/proc/meminfo"); text.ok()) {
      if (auto mem = ParseMemInfo(*text); mem.ok()) host["memory_total_bytes"] = mem->total_bytes;
    }
    // How busy the host is as the run starts: state, not environment (kStartStateKey).
    if (auto text = sources.files->Read("/proc/loadavg"); text.ok()) {
      double load_1m = 0;
      if (std::sscanf(text->c_str(), "%lf", &load_1m) == 1 && std::isfinite(load_1m) && load_1m >= 0) {
        fp[kStartStateKey]["host"] = {{kStartLoadAverage1m, load_1m}};
      }
    }
  }
  fp["host"] = host;

  std::string version = kVersion;
  fp["dlbench"] = {{"version", version},
                   {"major", version.substr(0, version.find('.'))},
                   {"git_commit", kGitCommit},
                   {"build_type", kBuildType},
                   {"compiler", kCompiler}};
  fp["blas"] = {{"path", sources.blas_path}, {"name", BlasNameFromPath(sources.blas_path)}};

  nlohmann::json env = nlohmann::json::object();
  for (const auto& entry : sources.environment) {
    std::size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string name = entry.substr(0, eq);
    if (!IsPerformanceVariable(name)) continue;
    // DLBENCH_DB may be a postgresql:// URL with a password: never recorded as given.
    env[name] = LooksSecret(name) ? "<redacted>" : MaskPasswords(entry.substr(eq + 1));
  }
  fp["env"] = env;

  nlohmann::json gpu = nlohmann::json::object();
  nlohmann::json monitor = nlohmann::json::object();
  for (auto it = monitor_description.begin();
       monitor_description.is_object() && it != monitor_description.end(); ++it) {
    monitor[it.key()] = it.value().value("state", "unknown");
  }
  if (monitor_description.contains("nvml")) {
    const auto& nvml = monitor_description["nvml"];
    gpu["state"] = nvml.value("state", "unknown");
    const auto facts = nvml.value("facts", nlohmann::json::object());
    gpu["driver_version"] = facts.value("driver_version", "unknown");
    gpu["nvml_version"] = facts.value("nvml_version", "unknown");
    nlohmann::json models = nlohmann::json::array(), limits = nlohmann::json::array();
    nlohmann::json devices = facts.value("devices", nlohmann::json::array());
    nlohmann::json start_state = nlohmann::json::array();
    for (auto& d : devices) {
      models.push_back(d.value("name", "unknown"));
      limits.push_back(d.contains("power_limit_w") ? d["power_limit_w"] : nlohmann::json());
      // The clocks' event reasons at this instant are the device's state, not its environment:
      // kept apart (compare's environment diff skips them; the cell's own series has them).
      if (d.contains(kTransientClocksEventReasons)) {
        start_state.push_back({{"index", d.value("index", -1)},
                               {kTransientClocksEventReasons, d[kTransientClocksEventReasons]}});
        d.erase(kTransientClocksEventReasons);
      }
    }
    if (!start_state.empty()) fp[kStartStateKey]["gpu"] = start_state;
    gpu["models"] = models;
    gpu["power_limits_w"] = limits;
    gpu["devices"] = devices;
  } else {
    gpu["state"] = "not sampled";
  }
  fp["gpu"] = gpu;
  fp["runner"] = runner_hello.is_object() ? runner_hello : nlohmann::json::object();
  fp["monitor"] = monitor;
  return fp;
}

const std::vector<std::string>& ComparabilityFields() {
  static const std::vector<std::string> kFields = {
      "/fingerprint_version",
      "/host/arch",
      "/host/cpu_model",
      "/host/cpu_logical_cores",
      "/blas/name",
      "/dlbench/major",
      "/gpu/driver_version",
      "/gpu/models",
      "/gpu/power_limits_w",
      "/runner/runner",
      "/runner/framework",
      "/runner/cuda",
      "/runner/cudnn",
      "/runner/nccl",
      "/env/OMP_NUM_THREADS",
      "/env/MKL_NUM_THREADS",
      "/env/OPENBLAS_NUM_THREADS",
      "/env/NVIDIA_TF32_OVERRIDE",
      "/env/TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
      "/env/CUBLAS_WORKSPACE_CONFIG",
      "/env/CUDA_LAUNCH_BLOCKING",
      "/env/PYTORCH_CUDA_ALLOC_CONF",
      "/env/LD_PRELOAD",
  };
  return kFields;
}

nlohmann::json ComparabilitySubset(const nlohmann::json& fingerprint) {
  nlohmann::json subset = nlohmann::json::object();
  for (const auto& field : ComparabilityFields()) {
    nlohmann::json::json_pointer pointer(field);
    subset[field] = fingerprint.contains(pointer) ? fingerprint.at(pointer) : nlohmann::json();
  }
  return subset;
}

std::string ComparabilityHash(const nlohmann::json& fingerprint) {
  return fmt::format("{:016x}", Fnv1a64(ComparabilitySubset(fingerprint).dump()));
}

std::vector<FieldChange> DiffFingerprints(const nlohmann::json& a, const nlohmann::json& b) {
  std::map<std::string, nlohmann::json> left, right;
  Flatten(a, "", left);
  Flatten(b, "", right);
  std::set<std::string> paths;
  for (const auto& [p, v] : left) paths.insert(p);
  for (const auto& [p, v] : right) paths.insert(p);
  std::vector<FieldChange> changes;
  for (const auto& path : paths) {
    auto l = left.find(path);
    auto r = right.find(path);
    nlohmann::json before = l == left.end() ? nlohmann::json() : l->second;
    nlohmann::json after = r == right.end() ? nlohmann::json() : r->second;
    if (before == after) continue;
    if (path.rfind("/" + std::string(kStartStateKey), 0) == 0) continue;  // state, not environment
    changes.push_back({path, before, after, Decides(path)});
  }
  return changes;
}

std::optional<std::string> EmulatedPrecisionWarning(const nlohmann::json& fp, const std::string& precision,
                                                    std::size_t cells) {
  const nlohmann::json::json_pointer flags_ptr("/host/" + std::string(kCpuLowPrecisionFlags));
  const nlohmann::json::json_pointer arch_ptr("/host/arch");
  if (cells == 0 || !fp.contains(flags_ptr) || !fp.at(flags_ptr).is_array()) return std::nullopt;
  // The x86 names only: other architectures spell their half-precision features differently.
  if (!fp.contains(arch_ptr) || fp.at(arch_ptr) != "x86_64") return std::nullopt;
  std::vector<std::string> native;
  if (precision == "bf16") native = {"avx512_bf16", "amx_bf16"};
  if (precision == "fp16") native = {"avx512_fp16", "amx_fp16"};
  if (native.empty()) return std::nullopt;
  for (const auto& flag : fp.at(flags_ptr)) {
    if (flag.is_string() &&
        std::find(native.begin(), native.end(), flag.get<std::string>()) != native.end()) {
      // The instructions are there, but whether the framework's CPU kernels use them is not known
      // here: Debian's LibTorch 1.13 ran BERT bs1 in bf16 at 30.9 ms against 1.46 ms in fp32 on a
      // CPU with avx512_bf16 (issue 18).
      return fmt::format(
          "{} cell{} run{} {} on the CPU: it has {} instructions ({}), but the framework's CPU kernels may "
          "not use them and emulate {} instead; run an fp32 twin before trusting the comparison",
          cells, cells == 1 ? "" : "s", cells == 1 ? "s" : "", precision, precision, flag.get<std::string>(),
          precision);
    }
  }
  return fmt::format(
      "{} cell{} run{} {} on the CPU, which has no {} instructions (no {} or {} in /proc/cpuinfo): LibTorch "
      "emulates it, so expect {} slower than fp32; the figures measure the emulation, not {} hardware",
      cells, cells == 1 ? "" : "s", cells == 1 ? "s" : "", precision, precision, native[0], native[1],
      cells == 1 ? "it" : "them", precision);
}

std::vector<std::string> FingerprintWarnings(const nlohmann::json& fp) {
  std::vector<std::string> warnings;
  auto text = [&](const char* pointer) -> std::string {
    nlohmann::json::json_pointer p(pointer);
    return fp.contains(p) && fp.at(p).is_string() ? fp.at(p).get<std::string>() : "";
  };
  std::string build = text("/dlbench/build_type");
  std::transform(build.begin(), build.end(), build.begin(), [](unsigned char c) { return std::tolower(c); });
  if (build == "debug") {
    warnings.push_back("dlbench was built as Debug: the harness's own overhead is not representative");
  }
  std::string governor = text("/host/cpu_governor");
  if (!governor.empty() && governor != "performance" && governor != "unknown") {
    warnings.push_back("CPU frequency governor is '" + governor +
                       "', not 'performance': CPU-side timings move with frequency scaling");
  }
  if (text("/blas/name") == "reference") {
    warnings.push_back(
        "the reference BLAS is active (" + text("/blas/path") +
        "): CPU matrix products run many times slower than with OpenBLAS (install libopenblas0-pthread)");
  }
  if (fp.contains("env") && fp["env"].contains("CUDA_LAUNCH_BLOCKING") &&
      fp["env"]["CUDA_LAUNCH_BLOCKING"] == "1") {
    warnings.push_back(
        "CUDA_LAUNCH_BLOCKING=1 serialises every kernel launch: GPU timings are not representative");
  }
  // More runnable threads than cores when the run starts: its cells will likely share the CPU
  // (the run-queue wait of each cell's runner decides its `contended` verdict; this is the
  // warning before anything ran).
  const nlohmann::json::json_pointer load_ptr("/" + std::string(kStartStateKey) + "/host/" +
                                              kStartLoadAverage1m);
  const nlohmann::json::json_pointer cores_ptr("/host/cpu_logical_cores");
  if (fp.contains(load_ptr) && fp.at(load_ptr).is_number() && fp.contains(cores_ptr) &&
      fp.at(cores_ptr).is_number_integer() && fp.at(cores_ptr).get<int>() > 0) {
    const double load = fp.at(load_ptr).get<double>();
    const int cores = fp.at(cores_ptr).get<int>();
    if (load > 1.5 * cores) {
      warnings.push_back(fmt::format(
          "the host is busy: load average {:.1f} over the last minute on {} logical cores; cells may be "
          "contended (their verdicts say so) and their intervals wider: quiet the machine for numbers to "
          "keep",
          load, cores));
    }
  }
  nlohmann::json::json_pointer devices_ptr("/" + std::string(kStartStateKey) + "/gpu");
  if (fp.contains(devices_ptr) && fp.at(devices_ptr).is_array()) {
    for (const auto& d : fp.at(devices_ptr)) {
      if (!d.contains(kTransientClocksEventReasons) || !d[kTransientClocksEventReasons].is_number()) continue;
      std::string names = EnvironmentalThrottle(d[kTransientClocksEventReasons].get<std::uint64_t>());
      if (!names.empty()) {
        warnings.push_back(
            fmt::format("gpu{} clocks are limited before the run: {}", d.value("index", -1), names));
      }
    }
  }
  return warnings;
}

}  // namespace dlbench::monitor
