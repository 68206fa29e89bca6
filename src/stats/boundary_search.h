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
//
// Guided by memory (memory_limit_bytes set, boundary_guide: peak_memory): a passing probe may
// report its peak memory. Peak memory is close to affine in the value, so once two passing probes
// have peaks, the search probes the largest value the line through two of them keeps within the
// limit, clamped inside the bracket, instead of the next doubling or bisection value: the largest
// fit, and the largest fit at most half its value (else the next largest), since two fits close
// together give a slope that is mostly the allocator's rounding. A guess that fits raises the
// bracket's lower end, and the next guess from the new line is usually one above it (the check on
// the other side); a guess that fails lowers the upper end, and the next is 1% of the failing value
// (at least 1) below it, then 2%, 4%, ... (a line that over-predicts a little, as workspaces the
// peak misses make it, is walked back in a few probes). When a guess more than kFarGuess times the
// largest fit fails and so does the guess after it, the line is off by more than percents (small
// probes carried far, where the peak is not yet affine): one bisection step comes next, then the
// guesses go on. At most kMaxGuidedProbes guesses; then doubling and bisection as above. The
// guesses only narrow the bracket, so a search that converges gives the answer bisection gives
// (fitting being monotone), and the bound plan states grows by kMaxGuidedProbes at most. A guess
// above the largest fit (no miss to step back from) is at least the resolution above it, so that a
// failure there resolves the search. A fit whose peak is within kSaturatedShare of the limit is
// saturated: near a cap the reserved peak reaches the limit before the batch does, and each line
// through it says "a little above the last fit". After one, the line is no longer followed: without
// a failure the guesses gallop up from the largest fit by the tolerance, twice it, four times it,
// ...; with one above, each step at most half the bracket. A peak that is not a finite number of
// bytes is no peak. A probe's answer may say its process could hold less than the limit
// (ProbeAnswer::limit_bytes); the guesses after it aim there.
//
// Seeded (boundary_seed: other_caps, `seeded` set): the guide may also start from `seeds`, the
// fitting probes (value, peak) of another search of the same cell under another memory limit. They
// are points for the line only, never in the bracket: the answer is still proven by this search's
// own probes. With two seeds that give a rising line, the first probe is where that line meets the
// limit (seed_limit_bytes where set: the seeds' device less its context) instead of min_value (a
// guess, chosen `from_seeds`). When it does not fit, the guesses walk back from the failure by 2%,
// then 4%, 8%, 16% of each next failure while guesses remain (the seeds' peaks are saturated near
// their own caps, so their line over-predicts, mostly by a few percent); with none fitting, the
// largest seed value below the last failure (from_seeds; it fitted under the other limit), then
// min_value as without seeds. A probe is always kept for min_value. Later guesses draw their line
// through this search's fits and the seeds together. So a seeded search spends at most one probe
// more than the bound without seeds (the seed value), and usually two to four in all where it
// would spend five or more.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace dlbench::stats {

// A point the guide's line may pass through: a value and its peak memory in bytes.
struct GuidePoint {
  std::int64_t value = 0;
  double peak_bytes = 0;
};

struct BoundarySearchSettings {
  std::int64_t min_value = 1;        // the first probe, >= 1
  std::int64_t max_value = 1 << 20;  // never probed above, >= min_value
  std::size_t max_probes = 24;       // >= 1
  // The memory the cell may use (its memory_cap): set, passing probes' peaks guide the search.
  std::optional<double> memory_limit_bytes;
  // boundary_resolution: bisection stops once hi - lo <= max(1, floor(lo x resolution)), in [0, 0.5];
  // 0 bisects until the bracket is adjacent (kConverged), above 0 a search may end kResolved first.
  double resolution = 0;
  // boundary_seed: other_caps: the search may start from `seeds` (used only with
  // memory_limit_bytes). `seeded` alone raises the bound plan states by one probe (the seed value),
  // since plan does not know whether seeds will be found.
  bool seeded = false;
  std::vector<GuidePoint> seeds;
  // What the seeds' own guess aims at where below memory_limit_bytes (the seeds' device less its
  // CUDA context); the guesses after it aim at memory_limit_bytes and the probes' limit_bytes.
  std::optional<double> seed_limit_bytes;
};

// What a probe says: whether it fit, and for a probe that fit, its peak memory where known. A probe
// that ended neither fitting nor out of memory (an error, a crash, a timeout) is `inconclusive`: it
// says nothing about memory, so it does not narrow the bracket, and it ends the search (kProbeFailed).
struct ProbeAnswer {
  bool passed = false;
  std::optional<double> peak_bytes;
  bool inconclusive = false;
  // The most the probe's process could hold, where the runner says and it is below the settings'
  // memory_limit_bytes (a cap as large as the device: the device less what the CUDA context holds).
  // The guesses after it aim at the smallest such limit seen.
  std::optional<double> limit_bytes;
};

// The most guesses a memory-guided search makes.
inline constexpr std::size_t kMaxGuidedProbes = 5;
// A fit whose peak is at least (1 - kSaturatedShare) of the limit the guesses aim at is saturated:
// its peak says "at the limit", not how far the boundary is (see SearchBoundary).
inline constexpr double kSaturatedShare = 0.05;
// A guess more than this many times the largest fit is carried far: when it and the next guess
// both fail, the search bisects once before it guesses again.
inline constexpr std::int64_t kFarGuess = 8;

enum class BoundarySearchEnd {
  kConverged,    // the largest pass and the smallest failure are adjacent: the boundary is exact
  kResolved,     // within `resolution`: the boundary is in [largest pass, smallest failure)
  kProbeCap,     // max_probes reached first; the bracket so far is what is known
  kNoneFits,     // min_value failed
  kMaxFits,      // max_value passed: the boundary is at least that
  kStopped,      // `stop` said so after a probe (Ctrl-C)
  kProbeFailed,  // a probe was inconclusive (it neither fit nor ran out of memory): not in the bracket
};
const char* BoundarySearchEndName(BoundarySearchEnd end);

struct BoundaryProbe {
  std::int64_t value = 0;
  bool passed = false;
  bool guided = false;        // chosen from the peaks' line, not by doubling or bisection
  bool inconclusive = false;  // neither fit nor ran out of memory; the last probe of a kProbeFailed search
  bool from_seeds = false;    // chosen from the seeds (the seeds' guess, or a seed's value)
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
// The same with probes that report their peak memory (used when memory_limit_bytes is set).
BoundarySearchResult SearchBoundary(const BoundarySearchSettings& settings,
                                    const std::function<ProbeAnswer(std::int64_t)>& probe,
                                    const std::function<bool()>& stop = {});

// The value the line through two passing probes with peaks (values at most `lo`: the largest, and
// the largest at most half its value, else the next largest) predicts as the largest within
// `limit_bytes`, clamped to [lo + 1, upper]; nullopt without two such probes, with a line that
// does not rise, or when lo + 1 > upper. `seeds`, when given, count as passing probes with peaks.
// Exposed for its tests.
std::optional<std::int64_t> PredictBoundary(const std::vector<BoundaryProbe>& probes,
                                            const std::vector<std::optional<double>>& peaks, std::int64_t lo,
                                            std::int64_t upper, double limit_bytes,
                                            const std::vector<GuidePoint>& seeds = {});

// The seeds' own guess: the line through the largest seed and the largest at most half its value
// (else the next largest) where it meets `limit_bytes`, clamped to [min_value, max_value]; nullopt
// with fewer than two seeds of distinct values or a line that does not rise.
std::optional<std::int64_t> SeedGuess(const std::vector<GuidePoint>& seeds, std::int64_t min_value,
                                      std::int64_t max_value, double limit_bytes);

// The most probes SearchBoundary can run with these settings, whatever the probes answer: doubling
// to max_value and bisecting the widest bracket it can leave, capped by max_probes (what `plan`
// states). Guided: the doubling probes (each at least twice the one before, so no more than
// unguided), bisection of any bracket in [min_value, max_value], and kMaxGuidedProbes; seeded, one
// more (the seed value).
std::size_t MaxBoundaryProbes(const BoundarySearchSettings& settings);

}  // namespace dlbench::stats
