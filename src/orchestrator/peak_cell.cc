#include "orchestrator/peak_cell.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "load/peak_search.h"
#include "record/metrics.h"
#include "stats/early_stopping.h"
#include "stats/peak_search.h"

namespace dlbench::orchestrator {
namespace {

namespace metric = record::metric;

nlohmann::json MetricOrNull(const record::CellRecord& rec, std::string_view name) {
  const std::optional<double> v = record::MetricValue(rec, name);
  return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json MsOrNull(const record::CellRecord& rec, std::string_view name) {
  const std::optional<double> v = record::MetricValue(rec, name);
  return v && std::isfinite(*v) ? nlohmann::json(*v / 1e6) : nlohmann::json(nullptr);
}

// The runner's name for how its search ended, when it is one of stats::PeakSearchEnd's.
std::string EndName(const nlohmann::json& report, const std::string& done_reason) {
  if (report.contains("end") && report["end"].is_string()) {
    const std::string end = report["end"].get<std::string>();
    for (stats::PeakSearchEnd e : {stats::PeakSearchEnd::kConverged, stats::PeakSearchEnd::kProbeCap,
                                   stats::PeakSearchEnd::kNoPassingRate, stats::PeakSearchEnd::kRateCap,
                                   stats::PeakSearchEnd::kStopped}) {
      if (end == stats::PeakSearchEndName(e)) return end;
    }
  }
  return done_reason.empty() ? "unknown" : done_reason;
}

}  // namespace

LoadConclusion ConcludePeakSearch(const LoadRecorder& load, std::optional<std::int64_t> issued,
                                  const std::string& stop_reason, const std::string& done_reason,
                                  record::CellRecord& rec) {
  LoadConclusion out;
  const LoadCellSettings& s = load.settings();
  const std::vector<record::QueryRecord>& records = load.records();
  const nlohmann::json* report = nullptr;
  if (rec.extras.contains("info") && rec.extras["info"].is_object() && rec.extras["info"].contains("load") &&
      rec.extras["info"]["load"].is_object() && rec.extras["info"]["load"].contains("peak_search")) {
    report = &rec.extras["info"]["load"]["peak_search"];
  }
  if (report == nullptr) {
    out.invalid = "target_qps: max: the runner sent no peak search report (EXTRAS info.load.peak_search)";
    return out;
  }
  auto probes = load::ParseProbeReports(*report, s.peak_max_probes);
  if (!probes.ok()) {
    out.invalid = "the runner's peak search report is malformed: " + probes.error().message;
    return out;
  }
  if (probes->empty()) {
    out.invalid = "the runner's peak search report has no probe";
    return out;
  }
  // Every record belongs to one probe's warm-up or measured range, in id order; after them come
  // the last probe's dropped queries, which have no record; together they are every issued id.
  std::uint64_t next = 0;
  std::uint64_t dropped = 0;
  for (std::size_t i = 0; i < probes->size(); ++i) {
    const load::ProbeReport& p = (*probes)[i];
    if (p.warmup_first_query != next || p.first_query != next + p.warmup_queries) {
      out.invalid = fmt::format(
          "the runner's peak search report does not account for its query records: probe {} starts its "
          "warm-up at query id {} and its measured queries at {}; the previous probe ended at {}",
          i + 1, p.warmup_first_query, p.first_query, next);
      return out;
    }
    if (p.dropped > 0 && i + 1 != probes->size()) {
      out.invalid = fmt::format(
          "the runner's peak search report does not account for its query records: probe {} of {} says {} "
          "of its queries were dropped, but only the last probe can end with dropped queries (after STOP)",
          i + 1, probes->size(), p.dropped);
      return out;
    }
    next = p.first_query + p.queries + p.dropped;
    dropped += p.dropped;
  }
  if (next - dropped != records.size()) {
    out.invalid = fmt::format(
        "the runner's peak search report does not account for its query records: its probes cover query "
        "ids [0, {}){} and {} records arrived",
        next, dropped > 0 ? fmt::format(", the last {} dropped,", dropped) : "", records.size());
    return out;
  }
  if (issued && static_cast<std::uint64_t>(std::max<std::int64_t>(*issued, 0)) != next) {
    out.invalid = fmt::format(
        "the runner's peak search report does not account for its issued queries: its probes cover query "
        "ids [0, {}) ({} records, {} dropped) and its DONE says {} were issued",
        next, records.size(), dropped, *issued);
    return out;
  }

  // Each probe is the server cell it stands for, judged as ConcludeLoad judges one: at least the
  // early-stopping minimum (or min_queries), as the runner sized it.
  const std::int64_t floor = std::max<std::int64_t>(
      stats::MinQueriesForClaim(s.claim.early_stopping, /*has_bound=*/true), s.claim.min_queries);
  stats::PeakBracket bracket;
  nlohmann::json judged = nlohmann::json::array();
  std::vector<std::vector<std::string>> probe_reasons;
  for (std::size_t i = 0; i < probes->size(); ++i) {
    const load::ProbeReport& p = (*probes)[i];
    record::CellRecord scratch;
    std::vector<std::string> reasons;
    if (p.queries == 0) {
      reasons.push_back(
          p.too_many_outstanding ? "fell_behind: the probe's warm-up ended with too many outstanding queries"
          : p.dropped > 0
              ? fmt::format("fell_behind: STOP came in the probe's warm-up, and its last {} queries were "
                            "dropped after the STOP drain",
                            p.dropped)
              : "too_short: the probe measured no query");
    } else {
      // A probe that dropped queries is the server cell that ended dropped_after_stop: fell_behind.
      reasons =
          MeasureLoadWindow(s, records, p.first_query, p.first_query + p.queries, floor, "its probe's end",
                            p.too_many_outstanding ? "too_many_outstanding"
                            : p.dropped > 0        ? "dropped_after_stop"
                                                   : "",
                            scratch);
    }
    // A probe the runner says the search's end cut (the last one) must be one whose records fail
    // it for nothing but being short; it is then no failing rate.
    if (p.cut) {
      const auto failing = std::find_if(reasons.begin(), reasons.end(),
                                        [](const std::string& r) { return r.rfind("too_short:", 0) != 0; });
      if (i + 1 != probes->size() || failing != reasons.end() || reasons.empty()) {
        out.invalid = fmt::format(
            "probe {} at {:g} queries/s: the runner says the search's end cut it before it passed or failed, "
            "but {}",
            i + 1, p.target_qps,
            i + 1 != probes->size() ? fmt::format("probe {} came after it", i + 2)
            : reasons.empty()       ? fmt::format("its {} measured queries pass", p.queries)
                                    : fmt::format("its {} measured queries fail: {}", p.queries, *failing));
        return out;
      }
      reasons.insert(reasons.begin(),
                     "cut: the search ended before the probe could pass or fail; not in the "
                     "bracket");
    }
    const bool valid = reasons.empty();
    if (valid != p.passed) {
      out.invalid =
          fmt::format("probe {} at {:g} queries/s: the runner judged it {}, but its {} measured queries {}",
                      i + 1, p.target_qps, p.passed ? "valid" : "invalid", p.queries,
                      valid ? "pass" : "do not: " + reasons.front());
      return out;
    }
    if (!p.cut) bracket.Add(p.target_qps, valid);
    judged.push_back({{"target_qps", p.target_qps},
                      {"first_query", p.first_query},
                      {"queries", p.queries},
                      {"warmup_queries", p.warmup_queries},
                      {"dropped", p.dropped},
                      {"achieved_qps", MetricOrNull(scratch, metric::kLoadCompletedSamplesPerS)},
                      {"issued_per_s", MetricOrNull(scratch, metric::kLoadIssuedPerS)},
                      {"latency_at_percentile_ms", MsOrNull(scratch, metric::kQueryLatencyAtPercentileNs)},
                      {"p99_ms", MsOrNull(scratch, metric::kQueryLatencyP99Ns)},
                      {"valid", valid},
                      {"cut", p.cut},
                      {"reasons", reasons}});
    probe_reasons.push_back(std::move(reasons));
  }

  // The cell's measured window is the peak probe's (the last probe at the peak rate), or, when no
  // rate passed, the lowest-rate probe's that was not cut: the closest the system came.
  std::optional<std::size_t> found;
  for (std::size_t i = 0; i < probes->size(); ++i) {
    const double rate = (*probes)[i].target_qps;
    if ((*probes)[i].cut) continue;
    if (bracket.lo ? (rate == *bracket.lo && probe_reasons[i].empty())
                   : (!found || rate < (*probes)[*found].target_qps)) {
      found = i;
    }
  }
  const std::size_t window = found.value_or(probes->size() - 1);  // else the one probe, cut
  const load::ProbeReport& w = (*probes)[window];
  (void)MeasureLoadWindow(s, records, w.first_query, w.first_query + w.queries, floor, stop_reason,
                          w.too_many_outstanding ? "too_many_outstanding"
                          : w.dropped > 0        ? "dropped_after_stop"
                                                 : "",
                          rec);

  const std::string end = EndName(*report, done_reason);
  // How the search ended, for the verdict: a STOP names the orchestrator's reason for it, and the
  // queries the last probe dropped.
  std::string ended = end;
  if (end == stats::PeakSearchEndName(stats::PeakSearchEnd::kStopped) && done_reason == "stopped" &&
      stop_reason != done_reason) {
    ended = "stopped by STOP at " + stop_reason;
  }
  if (dropped > 0) {
    ended += fmt::format(", in probe {} at {:g} queries/s, which fell behind: {} of its queries were dropped",
                         probes->size(), probes->back().target_qps, dropped);
  } else if (probes->back().cut) {
    ended += fmt::format(", in probe {} at {:g} queries/s, before it could pass or fail", probes->size(),
                         probes->back().target_qps);
  }
  if (!bracket.Within(s.peak_resolution)) {
    if (!bracket.lo && !bracket.hi) {
      out.reasons.push_back(
          fmt::format("too_short: the search ended ({}) before any probe passed or failed", ended));
    } else if (!bracket.lo) {
      out.reasons.push_back(fmt::format("{} (no probed rate passed; the lowest was {:g} queries/s)",
                                        probe_reasons[window].front(), w.target_qps));
    } else if (!bracket.hi) {
      out.reasons.push_back(fmt::format(
          "too_short: every probed rate passed, up to {:g} queries/s (the search ended: {}); the peak is "
          "at least that",
          *bracket.lo, ended));
    } else {
      out.reasons.push_back(
          fmt::format("too_short: the search ended ({}) with its bracket {:g} to {:g} queries/s wider than "
                      "peak_resolution {:g}",
                      ended, *bracket.lo, *bracket.hi, s.peak_resolution));
    }
  }

  if (bracket.lo) record::SetMetric(rec, metric::kLoadPeakQps, *bracket.lo);
  if (bracket.hi) record::SetMetric(rec, metric::kLoadPeakLowestFailingQps, *bracket.hi);
  record::SetMetric(rec, metric::kLoadPeakProbes, static_cast<double>(probes->size()));
  record::SetMetric(rec, metric::kLoadPeakResolution, s.peak_resolution);
  nlohmann::json& info = rec.extras["load"];
  info["measured_queries"] = w.queries;
  info["headline"] = {{"name", "Maximum Poisson throughput parameter supported"},
                      {"metric", std::string(metric::kLoadPeakQps)}};
  info["peak_search"] = {
      {"end", end},
      {"peak_qps", bracket.lo ? nlohmann::json(*bracket.lo) : nlohmann::json(nullptr)},
      {"lowest_failing_qps", bracket.hi ? nlohmann::json(*bracket.hi) : nlohmann::json(nullptr)},
      {"resolution", s.peak_resolution},
      {"converged", bracket.Within(s.peak_resolution)},
      {"window_probe", window + 1},
      {"queries_dropped_after_stop", dropped},
      {"probes", std::move(judged)}};
  return out;
}

}  // namespace dlbench::orchestrator
