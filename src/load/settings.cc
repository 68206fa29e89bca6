#include "load/settings.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "common/hash.h"

namespace dlbench::load {
namespace {

Error Invalid(std::string message) { return MakeError(ErrorKind::kInvalidInput, std::move(message)); }

bool Has(const nlohmann::json& params, const char* key) {
  return params.is_object() && params.contains(key) && !params.at(key).is_null();
}

// An integer parameter in [lo, hi], or nullopt when absent.
Result<std::optional<std::int64_t>> GetInt(const nlohmann::json& params, const char* key, std::int64_t lo,
                                           std::int64_t hi) {
  if (!Has(params, key)) return std::optional<std::int64_t>();
  const nlohmann::json& v = params.at(key);
  if (!v.is_number_integer() ||
      (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) ||
      v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi) {
    return Invalid("parameter '" + std::string(key) + "' must be an integer between " + std::to_string(lo) +
                   " and " + std::to_string(hi) + ", got " + v.dump());
  }
  return std::optional<std::int64_t>(v.get<std::int64_t>());
}

// A finite number with lo < v (or lo <= v when lo_inclusive) and v < hi (or <=), or nullopt.
Result<std::optional<double>> GetNumber(const nlohmann::json& params, const char* key, double lo,
                                        bool lo_inclusive, double hi, bool hi_inclusive) {
  if (!Has(params, key)) return std::optional<double>();
  const nlohmann::json& v = params.at(key);
  const bool ok = v.is_number() && std::isfinite(v.get<double>()) &&
                  (lo_inclusive ? v.get<double>() >= lo : v.get<double>() > lo) &&
                  (hi_inclusive ? v.get<double>() <= hi : v.get<double>() < hi);
  if (!ok) {
    return Invalid("parameter '" + std::string(key) + "' must be a number " + (lo_inclusive ? ">= " : "> ") +
                   nlohmann::json(lo).dump() + " and " + (hi_inclusive ? "<= " : "< ") +
                   nlohmann::json(hi).dump() + ", got " + v.dump());
  }
  return std::optional<double>(v.get<double>());
}

struct KeyScope {
  const char* key;
  std::vector<Scenario> scenarios;  // empty: every scenario
};

// Which keys apply to which scenarios (the config's load rules say the same to the user).
const std::vector<KeyScope>& KeyScopes() {
  static const std::vector<KeyScope> scopes = {
      {"target_qps", {Scenario::kServer}},
      {"latency_bound_ms", {Scenario::kServer}},
      {"max_batch", {Scenario::kServer}},
      {"batch_timeout_us", {Scenario::kServer}},
      {"streams", {Scenario::kServer}},
      {"samples_per_query", {Scenario::kMultiStream}},
      {"query_interval_ms", {Scenario::kMultiStream}},
      {"offline_samples", {Scenario::kOffline}},
      {"latency_percentile", {Scenario::kSingleStream, Scenario::kMultiStream, Scenario::kServer}},
      {"peak_max_probes", {Scenario::kServer}},
      {"peak_max_time_s", {Scenario::kServer}},
      {"peak_min_probe_s", {Scenario::kServer}},
      {"peak_confirm_s", {Scenario::kServer}},
      {"peak_resolution", {Scenario::kServer}},
  };
  return scopes;
}

}  // namespace

const char* ScenarioName(Scenario scenario) {
  switch (scenario) {
    case Scenario::kSingleStream:
      return "single_stream";
    case Scenario::kMultiStream:
      return "multi_stream";
    case Scenario::kServer:
      return "server";
    case Scenario::kOffline:
      return "offline";
  }
  return "single_stream";
}

std::optional<Scenario> ParseScenario(std::string_view name) {
  for (Scenario s :
       {Scenario::kSingleStream, Scenario::kMultiStream, Scenario::kServer, Scenario::kOffline}) {
    if (name == ScenarioName(s)) return s;
  }
  return std::nullopt;
}

const char* InputResidencyName(InputResidency residency) {
  return residency == InputResidency::kDevice ? "device" : "host";
}

bool LoadRequested(const nlohmann::json& params) { return Has(params, "load"); }

nlohmann::json EffectiveLoadSettings::ToJson() const {
  nlohmann::json j = {
      {"scenario", ScenarioName(scenario)},
      {"samples_per_query", samples_per_query},
      {"latency_percentile", latency_percentile},
      {"early_stopping_confidence", confidence},
      {"sample_library_size", sample_library_size},
      {"input_residency", InputResidencyName(input_residency)},
      {"max_batch", max_batch},
      {"max_outstanding", max_outstanding},
      {"schedule_seed", schedule_seed},
      {"sample_seed", sample_seed},
      {"latency_from", scenario == Scenario::kServer || query_interval_ns
                           ? "scheduled arrival (queueing and issue lateness count)"
                           : "issue (scheduled = issued: the next query goes when the previous completes)"},
  };
  if (scenario == Scenario::kServer) {
    j["target_qps"] = peak_search ? nlohmann::json("max") : nlohmann::json(target_qps);
    if (peak_search) {
      j["peak_search_start_qps"] = target_qps;
      j["peak_max_probes"] = peak_max_probes;
      j["peak_resolution"] = peak_resolution;
      if (peak_max_time_ns) j["peak_max_time_s"] = static_cast<double>(*peak_max_time_ns) / 1e9;
      j["peak_min_probe_s"] = static_cast<double>(peak_min_probe_ns) / 1e9;
      j["peak_confirm_s"] = static_cast<double>(peak_confirm_ns) / 1e9;
    }
    j["arrivals"] = "Poisson (exponential gaps from mt19937_64(schedule_seed), inverse CDF)";
    j["batch_timeout_us"] = static_cast<double>(batch_timeout_ns) / 1e3;
    j["streams"] = streams;
  }
  if (latency_bound_ns) j["latency_bound_ms"] = static_cast<double>(*latency_bound_ns) / 1e6;
  if (query_interval_ns) j["query_interval_ms"] = static_cast<double>(*query_interval_ns) / 1e6;
  if (min_queries) j["min_queries"] = *min_queries;
  return j;
}

Result<EffectiveLoadSettings> ResolveLoadSettings(const nlohmann::json& params, std::uint64_t seed) {
  if (!LoadRequested(params)) return Invalid("no 'load' parameter: the cell is not inference under load");
  const nlohmann::json& load = params.at("load");
  std::optional<Scenario> scenario = load.is_string() ? ParseScenario(load.get<std::string>()) : std::nullopt;
  if (!scenario) {
    return Invalid("parameter 'load' must be one of single_stream, multi_stream, server, offline, got " +
                   load.dump());
  }
  EffectiveLoadSettings s;
  s.scenario = *scenario;
  if (Has(params, "scenario") && params.at("scenario") != "infer") {
    return Invalid("load needs scenario: infer (got " + params.at("scenario").dump() + ")");
  }
  for (const KeyScope& scope : KeyScopes()) {
    if (!Has(params, scope.key) || scope.scenarios.empty()) continue;
    bool applies = false;
    std::string names;
    for (Scenario allowed : scope.scenarios) {
      applies = applies || allowed == s.scenario;
      names += std::string(names.empty() ? "" : " or ") + ScenarioName(allowed);
    }
    if (!applies) {
      return Invalid("parameter '" + std::string(scope.key) + "' applies only with load: " + names +
                     " (this cell is " + ScenarioName(s.scenario) + ")");
    }
  }

  // target_qps: a rate, or "max" for the peak search.
  if (Has(params, "target_qps")) {
    const nlohmann::json& q = params.at("target_qps");
    if (q.is_string() && q.get<std::string>() == "max") {
      s.peak_search = true;
    } else if (q.is_number() && std::isfinite(q.get<double>()) && q.get<double>() > 0 &&
               q.get<double>() <= 1e9) {
      s.target_qps = q.get<double>();
    } else {
      return Invalid("parameter 'target_qps' must be a number > 0 and <= 1e9 or max, got " + q.dump());
    }
  } else if (s.scenario == Scenario::kServer) {
    return Invalid("load: server needs target_qps (a rate, or max to search for the peak)");
  }
  auto bound = GetNumber(params, "latency_bound_ms", 0, false, 1e7, true);
  if (!bound.ok()) return bound.error();
  if (*bound) s.latency_bound_ns = std::llround(**bound * 1e6);
  if (s.peak_search && !s.latency_bound_ns) {
    return Invalid("target_qps: max needs latency_bound_ms (the bound the peak must stay within)");
  }
  if (s.peak_search) s.target_qps = 100.0;  // the search's first probe; it brackets from there
  auto max_probes = GetInt(params, "peak_max_probes", 1, 100);
  if (!max_probes.ok()) return max_probes.error();
  auto resolution = GetNumber(params, "peak_resolution", 0.001, true, 1, true);
  if (!resolution.ok()) return resolution.error();
  auto peak_time = GetNumber(params, "peak_max_time_s", 0, false, 86400, true);
  if (!peak_time.ok()) return peak_time.error();
  auto probe_time = GetNumber(params, "peak_min_probe_s", 0, true, kMaxPeakMinProbeS, true);
  if (!probe_time.ok()) return probe_time.error();
  auto confirm_time = GetNumber(params, "peak_confirm_s", 0, true, kMaxPeakConfirmS, true);
  if (!confirm_time.ok()) return confirm_time.error();
  if (!s.peak_search && (*max_probes || *resolution || *peak_time || *probe_time || *confirm_time)) {
    return Invalid(std::string("parameter '") +
                   (*max_probes   ? "peak_max_probes"
                    : *resolution ? "peak_resolution"
                    : *peak_time  ? "peak_max_time_s"
                    : *probe_time ? "peak_min_probe_s"
                                  : "peak_confirm_s") +
                   "' applies only with target_qps: max");
  }
  s.peak_max_probes = static_cast<std::uint32_t>(max_probes->value_or(kDefaultPeakMaxProbes));
  s.peak_resolution = resolution->value_or(kDefaultPeakResolution);
  if (*peak_time) s.peak_max_time_ns = std::llround(**peak_time * 1e9);
  if (*probe_time) s.peak_min_probe_ns = std::llround(**probe_time * 1e9);
  if (*confirm_time) s.peak_confirm_ns = std::llround(**confirm_time * 1e9);

  auto percentile = GetNumber(params, "latency_percentile", 0, false, 1, false);
  if (!percentile.ok()) return percentile.error();
  s.latency_percentile = percentile->value_or(s.scenario == Scenario::kSingleStream  ? kSingleStreamPercentile
                                              : s.scenario == Scenario::kMultiStream ? kMultiStreamPercentile
                                                                                     : kServerPercentile);
  auto confidence = GetNumber(params, "early_stopping_confidence", 0.5, false, 1, false);
  if (!confidence.ok()) return confidence.error();
  s.confidence = confidence->value_or(kDefaultConfidence);

  auto batch_size = GetInt(params, "batch_size", 1, 1 << 20);
  if (!batch_size.ok()) return batch_size.error();
  auto samples_per_query = GetInt(params, "samples_per_query", 1, 1 << 16);
  if (!samples_per_query.ok()) return samples_per_query.error();
  auto interval = GetNumber(params, "query_interval_ms", 0, false, 1e7, true);
  if (!interval.ok()) return interval.error();
  auto max_batch = GetInt(params, "max_batch", 1, 1 << 16);
  if (!max_batch.ok()) return max_batch.error();
  auto timeout = GetInt(params, "batch_timeout_us", 0, 1'000'000'000);
  if (!timeout.ok()) return timeout.error();
  auto streams = GetInt(params, "streams", 1, 64);
  if (!streams.ok()) return streams.error();
  auto offline = GetInt(params, "offline_samples", 1, 100'000'000);
  if (!offline.ok()) return offline.error();
  auto min_queries = GetInt(params, "min_queries", 1, 1'000'000'000);
  if (!min_queries.ok()) return min_queries.error();
  s.min_queries = *min_queries;
  auto library = GetInt(params, "sample_library_size", 1, 1 << 20);
  if (!library.ok()) return library.error();
  s.sample_library_size = static_cast<std::uint32_t>(library->value_or(kDefaultSampleLibrarySize));
  if (Has(params, "input_residency")) {
    const nlohmann::json& r = params.at("input_residency");
    if (r == "host") {
      s.input_residency = InputResidency::kHost;
    } else if (r == "device") {
      s.input_residency = InputResidency::kDevice;
    } else {
      return Invalid("parameter 'input_residency' must be one of host, device, got " + r.dump());
    }
  }

  const auto batch = static_cast<std::uint32_t>(batch_size->value_or(1));
  switch (s.scenario) {
    case Scenario::kSingleStream:
      s.samples_per_query = 1;
      s.max_batch = 1;
      break;
    case Scenario::kMultiStream:
      s.samples_per_query = static_cast<std::uint32_t>(samples_per_query->value_or(kDefaultSamplesPerQuery));
      s.max_batch = s.samples_per_query;
      if (*interval) s.query_interval_ns = std::llround(**interval * 1e6);
      break;
    case Scenario::kServer:
      s.samples_per_query = 1;
      s.max_batch = static_cast<std::uint32_t>(max_batch->value_or(batch));
      s.batch_timeout_ns = timeout->value_or(0) * 1000;
      s.streams = static_cast<std::uint32_t>(streams->value_or(1));
      break;
    case Scenario::kOffline:
      s.samples_per_query = static_cast<std::uint32_t>(offline->value_or(kDefaultOfflineSamples));
      s.max_batch = batch;
      break;
  }
  s.schedule_seed = SplitMix64(seed ^ 0x5343484544554C45ull);  // "SCHEDULE"
  s.sample_seed = SplitMix64(seed ^ 0x53414D504C455321ull);    // "SAMPLES!"
  return s;
}

}  // namespace dlbench::load
