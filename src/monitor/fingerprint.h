// The environment fingerprint recorded with every run (R13): what machine, drivers, libraries and
// switches produced a number, which of those decide whether two numbers may be compared, and what
// changed between two runs ("cuDNN 9.1 -> 9.3").
//
// Layout (fingerprint_version 1):
//   host:    hostname, os, os_id, os_version_id, kernel, kernel_version, arch, cpu_model,
//            cpu_logical_cores, cpu_governor ("performance", "powersave", "mixed: a, b", "unknown"),
//            memory_total_bytes
//   dlbench: version, major, git_commit, build_type, compiler
//   blas:    path (the libblas.so.3 the loader resolves), name (openblas-pthread, reference, mkl...)
//   env:     performance-relevant variables (OMP_*, MKL_*, OPENBLAS_*, CUDA_*, CUBLAS_*, NCCL_*,
//            TORCH_*, PYTORCH_*, DLBENCH_*, ...; values of names that look like secrets redacted)
//   gpu:     state, driver_version, nvml_version, models, power_limits_w, devices (from NVML)
//   runner:  the runner's HELLO as sent (framework versions, CUDA, cuDNN, NCCL, devices)
//   monitor: each sampler's state
//   launcher: set by the run, not here: the launcher contract as `dlbench run` read it
//            (launch::ToJson: launcher, values and their sources, the shard's source; NCCL_* are in env)
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "monitor/procfs_sampler.h"

namespace dlbench::monitor {

// Where the host facts come from (a seam for tests).
struct HostSources {
  std::shared_ptr<const ProcFs> files;              // /etc/os-release, /proc/cpuinfo, /proc/meminfo, cpufreq
  nlohmann::json uname = nlohmann::json::object();  // {sysname, nodename, release, version, machine}
  std::vector<std::string> environment;             // "NAME=value"
  std::string blas_path;                            // the real path of libblas.so.3; "" when unknown
};
// This machine: the real filesystem, uname(2), environ, and libblas.so.3 resolved through
// /etc/alternatives/libblas.so.3-<multiarch>, else /usr/lib/<multiarch>/libblas.so.3. Loads
// nothing (dlopen'ing a BLAS would start its thread pool).
HostSources RealHostSources();

// Where the fingerprint keeps the devices' state at the moment it was taken (each GPU's clocks
// event reasons, the host's load average): read for FingerprintWarnings, but not part of the environment, so
// DiffFingerprints skips it and it never decides comparability.
inline constexpr const char* kStartStateKey = "start_state";
inline constexpr const char* kTransientClocksEventReasons = "clocks_event_reasons";
// host.cpu_low_precision_flags: which of these /proc/cpuinfo lists (x86 bf16/fp16 dot products
// and AMX tiles; arm64 bf16): without them LibTorch emulates bf16/fp16 on the CPU, slower than fp32.
inline constexpr const char* kCpuLowPrecisionFlags = "cpu_low_precision_flags";
inline constexpr const char* kLowPrecisionCpuFlags[] = {"avx512_bf16", "amx_bf16", "avx512_fp16", "amx_fp16",
                                                        "bf16"};
// The warning for `cells` cells that ask the CPU for `precision` (bf16, fp16): emulated when the
// CPU has no instructions for it, possibly emulated when it has them (the framework's kernels may
// not use them); nullopt for other precisions, no cells, or a fingerprint without the CPU's flags.
std::optional<std::string> EmulatedPrecisionWarning(const nlohmann::json& fingerprint,
                                                    const std::string& precision, std::size_t cells);
// start_state.host.load_average_1m: /proc/loadavg's first figure as the fingerprint was taken.
inline constexpr const char* kStartLoadAverage1m = "load_average_1m";

nlohmann::json CollectFingerprint(const nlohmann::json& runner_hello,
                                  const nlohmann::json& monitor_description);
nlohmann::json CollectFingerprintFrom(const HostSources& sources, const nlohmann::json& runner_hello,
                                      const nlohmann::json& monitor_description);

// "openblas-pthread", "openblas-openmp", "openblas-serial", "openblas", "blis", "mkl", "atlas",
// "reference" (Debian's netlib libblas3), or "unknown", from the library's real path.
std::string BlasNameFromPath(const std::string& path);

// JSON pointers of the fields that decide comparability: hardware model, GPU models and power
// limits, driver, framework and its CUDA/cuDNN/NCCL, BLAS, threading and precision switches in
// the environment, dlbench's major version. Not hostnames, times, PIDs, UUIDs or git commits.
const std::vector<std::string>& ComparabilityFields();
// {pointer: value or null} over ComparabilityFields().
nlohmann::json ComparabilitySubset(const nlohmann::json& fingerprint);
// FNV-1a 64 (common/hash.h, the standard offset basis) over ComparabilitySubset(fp).dump() (keys sorted, so
// canonical), as 16 hex digits. Two runs are comparable exactly when their hashes match.
std::string ComparabilityHash(const nlohmann::json& fingerprint);

struct FieldChange {
  std::string path;       // JSON pointer of a leaf: "/runner/framework/cudnn"
  nlohmann::json before;  // null when added
  nlohmann::json after;   // null when removed
  bool decides_comparability = false;
};
// Every leaf that differs, in path order.
std::vector<FieldChange> DiffFingerprints(const nlohmann::json& a, const nlohmann::json& b);

// Loud warnings about the environment: a debug build, a CPU governor other than "performance",
// GPU clocks already limited (thermal, power brake, HW slowdown) when described, the reference
// BLAS, CUDA_LAUNCH_BLOCKING set.
std::vector<std::string> FingerprintWarnings(const nlohmann::json& fingerprint);

}  // namespace dlbench::monitor
