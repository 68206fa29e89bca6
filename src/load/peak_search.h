// The peak-QPS search of `target_qps: max` (docs/load.md "Peak search") as the runners run it:
// probes at Poisson rates, one after another in one process after its warm-up, each a server run
// judged as a server cell is (the latency percentile within the bound, early stopping met, the
// issue rate kept up), chosen by stats::SearchPeak (bracketing, then bisection). dlbench-torch
// and dlbench-null both call RunPeakSearch, so the two runners probe, extend and judge alike; the
// orchestrator judges every probe again from its query records (orchestrator/peak_cell.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "load/load_clock.h"
#include "load/load_generator.h"
#include "load/settings.h"
#include "load/system_under_test.h"
#include "stats/peak_search.h"

namespace dlbench::load {

// The search's fixed choices (docs/load.md): each probe first runs kProbeWarmupNs at its rate, so
// the queue the previous rate left drains, then measures at least the early-stopping minimum
// (h(0), or min_queries if larger) and at least peak_min_probe_s at its rate, extended at most kProbeSegments
// times while some queries are over the bound and early stopping is not met yet. The rates stay within
// [kMinRate, kMaxRate].
inline constexpr std::int64_t kProbeWarmupNs = 500'000'000;
inline constexpr int kProbeSegments = 4;
inline constexpr double kPeakMinRatePerS = 1.0;
inline constexpr double kPeakMaxRatePerS = 1e6;
// A probe's issue rate may fall this far below its schedule (orchestrator/load_cell.cc uses the
// same for a server cell).
inline constexpr double kProbeIssueTolerance = 0.01;
// After a search that ended by its own rule, its peak is confirmed by a probe of at least
// max(peak_min_probe_s, peak_confirm_s) at its rate; after a failed confirmation the confirmations
// bisect between the highest passing rate and the lowest failed confirmation
// (NextConfirmationRate), at most this many in all (docs/load.md "Confirmation"). 5: one at the
// peak and four bisections, which narrow a bracket of the bracketing step (a factor of 2) to 4.4%,
// within the default peak_resolution of 5%; at the default 15 s each (and its 0.5 s warm-up) the
// most a cell spends confirming is 77.5 s, against the search's up to 20 probes of 5.5 s.
inline constexpr int kMaxPeakConfirmations = 5;

// One probe as the runner ran and judged it. Query ids: its warm-up [warmup_first_query,
// +warmup_queries), then its measured queries [first_query, +queries), then `dropped` queries it
// issued that have no record (after STOP the system under test dropped its queue: the search's
// last probe only); every record of the cell belongs to exactly one probe's warm-up or measured
// range, and every issued id to one probe.
struct ProbeReport {
  double target_qps = 0;
  std::uint64_t warmup_first_query = 0;
  std::uint64_t warmup_queries = 0;  // warm-up records
  std::uint64_t first_query = 0;
  std::uint64_t queries = 0;  // measured records
  std::uint64_t dropped = 0;  // issued, never completed (RunEnd::kDroppedAfterStop); 0 in an old report
  std::optional<double> latency_at_percentile_ns;  // absent: nothing measured, or overloaded
  std::optional<double> scheduled_per_s;
  std::optional<double> issued_per_s;
  bool too_many_outstanding = false;
  bool early_stopping_met = false;
  std::int64_t queries_needed = 0;
  // The search's end (STOP, its time budget) came before the probe passed or failed
  // (stats::Probe::cut): too few measured queries, all within the bound, the issue rate kept up,
  // nothing dropped. Not in the bracket; the search's last probe only. false in an old report.
  bool cut = false;
  // A confirmation of the search's peak (or of a lower passing rate after a failed one), run after
  // the search's last probe; false in an old report.
  bool confirmation = false;
  bool passed = false;
};

struct PeakSearchOutcome {
  stats::PeakSearchResult search;
  std::vector<ProbeReport> probes;  // in the order run, one per search.probes entry
  std::uint64_t issued = 0;         // queries issued over every probe
  bool stopped = false;             // the sink asked to stop (STOP)
  double rel_tolerance = 0;         // the cell's peak_resolution
  double latency_bound_ms = 0;      // what a passing probe's percentile stays within
  double latency_percentile = 0;    // that percentile
  double probe_min_s = 0;           // the cell's peak_min_probe_s
  double confirm_s = 0;             // the cell's peak_confirm_s (0: no confirmation)
  // The DONE reason: "peak_search" (the search ended by its own rule), "max_time" (its time
  // budget), "stopped" (STOP).
  std::string reason;
  // Set when a probe's run ended in a drain timeout: queries the system under test was given and
  // did not complete within RunLimits::drain_timeout_ns (a hung system). The search ends there; the
  // runner reports this as its ERROR, as it does a fixed-rate run's drain timeout, because the
  // late completions would otherwise land in the next probe's measured queries.
  std::string error;
  // EXTRAS info.load.peak_search: the end, the peak and bracket, the settings and every probe
  // (docs/protocol.md "Peak search"), as the orchestrator reads it back (ParsePeakSearchReport).
  nlohmann::json ToJson() const;
};

// Runs the search on `generator` (scenario server, peak_search) against `sut`, every record to
// `sink`. The search ends by stats::SearchPeak's rules (at most settings.peak_max_probes probes,
// bisection to settings.peak_resolution), when `clock` passes `deadline_ns` (checked before each
// probe and bounding each run), or at STOP. Time is the load clock's: virtual in dlbench-null.
// A search that ended by its own rule with a passing rate is then confirmed (settings.peak_confirm_ns
// > 0): probes flagged `confirmation` at the rates NextConfirmationRate gives, until it gives none,
// or the deadline or STOP comes. A run that ends in a drain timeout ends the search with `error`
// (each probe's runs drain for `drain_timeout_ns` of real time, RunLimits' default unless a test
// shortens it).
PeakSearchOutcome RunPeakSearch(const EffectiveLoadSettings& settings, LoadGenerator& generator,
                                SystemUnderTest& sut, const QuerySampleLibrary& library,
                                QueryRecordSink& sink, const LoadClock& clock, std::int64_t deadline_ns,
                                std::int64_t drain_timeout_ns = RunLimits{}.drain_timeout_ns);

// The rate of the next confirmation after `probes` (the search's, then the confirmations run so far,
// each with its verdict; cut probes count for nothing), or nullopt when confirming is over
// (docs/load.md "Confirmation"). The first confirms the search's peak P, the highest passing search
// rate below every failing one; none when the search has no such rate. After P passes, none. After
// P fails, the bracket is [lo, hi]: hi the lowest failed confirmation, lo the highest passed
// confirmation, or while none has passed the highest search rate below hi that passed (L, which
// no confirmation has failed yet). While the bracket is wider than `rel_tolerance` (hi / lo - 1),
// the next is its geometric mean; but while lo is unconfirmed, the last of kMaxPeakConfirmations,
// or any once the bracket is narrow, confirms lo itself, so that a confirmed rate exists whenever L
// holds. None after kMaxPeakConfirmations, when a confirmed lo's bracket is narrow, or when no
// passing search rate is left below hi. The runner and the orchestrator (which asks whether the
// runner had more to confirm) both call it.
std::optional<double> NextConfirmationRate(const std::vector<ProbeReport>& probes, double rel_tolerance);

// A peak search's report as EXTRAS carries it (what ToJson writes), read back with every field
// checked: kInvalidInput naming the probe and field. At most `max_probes` probes (the cell's
// peak_max_probes plus kMaxPeakConfirmations).
Result<std::vector<ProbeReport>> ParseProbeReports(const nlohmann::json& peak_search, std::size_t max_probes);

// The DONE reason of a run that ended by itself ("stopped", "max_steps", "max_time",
// "too_many_outstanding", "dropped_after_stop"), or nullopt for a run that ended in an error (completion
// error, drain timeout), which the runner reports as ERROR.
std::optional<std::string> DoneReason(RunEnd end);

}  // namespace dlbench::load
