// What a cell asks of the load generator, and what it runs with (docs/load.md). As LoadGen keeps
// TestSettings (requested) and TestSettingsInternal (normalised; test_settings_internal.cc), the
// requested settings are the cell's `load` parameters as written, and EffectiveLoadSettings is the
// one normalised form the generator, the runner and the effective cell all read: every default
// applied, every unit converted, the seeds derived.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace dlbench::load {

// LoadGen's four scenarios (shared/notes/libtorch-loadgen-nvml-facts.md §1.1).
enum class Scenario {
  kSingleStream,  // one sample per query; the next query when the previous completes
  kMultiStream,   // samples_per_query samples per query; on completion or at a fixed interval
  kServer,        // one sample per query at Poisson arrivals of target_qps
  kOffline,       // offline_samples samples in one query; the next when it completes
};
const char* ScenarioName(Scenario scenario);  // "single_stream", ... (the `load` values)
std::optional<Scenario> ParseScenario(std::string_view name);

// Whether the input of a query starts in host memory (copied to the device per query, as in a
// real server: the copy is part of the latency) or is pre-made on the device (pure compute
// latency, today's back-to-back infer).
enum class InputResidency { kHost, kDevice };
const char* InputResidencyName(InputResidency residency);

inline constexpr std::uint32_t kDefaultSamplesPerQuery = 8;      // LoadGen's multi_stream default
inline constexpr std::uint32_t kDefaultOfflineSamples = 24'576;  // the rules' offline floor
inline constexpr std::uint32_t kDefaultSampleLibrarySize = 64;
inline constexpr double kDefaultConfidence = 0.99;  // LoadGen's early-stopping confidence
inline constexpr double kSingleStreamPercentile = 0.90;
inline constexpr double kMultiStreamPercentile = 0.99;
inline constexpr double kServerPercentile = 0.99;
inline constexpr std::uint32_t kDefaultPeakMaxProbes = 20;
inline constexpr double kDefaultPeakResolution = 0.05;
// Each probe of a peak search measures at least this long at its rate (peak_min_probe_s): a probe
// of only the early-stopping minimum lasts 72 ms at 6,400/s and missed a throughput that sank over
// seconds on the H200 (docs/load.md "Probe length").
inline constexpr std::int64_t kDefaultPeakMinProbeNs = 5'000'000'000;
inline constexpr double kMaxPeakMinProbeS = 3600;
// After the search, its peak is run again at least this long at its rate (peak_confirm_s): on an
// H100 a peak found by 5 s probes failed a 15 s fixed-rate run at it (docs/load.md "Confirmation").
inline constexpr std::int64_t kDefaultPeakConfirmNs = 15'000'000'000;
inline constexpr double kMaxPeakConfirmS = 3600;
// Queries in flight (issued, not yet reported to the sink) the generator holds at most; a server
// run that falls this far behind ends early, as LoadGen's "Too many outstanding queries".
inline constexpr std::uint32_t kDefaultMaxOutstanding = 1u << 16;

// The normalised settings of one load cell.
struct EffectiveLoadSettings {
  Scenario scenario = Scenario::kSingleStream;
  // Server: the Poisson rate. With peak_search it is the search's first probe.
  double target_qps = 0;
  bool peak_search = false;  // target_qps: max
  // The peak search's bounds (docs/load.md "Peak search"): at most this many probes, bisection
  // until the bracket's hi / lo - 1 <= peak_resolution, and at most peak_max_time_ns over every
  // probe (absent: the cell's max_time_s alone bounds it).
  std::uint32_t peak_max_probes = kDefaultPeakMaxProbes;
  double peak_resolution = kDefaultPeakResolution;
  std::optional<std::int64_t> peak_max_time_ns;
  // Each probe measures at least max(early-stopping minimum, rate x this) queries (0: the minimum only).
  std::int64_t peak_min_probe_ns = kDefaultPeakMinProbeNs;
  // Each confirmation of the peak found measures at least max(peak_min_probe_ns, this) at its
  // rate; 0: no confirmation (docs/load.md "Confirmation").
  std::int64_t peak_confirm_ns = kDefaultPeakConfirmNs;
  std::optional<std::int64_t> latency_bound_ns;
  double latency_percentile = kSingleStreamPercentile;  // the percentile claim (early stopping, bound)
  double confidence = kDefaultConfidence;
  // Samples in each query: 1 (single_stream, server), samples_per_query (multi_stream),
  // offline_samples (offline).
  std::uint32_t samples_per_query = 1;
  std::optional<std::int64_t> query_interval_ns;  // multi_stream at a fixed interval; absent: on completion
  // How many samples the system under test runs at once: the dynamic batcher's max_batch
  // (server), the offline batch (batch_size), or the query itself (single and multi stream).
  std::uint32_t max_batch = 1;
  std::int64_t batch_timeout_ns = 0;  // server: the longest the oldest queued query waits for a fuller batch
  std::uint32_t streams = 1;          // server: batches in flight at once
  std::optional<std::int64_t> min_queries;  // the cell's own floor; the early-stopping minimum applies too
  std::uint32_t sample_library_size = kDefaultSampleLibrarySize;  // pre-made inputs the queries draw from
  InputResidency input_residency = InputResidency::kHost;
  std::uint32_t max_outstanding = kDefaultMaxOutstanding;
  std::uint64_t schedule_seed = 0;  // the Poisson gaps
  std::uint64_t sample_seed = 0;    // which samples each query uses

  // The `load` part of the effective cell (READY), every field with its unit in its name.
  nlohmann::json ToJson() const;
};

// Whether the cell's params ask for inference under load (a `load` key that is not null).
bool LoadRequested(const nlohmann::json& params);

// Reads the load keys of CONFIGURE's params (names and bounds as the config registry declares
// them) and normalises them; `seed` is the cell's seed, from which the schedule and sample seeds
// are derived. kInvalidInput names the key and what it accepts, and the scenario rules
// (docs/load.md "Validity") are checked again here because a command runner's matrix reaches a
// runner without dlbench's checks.
Result<EffectiveLoadSettings> ResolveLoadSettings(const nlohmann::json& params, std::uint64_t seed);

}  // namespace dlbench::load
