// The boundary search of `batch_size: max` (docs/memory.md "Boundary search") as a pure function
// over a probe callback: the largest integer value in [min_value, max_value] at which a cell still
// runs (fits in memory). Each probe is the caller's (a fresh runner process for a few steps); this
// decides which values to probe and what the probes prove.
//
// Doubling first: from min_value, double while probes pass until one fails or max_value passed.
// Then bisection on the integers between the largest pass and the smallest failure until they are
// adjacent. Fitting is assumed monotone (what fits at n fits below n); the bracket is kept with
// stats::PeakBracket, so a pass at or above a failure proves nothing and is not kept. The probe cap
// bounds both phases: at most max_probes probes whatever the probes answer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace dlbench::stats {

struct BoundarySearchSettings {
  std::int64_t min_value = 1;        // the first probe, >= 1
  std::int64_t max_value = 1 << 20;  // never probed above, >= min_value
  std::size_t max_probes = 24;       // >= 1
};

enum class BoundarySearchEnd {
  kConverged,  // the largest pass and the smallest failure are adjacent: the boundary is exact
  kProbeCap,   // max_probes reached first; the bracket so far is what is known
  kNoneFits,   // min_value failed
  kMaxFits,    // max_value passed: the boundary is at least that
  kStopped,    // `stop` said so before a probe (a failure of another kind, Ctrl-C)
};
const char* BoundarySearchEndName(BoundarySearchEnd end);

struct BoundaryProbe {
  std::int64_t value = 0;
  bool passed = false;
};

struct BoundarySearchResult {
  BoundarySearchEnd end = BoundarySearchEnd::kProbeCap;
  std::optional<std::int64_t> largest_passing;   // below every failure seen
  std::optional<std::int64_t> smallest_failing;  // the bracket's upper end
  std::vector<BoundaryProbe> probes;             // in the order run
};

// Runs the search. `probe(value)` says whether the cell runs at that value. `stop`, when given, is
// asked after every probe; true ends the search (kStopped). Settings out of range are a
// programmer error.
BoundarySearchResult SearchBoundary(const BoundarySearchSettings& settings,
                                    const std::function<bool(std::int64_t)>& probe,
                                    const std::function<bool()>& stop = {});

// The most probes SearchBoundary can run with these settings, whatever the probes answer: doubling
// to max_value and bisecting the widest bracket it can leave, capped by max_probes (what `plan`
// states).
std::size_t MaxBoundaryProbes(const BoundarySearchSettings& settings);

}  // namespace dlbench::stats
