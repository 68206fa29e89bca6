#include "load/peak_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "common/error.h"
#include "stats/early_stopping.h"
#include "stats/latency.h"

namespace dlbench::load {
namespace {

// Passes records on and keeps the times a probe's verdict needs. Write and StopRequested come
// from the generator's flush thread during a run and from its Run thread after; the probe reads
// the vectors only between runs.
class ProbeSink final : public QueryRecordSink {
 public:
  explicit ProbeSink(QueryRecordSink& next) : next_(next) {}
  void Write(const record::QueryRecord* records, std::size_t count) override {
    next_.Write(records, count);
    written += count;
    for (std::size_t i = 0; i < count; ++i) {
      latencies_ns.push_back(static_cast<double>(records[i].completed_ns - records[i].scheduled_ns));
      scheduled_ns.push_back(records[i].scheduled_ns);
      issued_ns.push_back(records[i].issued_ns);
    }
  }
  bool StopRequested() override { return next_.StopRequested(); }
  void Clear() {
    latencies_ns.clear();
    scheduled_ns.clear();
    issued_ns.clear();
  }
  std::vector<double> latencies_ns;
  std::vector<std::int64_t> scheduled_ns;
  std::vector<std::int64_t> issued_ns;
  std::uint64_t written = 0;  // records passed on, over every run

 private:
  QueryRecordSink& next_;
};

nlohmann::json OrNull(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::optional<double> Finite(double v) { return std::isfinite(v) ? std::optional<double>(v) : std::nullopt; }

Error Bad(std::size_t probe, const std::string& what) {
  return MakeError(ErrorKind::kInvalidInput, "probe " + std::to_string(probe + 1) + ": " + what);
}

}  // namespace

std::optional<double> NextConfirmationRate(const std::vector<ProbeReport>& probes, double rel_tolerance) {
  stats::PeakBracket search;
  int confirmations = 0;
  std::optional<double> passed;  // the highest passed confirmation
  std::optional<double> failed;  // the lowest failed confirmation
  for (const ProbeReport& p : probes) {
    if (p.cut) continue;
    if (!p.confirmation) {
      search.Add(p.target_qps, p.passed);
      continue;
    }
    ++confirmations;
    if (p.passed) {
      passed = std::max(passed.value_or(p.target_qps), p.target_qps);
    } else {
      failed = std::min(failed.value_or(p.target_qps), p.target_qps);
    }
  }
  if (confirmations == 0) return search.lo;
  // The search's peak passed its confirmation, or none is left.
  if (!failed || confirmations >= kMaxPeakConfirmations) return std::nullopt;
  const double hi = *failed;
  std::optional<double> lo = passed;
  if (!lo) {
    for (const ProbeReport& p : probes) {
      if (!p.confirmation && !p.cut && p.passed && p.target_qps < hi && (!lo || p.target_qps > *lo)) {
        lo = p.target_qps;
      }
    }
    if (!lo) return std::nullopt;
  }
  const bool wide = hi / *lo - 1.0 > rel_tolerance;
  if (!passed && (!wide || confirmations + 1 == kMaxPeakConfirmations)) return lo;
  return wide ? std::optional<double>(std::sqrt(*lo * hi)) : std::nullopt;
}

std::optional<std::string> DoneReason(RunEnd end) {
  switch (end) {
    case RunEnd::kStopped:
      return "stopped";
    case RunEnd::kMaxQueries:
      return "max_steps";
    case RunEnd::kMaxDuration:
      return "max_time";
    case RunEnd::kTooManyOutstanding:
    case RunEnd::kDroppedAfterStop:  // the orchestrator reads the outstanding tail as fell_behind
      return std::string(RunEndName(end));
    case RunEnd::kCompletionError:
    case RunEnd::kDrainTimeout:
      return std::nullopt;
  }
  return std::nullopt;
}

PeakSearchOutcome RunPeakSearch(const EffectiveLoadSettings& settings, LoadGenerator& generator,
                                SystemUnderTest& sut, const QuerySampleLibrary& library, QueryRecordSink& out,
                                const LoadClock& clock, std::int64_t deadline_ns,
                                std::int64_t drain_timeout_ns) {
  DLBENCH_CHECK(settings.scenario == Scenario::kServer && settings.peak_search && settings.latency_bound_ns,
                "RunPeakSearch needs a server cell with target_qps: max and a bound");
  PeakSearchOutcome outcome;
  outcome.rel_tolerance = settings.peak_resolution;
  outcome.latency_bound_ms = static_cast<double>(*settings.latency_bound_ns) / 1e6;
  outcome.latency_percentile = settings.latency_percentile;
  outcome.probe_min_s = static_cast<double>(settings.peak_min_probe_ns) / 1e9;
  ProbeSink sink(out);
  stats::EarlyStoppingParams es;
  es.percentile = settings.latency_percentile;
  es.confidence = settings.confidence;
  const double bound_ns = static_cast<double>(*settings.latency_bound_ns);
  const std::int64_t floor = std::max<std::int64_t>(stats::MinQueriesForClaim(es, /*has_bound=*/true),
                                                    settings.min_queries.value_or(1));
  auto time_left = [&] { return deadline_ns - clock.NowNs(); };
  // A run cut by the deadline ends the search: its next query was due after the deadline, though
  // the clock may not have reached it.
  bool deadline_hit = false;
  auto out_of_time = [&] {
    return outcome.stopped || deadline_hit || time_left() <= 0 || !outcome.error.empty();
  };
  // A hung system under test ends the search (PeakSearchOutcome::error).
  auto hung = [&](const RunResult& r, double rate) {
    if (r.end != RunEnd::kDrainTimeout || !outcome.error.empty()) return;
    std::ostringstream message;
    message << "the peak search's probe at " << rate << " queries/s: " << r.error;
    outcome.error = message.str();
  };
  // A probe at `rate` measuring at least `min_ns` of queries at it (and the early-stopping floor).
  auto probe = [&](double rate, std::int64_t min_ns) {
    stats::Probe p;
    ProbeReport report;
    report.target_qps = rate;
    generator.SetTargetQps(rate);
    RunLimits warm;
    warm.max_duration_ns = std::min(kProbeWarmupNs, std::max<std::int64_t>(time_left(), 1));
    warm.drain_timeout_ns = drain_timeout_ns;
    // Queries a run issued whose records never came: what the system under test dropped after STOP
    // (the generator delivers records in id order, so they are the run's last ids).
    std::uint64_t written_before = sink.written;
    auto unrecorded = [&](const RunResult& r) {
      const std::uint64_t recorded = sink.written - written_before;
      written_before = sink.written;
      return r.issued > recorded ? r.issued - recorded : 0;
    };
    const RunResult warm_run = generator.Run(sut, library, sink, warm);
    hung(warm_run, rate);
    report.dropped = unrecorded(warm_run);
    deadline_hit =
        deadline_hit || (warm_run.end == RunEnd::kMaxDuration && warm.max_duration_ns < kProbeWarmupNs);
    outcome.issued += warm_run.issued;
    outcome.stopped =
        outcome.stopped || warm_run.end == RunEnd::kStopped || warm_run.end == RunEnd::kDroppedAfterStop;
    bool overloaded = warm_run.end == RunEnd::kTooManyOutstanding;
    sink.Clear();
    report.warmup_first_query = warm_run.first_id;
    report.warmup_queries = warm_run.issued - report.dropped;
    report.first_query = warm_run.first_id + report.warmup_queries;
    // At least min_ns of queries at this rate, so that a throughput that sinks over seconds shows
    // (docs/load.md "Probe length").
    const auto for_time = static_cast<std::int64_t>(std::ceil(rate * static_cast<double>(min_ns) / 1e9));
    std::int64_t needed = std::max(floor, for_time);
    stats::BoundedEarlyStopping rule;
    p.latency = INFINITY;
    for (int segment = 0; segment < kProbeSegments && !overloaded && !out_of_time(); ++segment) {
      RunLimits measure;
      measure.max_queries =
          static_cast<std::uint64_t>(needed - static_cast<std::int64_t>(sink.latencies_ns.size()));
      measure.max_duration_ns = time_left();
      measure.drain_timeout_ns = drain_timeout_ns;
      // Each run's Poisson schedule starts at the run's start: without the restart its offsets
      // would continue the previous run's, and the system would idle for that run's length first.
      generator.SetTargetQps(rate);
      const RunResult r = generator.Run(sut, library, sink, measure);
      hung(r, rate);
      report.dropped += unrecorded(r);
      deadline_hit = deadline_hit || r.end == RunEnd::kMaxDuration;
      outcome.issued += r.issued;
      outcome.stopped = outcome.stopped || r.end == RunEnd::kStopped || r.end == RunEnd::kDroppedAfterStop;
      overloaded = r.end == RunEnd::kTooManyOutstanding;
      if (sink.latencies_ns.empty()) break;
      const auto over = std::count_if(sink.latencies_ns.begin(), sink.latencies_ns.end(),
                                      [&](double l) { return l > bound_ns; });
      rule = stats::EarlyStoppingWithBound(static_cast<std::int64_t>(sink.latencies_ns.size()), over, es);
      std::vector<double> sorted = sink.latencies_ns;
      std::sort(sorted.begin(), sorted.end());
      p.latency = stats::LoadGenPercentileSorted(sorted, settings.latency_percentile);
      if (rule.met || !(p.latency <= bound_ns)) break;
      needed = std::max(rule.queries_needed, for_time);
    }
    const stats::IssueRateCheck issue =
        stats::CheckIssueRate(sink.scheduled_ns, sink.issued_ns, kProbeIssueTolerance);
    // Queries dropped after STOP: the system was behind its schedule by more than the STOP drain,
    // as a server cell that ends dropped_after_stop is fell_behind.
    p.issue_kept_up = issue.kept_up && !overloaded && report.dropped == 0;
    // A probe cut short by the time budget has fewer queries than its floor: not a pass, as the
    // orchestrator's judgement of the same records says (orchestrator/peak_cell.h).
    p.early_stopping_met = rule.met && static_cast<std::int64_t>(sink.latencies_ns.size()) >= floor;
    // Cut by the search's end before it could pass or fail: nothing measured, or what was measured
    // is within the bound and kept up but too few for early stopping.
    p.cut = out_of_time() && !p.early_stopping_met && !overloaded && report.dropped == 0 &&
            (sink.latencies_ns.empty() || (p.latency <= bound_ns && issue.kept_up));
    if (overloaded) p.latency = INFINITY;
    report.cut = p.cut;
    report.queries = sink.latencies_ns.size();
    report.latency_at_percentile_ns = Finite(p.latency);
    report.scheduled_per_s = Finite(issue.scheduled_per_s);
    report.issued_per_s = Finite(issue.achieved_per_s);
    report.too_many_outstanding = overloaded;
    report.early_stopping_met = p.early_stopping_met;
    report.queries_needed = rule.queries_needed;
    outcome.probes.push_back(report);
    sink.Clear();
    return p;
  };
  stats::PeakSearchSettings search;
  search.latency_bound = bound_ns;
  search.start_rate_per_s = settings.target_qps;
  search.min_rate_per_s = kPeakMinRatePerS;
  search.max_rate_per_s = kPeakMaxRatePerS;
  search.rel_tolerance = settings.peak_resolution;
  search.max_probes = settings.peak_max_probes;
  outcome.search = stats::SearchPeak(
      search, [&](double rate) { return probe(rate, settings.peak_min_probe_ns); }, out_of_time);
  for (std::size_t i = 0; i < outcome.search.probes.size() && i < outcome.probes.size(); ++i) {
    outcome.probes[i].passed = outcome.search.probes[i].passed;
  }
  // Confirmation (docs/load.md "Confirmation"): a short probe that passed by luck makes the peak
  // optimistic, so the peak is run again for longer; after a failure, confirmation-length probes
  // bisect below it (NextConfirmationRate). Each is an ordinary probe, judged as every probe is.
  bool confirmation_cut = false;
  if (settings.peak_confirm_ns > 0 && outcome.search.end != stats::PeakSearchEnd::kStopped) {
    const std::int64_t confirm_ns = std::max(settings.peak_min_probe_ns, settings.peak_confirm_ns);
    for (std::optional<double> rate = NextConfirmationRate(outcome.probes, settings.peak_resolution); rate;
         rate = NextConfirmationRate(outcome.probes, settings.peak_resolution)) {
      if (out_of_time()) {
        confirmation_cut = true;
        break;
      }
      stats::Probe p = probe(*rate, confirm_ns);
      p.rate_per_s = *rate;
      p.passed = stats::ProbePassed(p, bound_ns);
      outcome.search.probes.push_back(p);
      ProbeReport& report = outcome.probes.back();
      report.confirmation = true;
      report.passed = p.passed;
      if (p.cut) {
        confirmation_cut = true;
        break;
      }
    }
  }
  outcome.confirm_s = static_cast<double>(settings.peak_confirm_ns) / 1e9;
  outcome.reason = outcome.stopped                                                            ? "stopped"
                   : outcome.search.end == stats::PeakSearchEnd::kStopped || confirmation_cut ? "max_time"
                                                                                              : "peak_search";
  return outcome;
}

nlohmann::json PeakSearchOutcome::ToJson() const {
  nlohmann::json probes_json = nlohmann::json::array();
  for (const ProbeReport& p : probes) {
    probes_json.push_back({{"target_qps", p.target_qps},
                           {"warmup_first_query", p.warmup_first_query},
                           {"warmup_queries", p.warmup_queries},
                           {"first_query", p.first_query},
                           {"queries", p.queries},
                           {"dropped", p.dropped},
                           {"latency_percentile_ms", p.latency_at_percentile_ns
                                                         ? nlohmann::json(*p.latency_at_percentile_ns / 1e6)
                                                         : nlohmann::json(nullptr)},
                           {"scheduled_per_s", OrNull(p.scheduled_per_s)},
                           {"issued_per_s", OrNull(p.issued_per_s)},
                           {"too_many_outstanding", p.too_many_outstanding},
                           {"early_stopping_met", p.early_stopping_met},
                           {"queries_needed", p.queries_needed},
                           {"cut", p.cut},
                           {"confirmation", p.confirmation},
                           {"passed", p.passed}});
  }
  return {{"end", stats::PeakSearchEndName(search.end)},
          {"peak_qps", OrNull(search.peak_per_s)},
          {"lowest_failing_qps", OrNull(search.lowest_failing_per_s)},
          {"latency_bound_ms", latency_bound_ms},
          {"latency_percentile", latency_percentile},
          {"rel_tolerance", rel_tolerance},
          {"probe_warmup_s", static_cast<double>(kProbeWarmupNs) / 1e9},
          {"probe_min_s", probe_min_s},
          {"confirm_s", confirm_s},
          {"probes", std::move(probes_json)}};
}

Result<std::vector<ProbeReport>> ParseProbeReports(const nlohmann::json& peak_search,
                                                   std::size_t max_probes) {
  if (!peak_search.is_object() || !peak_search.contains("probes") || !peak_search["probes"].is_array()) {
    return MakeError(ErrorKind::kInvalidInput, "no probes array");
  }
  const nlohmann::json& list = peak_search["probes"];
  if (list.size() > max_probes) {
    return MakeError(
        ErrorKind::kInvalidInput,
        std::to_string(list.size()) + " probes; the cell allows at most " + std::to_string(max_probes));
  }
  std::vector<ProbeReport> out;
  constexpr auto kMaxId = static_cast<double>(std::numeric_limits<std::int64_t>::max());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& p = list[i];
    if (!p.is_object()) return Bad(i, "not an object");
    auto count = [&](const char* key) -> Result<std::uint64_t> {
      const bool ok = p.contains(key) && ((p[key].is_number_unsigned() && p[key].get<double>() <= kMaxId) ||
                                          (p[key].is_number_integer() && p[key].get<std::int64_t>() >= 0));
      if (!ok) return Bad(i, std::string(key) + " must be a query count or id >= 0");
      return static_cast<std::uint64_t>(p[key].get<std::int64_t>());
    };
    auto flag = [&](const char* key) -> Result<bool> {
      if (!p.contains(key) || !p[key].is_boolean())
        return Bad(i, std::string(key) + " must be true or false");
      return p[key].get<bool>();
    };
    ProbeReport r;
    if (!p.contains("target_qps") || !p["target_qps"].is_number() || !(p["target_qps"].get<double>() > 0) ||
        !(p["target_qps"].get<double>() <= kPeakMaxRatePerS)) {
      return Bad(i, "target_qps must be a rate in (0, 1e6]");
    }
    r.target_qps = p["target_qps"].get<double>();
    auto warm_first = count("warmup_first_query");
    if (!warm_first.ok()) return warm_first.error();
    auto warm = count("warmup_queries");
    if (!warm.ok()) return warm.error();
    auto first = count("first_query");
    if (!first.ok()) return first.error();
    auto queries = count("queries");
    if (!queries.ok()) return queries.error();
    std::uint64_t dropped = 0;  // absent in reports before it was added
    if (p.contains("dropped")) {
      auto d = count("dropped");
      if (!d.ok()) return d.error();
      dropped = *d;
    }
    bool cut = false;  // absent in reports before it was added
    if (p.contains("cut")) {
      auto c = flag("cut");
      if (!c.ok()) return c.error();
      cut = *c;
    }
    bool confirmation = false;  // absent in reports before it was added
    if (p.contains("confirmation")) {
      auto c = flag("confirmation");
      if (!c.ok()) return c.error();
      confirmation = *c;
    }
    auto overloaded = flag("too_many_outstanding");
    if (!overloaded.ok()) return overloaded.error();
    auto met = flag("early_stopping_met");
    if (!met.ok()) return met.error();
    auto passed = flag("passed");
    if (!passed.ok()) return passed.error();
    r.warmup_first_query = *warm_first;
    r.warmup_queries = *warm;
    r.first_query = *first;
    r.queries = *queries;
    r.dropped = dropped;
    r.cut = cut;
    r.confirmation = confirmation;
    r.too_many_outstanding = *overloaded;
    r.early_stopping_met = *met;
    r.passed = *passed;
    if (p.contains("latency_percentile_ms") && p["latency_percentile_ms"].is_number()) {
      r.latency_at_percentile_ns = p["latency_percentile_ms"].get<double>() * 1e6;
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace dlbench::load
