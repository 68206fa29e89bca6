#include "stats/boundary_search.h"

#include <algorithm>

#include "common/error.h"
#include "stats/peak_search.h"

namespace dlbench::stats {

const char* BoundarySearchEndName(BoundarySearchEnd end) {
  switch (end) {
    case BoundarySearchEnd::kConverged:
      return "converged";
    case BoundarySearchEnd::kProbeCap:
      return "probe_cap";
    case BoundarySearchEnd::kNoneFits:
      return "none_fits";
    case BoundarySearchEnd::kMaxFits:
      return "max_fits";
    case BoundarySearchEnd::kStopped:
      return "stopped";
  }
  return "probe_cap";
}

namespace {

void CheckSettings(const BoundarySearchSettings& s) {
  DLBENCH_CHECK(s.min_value >= 1 && s.max_value >= s.min_value && s.max_probes >= 1 &&
                    s.max_value <= (std::int64_t{1} << 52),
                "boundary search settings out of range");
}

// The next value of the doubling phase after `v`, at most max_value.
std::int64_t Doubled(std::int64_t v, std::int64_t max_value) { return v > max_value / 2 ? max_value : v * 2; }

}  // namespace

BoundarySearchResult SearchBoundary(const BoundarySearchSettings& s,
                                    const std::function<bool(std::int64_t)>& probe,
                                    const std::function<bool()>& stop) {
  CheckSettings(s);
  BoundarySearchResult r;
  // Integers up to 2^52 are exact in double: PeakBracket's rule (a pass above a failure is not
  // kept) serves integers as it serves rates.
  PeakBracket bracket;
  bool stopped = false;
  auto run = [&](std::int64_t value) {
    const bool passed = probe(value);
    r.probes.push_back({value, passed});
    bracket.Add(static_cast<double>(value), passed);
    stopped = stop && stop();
    return passed;
  };
  auto budget_left = [&] { return !stopped && r.probes.size() < s.max_probes; };
  auto lo = [&] { return static_cast<std::int64_t>(*bracket.lo); };
  auto hi = [&] { return static_cast<std::int64_t>(*bracket.hi); };

  std::int64_t value = s.min_value;
  run(value);
  while (bracket.lo && !bracket.hi && value < s.max_value && budget_left()) {
    value = Doubled(value, s.max_value);
    run(value);
  }
  while (bracket.lo && bracket.hi && hi() - lo() > 1 && budget_left()) {
    run(lo() + (hi() - lo()) / 2);
  }

  if (bracket.lo) r.largest_passing = lo();
  if (bracket.hi) r.smallest_failing = hi();
  if (bracket.lo && bracket.hi && hi() - lo() == 1) {
    r.end = BoundarySearchEnd::kConverged;
  } else if (!bracket.lo && bracket.hi && hi() <= s.min_value) {
    r.end = BoundarySearchEnd::kNoneFits;
  } else if (bracket.lo && !bracket.hi && lo() >= s.max_value) {
    r.end = BoundarySearchEnd::kMaxFits;
  } else if (stopped) {
    r.end = BoundarySearchEnd::kStopped;
  } else {
    r.end = BoundarySearchEnd::kProbeCap;
  }
  return r;
}

std::size_t MaxBoundaryProbes(const BoundarySearchSettings& s) {
  CheckSettings(s);
  // Doubling: min, 2 min, ... up to max_value; each step can be the first failure.
  std::size_t doubling = 1;
  std::int64_t widest = 0;  // the widest bracket (hi - lo) a first failure can leave
  for (std::int64_t v = s.min_value; v < s.max_value; ++doubling) {
    const std::int64_t next = Doubled(v, s.max_value);
    widest = std::max(widest, next - v);
    v = next;
  }
  // Bisection of a bracket of width w (hi - lo) to width 1 takes ceil(log2 w) probes.
  std::size_t bisection = 0;
  for (std::int64_t w = widest; w > 1; w = (w + 1) / 2) ++bisection;
  return std::min(s.max_probes, doubling + bisection);
}

}  // namespace dlbench::stats
