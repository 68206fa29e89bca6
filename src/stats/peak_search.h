// The peak-QPS search of `target_qps: max` (docs/load.md "Peak search") as a pure function over a
// probe callback: the highest Poisson rate whose tail latency stays within a bound while the load
// generator keeps up with the schedule. The caller's probe runs one measured window at a rate and
// reports what it saw; this decides which rates to probe and what the probes prove.
//
// Bracketing first: from the start rate, multiply by `growth` while probes pass (or divide while
// they fail) until one passing and one failing rate are found. Then bisection on the geometric
// mean (rates span orders of magnitude) until hi / lo - 1 <= rel_tolerance. The probe budget caps
// both phases. Latency is assumed to grow with the rate; a noisy probe that breaks monotonicity is
// kept in `probes` but the bracket only ever narrows (lo always passed, hi always failed).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

namespace dlbench::stats {

// What one probe at `rate_per_s` measured.
struct Probe {
  double rate_per_s = 0;
  double latency = 0;          // the claimed percentile (p99) of the probe's query latencies
  bool issue_kept_up = false;  // the load generator issued at the scheduled rate (CheckIssueRate)
  // The probe ran enough queries for its claim (EarlyStoppingWithBound); a probe that could not
  // show it is not a pass, whatever its latency.
  bool early_stopping_met = true;
  // The search's end (STOP, its time budget) came before the probe showed a pass or a failure: it
  // measured too few queries, and none of them fails it. Kept in `probes`, never passed, and not
  // in the bracket (a probe the search cut is no failing rate).
  bool cut = false;
  bool passed = false;  // ProbePassed (set by SearchPeak)
};

// Whether a probe passes under `latency_bound`: not cut, latency within it, the issue rate kept up
// and early stopping met.
bool ProbePassed(const Probe& p, double latency_bound);

struct PeakSearchSettings {
  double latency_bound = 0;       // the latency a passing probe stays within (same unit as Probe::latency)
  double start_rate_per_s = 100;  // the first probe
  double growth = 2.0;            // bracketing factor, > 1
  double rel_tolerance = 0.05;    // stop bisecting when hi / lo - 1 <= this, > 0
  double min_rate_per_s = 1e-3;   // never probe below; failing here means no rate passes
  double max_rate_per_s = 1e9;    // never probe above; passing here means the cap, not a peak
  std::size_t max_probes = 20;    // the step cap over both phases, >= 1
};

enum class PeakSearchEnd {
  kConverged,      // a bracket within rel_tolerance: the peak is proven to that precision
  kProbeCap,       // max_probes reached; the bracket (or the one-sided bound) is what is known
  kNoPassingRate,  // even min_rate_per_s failed
  kRateCap,        // max_rate_per_s passed: the peak is at least that
  kStopped,  // `stop` said so before a probe (a time budget, STOP), or a probe was cut; the bracket so far
};
const char* PeakSearchEndName(PeakSearchEnd end);

// What a sequence of probes proves: `lo` the highest passing rate below every failing one, `hi`
// the lowest failing rate. A pass at or above a failure proves nothing and is not kept.
struct PeakBracket {
  std::optional<double> lo;
  std::optional<double> hi;
  void Add(double rate_per_s, bool passed);
  // hi / lo - 1 <= rel_tolerance, both known.
  bool Within(double rel_tolerance) const { return lo && hi && *hi / *lo - 1.0 <= rel_tolerance; }
};

struct PeakSearchResult {
  PeakSearchEnd end = PeakSearchEnd::kProbeCap;
  std::optional<double> peak_per_s;            // the highest passing rate below every failing one
  std::optional<double> lowest_failing_per_s;  // the bracket's upper end, when a failure was seen
  std::vector<Probe> probes;                   // every probe, in the order run
};

// Runs the search. `probe(rate)` returns the measurement at that rate (its `passed` is
// recomputed here from the bound). `stop`, when given, is asked before every probe after the
// first; true ends the search (kStopped). Settings out of range are a programmer error.
PeakSearchResult SearchPeak(const PeakSearchSettings& settings, const std::function<Probe(double)>& probe,
                            const std::function<bool()>& stop = {});

}  // namespace dlbench::stats
