#include "orchestrator/load_cell.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "common/human_text.h"
#include "load/settings.h"
#include "orchestrator/load_decomposition.h"
#include "orchestrator/peak_cell.h"
#include "record/metrics.h"
#include "record/series.h"
#include "stats/early_stopping.h"
#include "stats/latency.h"

namespace dlbench::orchestrator {
namespace {

namespace metric = record::metric;

// LoadGen's issue tolerance is not a setting; the torch runner's peak search uses 1% as well.
constexpr double kIssueTolerance = 0.01;

std::string IdList(const std::vector<std::uint64_t>& ids, std::int64_t total) {
  std::string out;
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(ids[i]);
  if (total > static_cast<std::int64_t>(ids.size())) {
    out += fmt::format(" and {} more", total - static_cast<std::int64_t>(ids.size()));
  }
  return out;
}

// "12.4 ms", or "12.45 s" from a second on (an overloaded server's queue).
std::string Ms(double ns) {
  return ns >= 1e9 ? FormatSignificant(ns / 1e9, 4) + " s" : FormatSignificant(ns / 1e6, 4) + " ms";
}

std::string PercentileName(double p) { return fmt::format("p{:g}", p * 100); }

void SetFinite(record::CellRecord& rec, std::string_view name, double value) {
  if (std::isfinite(value)) record::SetMetric(rec, name, value);
}

// The scenario's headline figure, as LoadGen's summary names it (results.cc).
nlohmann::json Headline(const std::string& scenario, double percentile) {
  if (scenario == "server") {
    return {{"name", "Completed samples per second"},
            {"metric", std::string(metric::kLoadCompletedSamplesPerS)}};
  }
  if (scenario == "offline")
    return {{"name", "Samples per second"}, {"metric", std::string(metric::kLoadSamplesPerS)}};
  return {{"name", fmt::format("{:g}th percentile latency (early stopping)", percentile * 100)},
          {"metric", std::string(metric::kQueryLatencyEarlyStoppingNs)}};
}

// Every record as series points: latency and issue delay always, the decomposition where present.
void AddQuerySeries(const std::vector<record::QueryRecord>& records, record::CellRecord& rec) {
  namespace series = record::series;
  rec.series.reserve(rec.series.size() + records.size() * 2);
  auto add = [&](std::int64_t t, std::string_view name, std::int64_t v) {
    rec.series.push_back({t, std::string(name), static_cast<double>(v)});
  };
  for (const record::QueryRecord& r : records) {
    add(r.scheduled_ns, series::kLoadLatencyNs, r.completed_ns - r.scheduled_ns);
    add(r.scheduled_ns, series::kLoadIssueDelayNs, r.issued_ns - r.scheduled_ns);
    if (r.batch_samples > 0) add(r.scheduled_ns, series::kLoadBatchSamples, r.batch_samples);
    if (r.present & record::kQueryHasHostPre) add(r.scheduled_ns, series::kLoadHostPreNs, r.host_pre_ns);
    if (r.present & record::kQueryHasH2d) add(r.scheduled_ns, series::kLoadH2dNs, r.h2d_ns);
    if (r.present & record::kQueryHasCompute) add(r.scheduled_ns, series::kLoadComputeNs, r.compute_ns);
    if (r.present & record::kQueryHasD2h) add(r.scheduled_ns, series::kLoadD2hNs, r.d2h_ns);
    if (r.present & record::kQueryHasHostPost) add(r.scheduled_ns, series::kLoadHostPostNs, r.host_post_ns);
  }
}

}  // namespace

bool IsLoadCell(const nlohmann::json& params) { return load::LoadRequested(params); }

Result<LoadCellSettings> LoadCellSettingsOf(const nlohmann::json& params, std::uint64_t seed) {
  auto settings = load::ResolveLoadSettings(params, seed);
  if (!settings.ok()) return settings.error();
  LoadCellSettings out;
  out.scenario = load::ScenarioName(settings->scenario);
  out.peak_search = settings->peak_search;
  out.peak_max_probes = settings->peak_max_probes;
  out.peak_resolution = settings->peak_resolution;
  out.peak_confirm = settings->peak_confirm_ns > 0;
  out.claim.percentile_claim = settings->scenario != load::Scenario::kOffline;
  if (settings->latency_bound_ns)
    out.claim.latency_bound_ns = static_cast<double>(*settings->latency_bound_ns);
  out.claim.early_stopping.percentile = settings->latency_percentile;
  out.claim.early_stopping.confidence = settings->confidence;
  out.claim.min_queries = settings->min_queries.value_or(1);
  out.claim.ceilings_only = settings->peak_search;
  return out;
}

LoadRecorder::LoadRecorder(const config::MeasureSettings& measure, const LoadCellSettings& settings)
    : settings_(settings), policy_(measure, settings.claim) {}

std::optional<std::string> LoadRecorder::Add(const protocol::QueryBatch& batch, bool measuring) {
  if (batch.rank != 0) return fmt::format("QUERIES of rank {}: a load cell has one rank", batch.rank);
  const std::size_t kept_before = records_.size();
  for (const record::QueryRecord& r : batch.records) {
    if (r.query_id < next_id_) {
      if (duplicate_ids_.size() < kNamedIds) duplicate_ids_.push_back(r.query_id);
      ++duplicates_;
      continue;
    }
    for (std::uint64_t id = next_id_; id < r.query_id; ++id) {
      if (dropped_ids_.size() >= kNamedIds) break;
      dropped_ids_.push_back(id);
    }
    dropped_ += static_cast<std::int64_t>(r.query_id - next_id_);
    next_id_ = r.query_id + 1;
    records_.push_back(r);
  }
  if (measuring) policy_.Add(records_.data() + kept_before, records_.size() - kept_before);
  return std::nullopt;
}

std::string LoadRecorder::IdProblems(std::optional<std::int64_t> issued) const {
  std::vector<std::uint64_t> dropped = dropped_ids_;
  std::int64_t dropped_total = dropped_;
  if (issued && *issued > static_cast<std::int64_t>(next_id_)) {
    for (auto id = next_id_; id < static_cast<std::uint64_t>(*issued) && dropped.size() < kNamedIds; ++id) {
      dropped.push_back(id);
    }
    dropped_total += *issued - static_cast<std::int64_t>(next_id_);
  }
  std::string out;
  if (dropped_total > 0) {
    out = fmt::format("{} issued quer{} never arrived (query id {})", dropped_total,
                      dropped_total == 1 ? "y" : "ies", IdList(dropped, dropped_total));
  }
  if (duplicates_ > 0) {
    out += fmt::format("{}{} record{} repeated a query id already received (query id {})",
                       out.empty() ? "" : "; ", duplicates_, duplicates_ == 1 ? "" : "s",
                       IdList(duplicate_ids_, duplicates_));
  }
  return out;
}

std::int64_t LoadRecorder::OutstandingTail(std::optional<std::int64_t> issued) const {
  if (!issued || dropped_ != 0 || duplicates_ != 0) return 0;
  return std::max<std::int64_t>(*issued - static_cast<std::int64_t>(next_id_), 0);
}

LoadConclusion ConcludeLoad(const LoadRecorder& load, std::optional<std::int64_t> issued,
                            const std::string& stop_reason, const std::string& done_reason,
                            record::CellRecord& rec) {
  LoadConclusion out;
  const std::vector<record::QueryRecord>& records = load.records();
  const LoadCellSettings& s = load.settings();
  const measure::LoadClaim& claim = s.claim;
  AddQuerySeries(records, rec);
  const auto measured = static_cast<std::size_t>(std::clamp<std::int64_t>(
      load.policy().MeasuredQueries(), 0, static_cast<std::int64_t>(records.size())));
  rec.window = record::MeasuredWindow{0, static_cast<std::int64_t>(measured)};
  rec.warmup_rule = "none (load: every batch size ran before READY)";
  rec.stop_reason = stop_reason;

  nlohmann::json info = {{"scenario", s.scenario},
                         {"queries_received", records.size()},
                         {"measured_queries", measured},
                         {"query_floor", load.policy().floor()},
                         {"latency_percentile", claim.early_stopping.percentile},
                         {"early_stopping_confidence", claim.early_stopping.confidence},
                         {"headline", Headline(s.scenario, claim.early_stopping.percentile)}};
  if (claim.latency_bound_ns) info["latency_bound_ms"] = *claim.latency_bound_ns / 1e6;
  if (issued) info["queries_issued"] = *issued;
  rec.extras["load"] = info;

  // A runner that fell behind ends (too many outstanding, or its drain ran out) with the last
  // queries never completed: the system under test's limit, not a protocol fault. They are named
  // in the verdict; the latencies are of the completed queries and understate the rest.
  const bool ended_behind = done_reason == "too_many_outstanding" || done_reason == "drain_timeout" ||
                            done_reason == "dropped_after_stop";
  // A peak search's report accounts for the issued queries without records (its last probe's
  // `dropped`): ConcludePeakSearch checks the tail against `issued`.
  const std::int64_t outstanding = ended_behind ? load.OutstandingTail(issued) : 0;
  if (outstanding > 0) {
    rec.extras["load"]["queries_outstanding_at_end"] = outstanding;
  } else if (std::string ids = load.IdProblems(s.peak_search ? std::nullopt : issued); !ids.empty()) {
    out.invalid = "the runner's query records are not each issued query once: " + ids;
    return out;
  }
  if (measured == 0) {
    out.invalid = "too little data: no query record arrived";
    return out;
  }
  if (s.peak_search) return ConcludePeakSearch(load, issued, stop_reason, done_reason, rec);
  out.reasons =
      MeasureLoadWindow(s, records, 0, measured, load.policy().floor(), stop_reason, done_reason, rec);
  if (outstanding > 0) {
    const std::string behind = fmt::format(
        "fell_behind: {} of {} issued queries were still outstanding when the runner ended ({}): the "
        "system under test fell behind the schedule; the latencies shown are of the {} completed queries "
        "only",
        outstanding, *issued, done_reason, records.size());
    auto old_behind = std::find_if(out.reasons.begin(), out.reasons.end(),
                                   [](const std::string& r) { return r.rfind("fell_behind:", 0) == 0; });
    if (old_behind != out.reasons.end()) out.reasons.erase(old_behind);
    out.reasons.insert(out.reasons.begin(), behind);
  }
  return out;
}

std::vector<std::string> MeasureLoadWindow(const LoadCellSettings& s,
                                           const std::vector<record::QueryRecord>& records, std::size_t begin,
                                           std::size_t end, std::int64_t floor,
                                           const std::string& stop_reason, const std::string& done_reason,
                                           record::CellRecord& rec) {
  const measure::LoadClaim& claim = s.claim;
  const std::size_t measured = end - begin;
  rec.window = record::MeasuredWindow{static_cast<std::int64_t>(begin), static_cast<std::int64_t>(measured)};
  if (measured == 0) return {"too_short: no query was measured"};
  std::vector<double> latencies(measured);
  std::vector<std::int64_t> scheduled(measured), issued_ns(measured), completed(measured);
  std::int64_t samples = 0;
  for (std::size_t i = 0; i < measured; ++i) {
    const record::QueryRecord& r = records[begin + i];
    latencies[i] = static_cast<double>(r.completed_ns - r.scheduled_ns);
    scheduled[i] = r.scheduled_ns;
    issued_ns[i] = r.issued_ns;
    completed[i] = r.completed_ns;
    samples += r.samples;
  }
  const std::int64_t first_ns = scheduled.front();
  const std::int64_t last_done_ns = *std::max_element(completed.begin(), completed.end());
  const stats::LatencySummary lat = stats::SummarizeLatencies(latencies);
  std::vector<double> sorted = latencies;
  std::sort(sorted.begin(), sorted.end());
  const double at_percentile = stats::LoadGenPercentileSorted(sorted, claim.early_stopping.percentile);

  record::SetMetric(rec, metric::kLoadQueries, static_cast<double>(measured));
  SetFinite(rec, metric::kQueryLatencyMeanNs, lat.mean);
  SetFinite(rec, metric::kQueryLatencyMinNs, lat.min);
  SetFinite(rec, metric::kQueryLatencyMaxNs, lat.max);
  SetFinite(rec, metric::kQueryLatencyP50Ns, lat.p50);
  SetFinite(rec, metric::kQueryLatencyP90Ns, lat.p90);
  SetFinite(rec, metric::kQueryLatencyP99Ns, lat.p99);
  SetFinite(rec, metric::kQueryLatencyP999Ns, lat.p999);
  if (claim.percentile_claim) SetFinite(rec, metric::kQueryLatencyAtPercentileNs, at_percentile);
  // LoadGen's rates (results.cc): completed samples over the test's time from its start (the
  // first scheduled query) to the last completion, with the "(n - 1)" open end; offline's
  // samples over the same span; single stream's QPS with the generator's overhead from the last
  // issue, and without it as 1 / mean latency.
  SetFinite(rec, metric::kLoadCompletedSamplesPerS,
            stats::RatePerSecond(static_cast<std::size_t>(samples), first_ns, last_done_ns));
  if (last_done_ns > first_ns) {
    record::SetMetric(rec, metric::kLoadSamplesPerS,
                      static_cast<double>(samples) / (static_cast<double>(last_done_ns - first_ns) * 1e-9));
  }
  SetFinite(rec, metric::kLoadQpsWithOverhead, stats::RatePerSecond(measured, first_ns, issued_ns.back()));
  SetFinite(rec, metric::kLoadQpsWithoutOverhead, lat.mean > 0 ? 1e9 / lat.mean : NAN);
  const stats::IssueRateCheck issue = stats::CheckIssueRate(scheduled, issued_ns, kIssueTolerance);
  SetFinite(rec, metric::kLoadScheduledPerS, issue.scheduled_per_s);
  SetFinite(rec, metric::kLoadIssuedPerS, issue.achieved_per_s);
  AddLatencyDecomposition(records, begin, end, rec);

  std::vector<std::string> reasons;
  const std::string pname = PercentileName(claim.early_stopping.percentile);
  if (claim.latency_bound_ns) {
    const double bound = *claim.latency_bound_ns;
    const auto over = std::count_if(latencies.begin(), latencies.end(), [&](double l) { return l > bound; });
    const stats::BoundedEarlyStopping es =
        stats::EarlyStoppingWithBound(static_cast<std::int64_t>(measured), over, claim.early_stopping);
    const bool ended_behind = done_reason == "too_many_outstanding" || done_reason == "drain_timeout" ||
                              done_reason == "dropped_after_stop";
    const bool kept_up = issue.kept_up && !ended_behind;
    const bool bound_met = at_percentile <= bound;
    record::SetMetric(rec, metric::kLoadEarlyStoppingMet, es.met ? 1 : 0);
    record::SetMetric(rec, metric::kLoadEarlyStoppingQueriesNeeded, static_cast<double>(es.queries_needed));
    record::SetMetric(rec, metric::kLoadLatencyBoundMet, bound_met ? 1 : 0);
    record::SetMetric(rec, metric::kLoadIssueKeptUp, kept_up ? 1 : 0);
    if (ended_behind) {
      reasons.push_back(fmt::format(
          "fell_behind: the runner ended with queries outstanding ({}): the system under test fell behind "
          "the schedule",
          done_reason));
    } else if (!issue.kept_up) {
      reasons.push_back(
          fmt::format("fell_behind: issued {} queries/s of the scheduled {}/s (more "
                      "than {:g}% behind)",
                      FormatSignificant(issue.achieved_per_s, 4), FormatSignificant(issue.scheduled_per_s, 4),
                      kIssueTolerance * 100));
    }
    if (!bound_met) {
      reasons.push_back(fmt::format("over_bound: {} {} > latency_bound_ms {:g} ({} of {} queries over)",
                                    pname, Ms(at_percentile), bound / 1e6, over, measured));
    } else if (!es.met) {
      reasons.push_back(fmt::format(
          "too_short: early stopping needs {} queries with {} over the bound; {} were measured (stopped: {})",
          es.queries_needed, over, measured, stop_reason));
    }
  } else if (claim.percentile_claim) {
    const stats::EarlyStoppingEstimate es = stats::EstimatePercentileBound(latencies, claim.early_stopping);
    record::SetMetric(rec, metric::kLoadEarlyStoppingMet, es.met ? 1 : 0);
    record::SetMetric(rec, metric::kLoadEarlyStoppingQueriesNeeded, static_cast<double>(es.min_queries));
    if (es.latency) record::SetMetric(rec, metric::kQueryLatencyEarlyStoppingNs, *es.latency);
    if (!es.met) {
      reasons.push_back(
          fmt::format("too_short: an early-stopping {} estimate needs {} queries; {} were measured", pname,
                      es.min_queries, measured));
    }
  }
  if (static_cast<std::int64_t>(measured) < floor && reasons.empty()) {
    reasons.push_back(fmt::format("too_short: {} queries measured; the cell needs at least {} (min_queries)",
                                  measured, floor));
  }
  return reasons;
}

}  // namespace dlbench::orchestrator
