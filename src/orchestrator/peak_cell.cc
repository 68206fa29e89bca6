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

// Confirmations come after every search probe, at most kMaxPeakConfirmations of them, only in a
// cell that asks for them, and each at the rate load::NextConfirmationRate gives after the probes
// before it (the runner's verdicts, which the records are checked against after): "" when so, else
// what is wrong, to follow "the runner's peak search report".
std::string ConfirmationOrderProblem(const std::vector<load::ProbeReport>& probes,
                                     const LoadCellSettings& s) {
  std::size_t search_probes = 0;
  std::size_t confirmations = 0;
  for (std::size_t i = 0; i < probes.size(); ++i) {
    if (!probes[i].confirmation) {
      if (confirmations > 0) {
        return fmt::format("has search probe {} after a confirmation: confirmations come last", i + 1);
      }
      ++search_probes;
    } else {
      ++confirmations;
    }
  }
  if (confirmations > 0 && !s.peak_confirm) {
    return fmt::format("has {} confirmation probe{}, but the cell's peak_confirm_s is 0", confirmations,
                       confirmations == 1 ? "" : "s");
  }
  if (search_probes > s.peak_max_probes ||
      confirmations > static_cast<std::size_t>(load::kMaxPeakConfirmations)) {
    return fmt::format("has {} search probes and {} confirmations; the cell allows at most {} and {}",
                       search_probes, confirmations, s.peak_max_probes, load::kMaxPeakConfirmations);
  }
  for (std::size_t i = search_probes; i < probes.size(); ++i) {
    const std::vector<load::ProbeReport> before(probes.begin(),
                                                probes.begin() + static_cast<std::ptrdiff_t>(i));
    const std::optional<double> expected = load::NextConfirmationRate(before, s.peak_resolution);
    if (expected != probes[i].target_qps) {
      return fmt::format(
          "has confirmation {} at {:g} queries/s, where the rule after the probes before it "
          "confirms {}",
          i + 1, probes[i].target_qps,
          expected ? fmt::format("{:g} queries/s", *expected) : std::string("nothing"));
    }
  }
  return "";
}

// What the confirmations (docs/load.md "Confirmation") showed of the search's peak: `state` is
// "off" (peak_confirm_s: 0), "none" (no passing rate to confirm), "confirmed" (the first
// confirmation passed), "stepped_down" (the peak's failed, and the bisection below it confirmed a
// lower rate), "not_confirmed" (every confirmation failed, and the runner had none left to run:
// load::NextConfirmationRate), or "unconfirmed" (the search's end came before one passed or all
// were run); `note` says it in words.
struct Confirmation {
  std::string state;
  std::string note;
  std::optional<std::size_t> last_failed;  // the last failed confirmation when none passed
};

Confirmation ConfirmationOf(const std::vector<load::ProbeReport>& probes,
                            const std::vector<std::vector<std::string>>& reasons,
                            const stats::PeakBracket& search, const LoadCellSettings& s) {
  Confirmation c;
  if (!s.peak_confirm) {
    c.state = "off";
    c.note = "no confirmation (peak_confirm_s: 0)";
    return c;
  }
  if (!search.lo) {
    c.state = "none";
    c.note = "no passing rate to confirm";
    return c;
  }
  std::vector<double> failed;
  std::vector<double> passed;
  for (std::size_t i = 0; i < probes.size(); ++i) {
    if (!probes[i].confirmation || probes[i].cut) continue;
    if (reasons[i].empty()) {
      passed.push_back(probes[i].target_qps);
    } else {
      failed.push_back(probes[i].target_qps);
      c.last_failed = i;
    }
  }
  auto rates = [](const std::vector<double>& v) {
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      out += fmt::format("{}{:g}", i == 0 ? "" : i + 1 == v.size() ? " and " : ", ", v[i]);
    }
    return out;
  };
  if (!passed.empty()) {
    c.last_failed.reset();
    const double peak = *std::max_element(passed.begin(), passed.end());
    if (failed.empty()) {
      c.state = "confirmed";
      c.note = fmt::format("the peak {:g} queries/s passed its confirmation", peak);
    } else {
      c.state = "stepped_down";
      c.note = fmt::format(
          "stepped down from {:g} to {:g} queries/s: {} queries/s failed {} confirmation, {} queries/s "
          "passed",
          failed.front(), peak, rates(failed), failed.size() == 1 ? "its" : "their", rates(passed));
    }
    return c;
  }
  // None passed: the runner stopped confirming when it had none left to run (the probes' verdicts
  // here are the runner's, checked), or at the search's end.
  const std::optional<double> next = load::NextConfirmationRate(probes, s.peak_resolution);
  if (!failed.empty() && !next) {
    c.state = "not_confirmed";
    c.note = fmt::format(
        "every confirmation failed ({} queries/s{}): the search's peak {:g} queries/s is not "
        "confirmed, nor any rate below it",
        rates(failed),
        failed.size() >= static_cast<std::size_t>(load::kMaxPeakConfirmations)
            ? fmt::format(", the most run: {}", load::kMaxPeakConfirmations)
            : "; no lower rate passed",
        *search.lo);
    return c;
  }
  c.state = "unconfirmed";
  c.note = failed.empty()
               ? fmt::format(
                     "the peak {:g} queries/s is unconfirmed: the search ended before its confirmation "
                     "(peak_confirm_s) could pass or fail",
                     *search.lo)
               : fmt::format(
                     "the peak {:g} queries/s failed its confirmation ({} queries/s failed) and the "
                     "search ended before {:g} queries/s was confirmed",
                     *search.lo, rates(failed), next.value_or(0.0));
  return c;
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
  auto probes = load::ParseProbeReports(*report, s.peak_max_probes + load::kMaxPeakConfirmations);
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
  if (std::string order = ConfirmationOrderProblem(*probes, s); !order.empty()) {
    out.invalid = "the runner's peak search report " + order;
    return out;
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
  // `search` holds what the search's probes prove, `bracket` that with the confirmations: a failed
  // confirmation at or below the search's peak becomes its upper end and drops the peak, and a
  // passing one below it becomes the peak (stats::PeakBracket).
  stats::PeakBracket search;
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
    if (!p.cut && !p.confirmation) search.Add(p.target_qps, valid);
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
                      {"confirmation", p.confirmation},
                      {"reasons", reasons}});
    probe_reasons.push_back(std::move(reasons));
  }

  const Confirmation confirmation = ConfirmationOf(*probes, probe_reasons, search, s);
  // The cell's measured window is the peak probe's (the last probe at the peak rate: its passing
  // confirmation when there is one); after failed confirmations and none passing, the last of
  // them; when no rate passed, the lowest-rate probe's that was not cut: the closest the system
  // came.
  std::optional<std::size_t> found = confirmation.last_failed;
  for (std::size_t i = 0; i < probes->size() && !confirmation.last_failed; ++i) {
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
  // The search's own bracket decides whether it converged; a confirmation that failed widens the
  // cell's bracket but is no sign of a short search (docs/load.md "Confirmation").
  if (!search.Within(s.peak_resolution)) {
    if (!search.lo && !search.hi) {
      out.reasons.push_back(
          fmt::format("too_short: the search ended ({}) before any probe passed or failed", ended));
    } else if (!search.lo) {
      out.reasons.push_back(fmt::format("{} (no probed rate passed; the lowest was {:g} queries/s)",
                                        probe_reasons[window].front(), w.target_qps));
    } else if (!search.hi) {
      out.reasons.push_back(fmt::format(
          "too_short: every probed rate passed, up to {:g} queries/s (the search ended: {}); the peak is "
          "at least that",
          *search.lo, ended));
    } else {
      out.reasons.push_back(
          fmt::format("too_short: the search ended ({}) with its bracket {:g} to {:g} queries/s wider than "
                      "peak_resolution {:g}",
                      ended, *search.lo, *search.hi, s.peak_resolution));
    }
  }
  if (confirmation.state == "not_confirmed") {
    out.reasons.push_back(fmt::format("{} ({})", probe_reasons[window].front(), confirmation.note));
  } else if (confirmation.state == "unconfirmed") {
    out.reasons.push_back(fmt::format("too_short: {} (the runner's run ended: {})", confirmation.note,
                                      done_reason.empty() ? ended : done_reason));
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
      {"converged", search.Within(s.peak_resolution)},
      {"search_peak_qps", search.lo ? nlohmann::json(*search.lo) : nlohmann::json(nullptr)},
      {"confirmation", confirmation.state},
      {"confirmation_note", confirmation.note},
      {"window_probe", window + 1},
      {"queries_dropped_after_stop", dropped},
      {"probes", std::move(judged)}};
  return out;
}

}  // namespace dlbench::orchestrator
