#include "stats/peak_search.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace dlbench::stats {

const char* PeakSearchEndName(PeakSearchEnd end) {
  switch (end) {
    case PeakSearchEnd::kConverged:
      return "converged";
    case PeakSearchEnd::kProbeCap:
      return "probe_cap";
    case PeakSearchEnd::kNoPassingRate:
      return "no_passing_rate";
    case PeakSearchEnd::kRateCap:
      return "rate_cap";
    case PeakSearchEnd::kStopped:
      return "stopped";
  }
  return "probe_cap";
}

bool ProbePassed(const Probe& p, double latency_bound) {
  return !p.cut && p.issue_kept_up && p.early_stopping_met && p.latency <= latency_bound;
}

void PeakBracket::Add(double rate, bool passed) {
  if (passed) {
    if (!hi || rate < *hi) lo = std::max(lo.value_or(rate), rate);
  } else if (!hi || rate < *hi) {
    hi = rate;
    if (lo && *lo >= rate) lo.reset();
  }
}

PeakSearchResult SearchPeak(const PeakSearchSettings& s, const std::function<Probe(double)>& probe,
                            const std::function<bool()>& stop) {
  DLBENCH_CHECK(s.growth > 1 && s.rel_tolerance > 0 && s.min_rate_per_s > 0 &&
                    s.max_rate_per_s >= s.min_rate_per_s && s.max_probes >= 1 && s.latency_bound > 0,
                "peak search settings out of range");
  PeakSearchResult r;
  PeakBracket bracket;
  std::optional<double>& lo = bracket.lo;  // highest passing rate below `hi`
  std::optional<double>& hi = bracket.hi;  // lowest failing rate
  auto run = [&](double rate) {
    Probe p = probe(rate);
    p.rate_per_s = rate;
    p.passed = ProbePassed(p, s.latency_bound);
    r.probes.push_back(p);
    if (!p.cut) bracket.Add(rate, p.passed);
    return p.passed;
  };
  bool stopped = false;
  auto budget_left = [&] {
    if (r.probes.size() >= s.max_probes) return false;
    stopped = stop && stop();
    return !stopped;
  };

  double rate = std::clamp(s.start_rate_per_s, s.min_rate_per_s, s.max_rate_per_s);
  const bool first_passed = run(rate);
  // Bracketing: walk away from the first probe until the other side is seen.
  while (!(lo && hi) && budget_left()) {
    if (first_passed) {
      if (rate >= s.max_rate_per_s) break;
      rate = std::min(rate * s.growth, s.max_rate_per_s);
    } else {
      if (rate <= s.min_rate_per_s) break;
      rate = std::max(rate / s.growth, s.min_rate_per_s);
    }
    run(rate);
  }
  if (!(lo && hi)) {
    if (stopped) {
      r.end = PeakSearchEnd::kStopped;
    } else if (!lo && hi && *hi <= s.min_rate_per_s) {
      r.end = PeakSearchEnd::kNoPassingRate;
    } else if (lo && !hi && *lo >= s.max_rate_per_s) {
      r.end = PeakSearchEnd::kRateCap;
    } else {
      r.end = PeakSearchEnd::kProbeCap;
    }
    r.peak_per_s = lo;
    r.lowest_failing_per_s = hi;
    return r;
  }
  // Bisection on the geometric mean: lo passed, hi failed.
  r.end = PeakSearchEnd::kProbeCap;
  while (budget_left() && lo && hi) {
    if (*hi / *lo - 1.0 <= s.rel_tolerance) {
      r.end = PeakSearchEnd::kConverged;
      break;
    }
    run(std::sqrt(*lo * *hi));
  }
  if (lo && hi && *hi / *lo - 1.0 <= s.rel_tolerance) {
    r.end = PeakSearchEnd::kConverged;
  } else if (stopped) {
    r.end = PeakSearchEnd::kStopped;
  }
  r.peak_per_s = lo;
  r.lowest_failing_per_s = hi;
  return r;
}

}  // namespace dlbench::stats
