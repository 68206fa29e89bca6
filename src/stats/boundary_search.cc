#include "stats/boundary_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.h"
#include "stats/peak_search.h"

namespace dlbench::stats {

const char* BoundarySearchEndName(BoundarySearchEnd end) {
  switch (end) {
    case BoundarySearchEnd::kConverged:
      return "converged";
    case BoundarySearchEnd::kResolved:
      return "resolved";
    case BoundarySearchEnd::kProbeCap:
      return "probe_cap";
    case BoundarySearchEnd::kNoneFits:
      return "none_fits";
    case BoundarySearchEnd::kMaxFits:
      return "max_fits";
    case BoundarySearchEnd::kStopped:
      return "stopped";
    case BoundarySearchEnd::kProbeFailed:
      return "probe_failed";
  }
  return "probe_cap";
}

namespace {

void CheckSettings(const BoundarySearchSettings& s) {
  DLBENCH_CHECK(s.min_value >= 1 && s.max_value >= s.min_value && s.max_probes >= 1 &&
                    s.max_value <= (std::int64_t{1} << 52) && s.resolution >= 0 && s.resolution <= 0.5,
                "boundary search settings out of range");
  DLBENCH_CHECK(s.seeds.empty() || s.seeded, "boundary search seeds given to a search that is not seeded");
  for (const std::optional<double>& limit : {s.memory_limit_bytes, s.seed_limit_bytes}) {
    DLBENCH_CHECK(!limit || (std::isfinite(*limit) && *limit > 0),
                  "boundary search memory limit out of range");
  }
  for (const GuidePoint& p : s.seeds) {
    DLBENCH_CHECK(p.value >= 1 && p.value <= (std::int64_t{1} << 52) && std::isfinite(p.peak_bytes) &&
                      p.peak_bytes >= 0,
                  "boundary search seed out of range");
  }
}

// The next value of the doubling phase after `v`, at most max_value.
std::int64_t Doubled(std::int64_t v, std::int64_t max_value) { return v > max_value / 2 ? max_value : v * 2; }

// Where the line through two of `points` meets `limit_bytes` (unclamped): b, the largest value at
// most `lo` (the first of equals), and a, the largest value at most half b's, else the largest below
// b's. Two fitting points close together (the guess and its check one above) have peaks whose
// difference is mostly the allocator's rounding, and a slope from them can be off by several times
// (SSD-MobileNet training on an H100: 465 and 475 gave a line to 627, the boundary was 475). nullopt
// without two such points or with a line that does not rise.
std::optional<double> LineAt(const std::vector<GuidePoint>& points, std::int64_t lo, double limit_bytes) {
  const GuidePoint* b = nullptr;
  for (const GuidePoint& p : points) {
    if (p.value <= lo && (b == nullptr || p.value > b->value)) b = &p;
  }
  if (b == nullptr) return std::nullopt;
  const GuidePoint* a = nullptr;
  const GuidePoint* near = nullptr;
  for (const GuidePoint& p : points) {
    if (p.value >= b->value) continue;
    const GuidePoint*& slot = p.value <= b->value / 2 ? a : near;
    if (slot == nullptr || p.value > slot->value) slot = &p;
  }
  if (a == nullptr) a = near;
  if (a == nullptr) return std::nullopt;
  const double slope = (b->peak_bytes - a->peak_bytes) / static_cast<double>(b->value - a->value);
  if (!(slope > 0)) return std::nullopt;
  const double x = static_cast<double>(b->value) + std::floor((limit_bytes - b->peak_bytes) / slope);
  if (!std::isfinite(x)) return std::nullopt;
  return x;
}

}  // namespace

std::optional<std::int64_t> PredictBoundary(const std::vector<BoundaryProbe>& probes,
                                            const std::vector<std::optional<double>>& peaks, std::int64_t lo,
                                            std::int64_t upper, double limit_bytes,
                                            const std::vector<GuidePoint>& seeds) {
  if (lo + 1 > upper) return std::nullopt;
  // This search's fits first, so that a seed of the same value never displaces one of them.
  std::vector<GuidePoint> points;
  points.reserve(probes.size() + seeds.size());
  for (std::size_t i = 0; i < probes.size() && i < peaks.size(); ++i) {
    if (probes[i].passed && peaks[i]) points.push_back({probes[i].value, *peaks[i]});
  }
  points.insert(points.end(), seeds.begin(), seeds.end());
  const std::optional<double> x = LineAt(points, lo, limit_bytes);
  if (!x) return std::nullopt;
  return static_cast<std::int64_t>(std::clamp(*x, static_cast<double>(lo + 1), static_cast<double>(upper)));
}

std::optional<std::int64_t> SeedGuess(const std::vector<GuidePoint>& seeds, std::int64_t min_value,
                                      std::int64_t max_value, double limit_bytes) {
  const std::optional<double> x = LineAt(seeds, std::numeric_limits<std::int64_t>::max(), limit_bytes);
  if (!x) return std::nullopt;
  return static_cast<std::int64_t>(
      std::clamp(*x, static_cast<double>(min_value), static_cast<double>(max_value)));
}

BoundarySearchResult SearchBoundary(const BoundarySearchSettings& s,
                                    const std::function<bool(std::int64_t)>& probe,
                                    const std::function<bool()>& stop) {
  BoundarySearchSettings unguided = s;
  unguided.memory_limit_bytes.reset();
  return SearchBoundary(
      unguided,
      [&](std::int64_t v) {
        return ProbeAnswer{probe(v), std::nullopt};
      },
      stop);
}

BoundarySearchResult SearchBoundary(const BoundarySearchSettings& s,
                                    const std::function<ProbeAnswer(std::int64_t)>& probe,
                                    const std::function<bool()>& stop) {
  CheckSettings(s);
  BoundarySearchResult r;
  // Integers up to 2^52 are exact in double: PeakBracket's rule (a pass above a failure is not
  // kept) serves integers as it serves rates.
  PeakBracket bracket;
  std::vector<std::optional<double>> peaks;
  bool stopped = false;
  bool failed = false;  // a probe was inconclusive
  // What the guesses aim at: the settings' limit, lowered by what the probes say they could hold.
  std::optional<double> limit = s.memory_limit_bytes;
  // A fit's peak reached the limit (kSaturatedShare): the guesses no longer follow the line (below).
  bool saturated = false;
  auto run = [&](std::int64_t value, bool guided, bool from_seeds = false) {
    const ProbeAnswer answer = probe(value);
    if (limit && answer.limit_bytes && std::isfinite(*answer.limit_bytes) && *answer.limit_bytes > 0)
      limit = std::min(*limit, *answer.limit_bytes);
    const bool passed = answer.passed && !answer.inconclusive;
    r.probes.push_back({value, passed, guided, answer.inconclusive, from_seeds});
    // A peak that is no number of bytes (not finite, negative) is no peak.
    const bool usable_peak =
        passed && answer.peak_bytes && std::isfinite(*answer.peak_bytes) && *answer.peak_bytes >= 0;
    peaks.push_back(usable_peak ? answer.peak_bytes : std::nullopt);
    if (usable_peak && limit && *answer.peak_bytes >= (1 - kSaturatedShare) * *limit) saturated = true;
    // An inconclusive probe says nothing about memory: a failure it would add to the bracket could
    // close it on a value that was never out of memory.
    if (answer.inconclusive) {
      failed = true;
    } else {
      bracket.Add(static_cast<double>(value), passed);
    }
    stopped = stop && stop();
  };
  auto budget_left = [&] { return !stopped && !failed && r.probes.size() < s.max_probes; };
  auto lo = [&] { return static_cast<std::int64_t>(*bracket.lo); };
  auto hi = [&] { return static_cast<std::int64_t>(*bracket.hi); };

  std::size_t guesses = 0;
  std::int64_t misses = 0;  // guesses that did not fit: the next one steps back further from the failure
  // The guided misses since the last probe that was no guided miss, and whether the first of them
  // guessed more than kFarGuess times the largest fit: a line drawn through small probes and
  // carried that far can be off by half (BERT-base training on an H100: 8 and 16 said 3,207, the
  // boundary was 1,760), where stepping back by percents spends every guess near the failure.
  std::size_t straight_misses = 0;
  bool far_miss = false;
  // Close enough: adjacent, or within the resolution of the fitting value.
  auto tolerance = [&] {
    return std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::floor(static_cast<double>(lo()) * s.resolution)));
  };
  auto resolved = [&] { return hi() - lo() <= tolerance(); };
  // A fit whose peak is within kSaturatedShare of the aim: near a cap the caching allocator's
  // reserved peak reaches the limit before the batch does (it frees its cache and retries), so
  // such a peak says "at the limit" whatever the distance to the boundary, and a line through it
  // says "a little above the largest fit" probe after probe (on an H100 under 16 GiB, session 27:
  // ResNet-50 fp32 training fit at 170, 173, 177, 180, 185 with peaks of 97-99% of the cap, then
  // doubled to 370 and bisected: 14 probes for a boundary at 190). After one, the line is not
  // used again: the guesses gallop up from the largest fit by the tolerance, then twice it, four
  // times it, ..., each step at most half the bracket when a failure is above. So a failure the
  // gallop made is bisected as before, and one far above that came before the saturated fit (a
  // line from small probes that over-predicted) does not make the search bisect all the way down
  // to a boundary that the saturated fit says is close (BERT-base bf16 training under 16 GiB on an
  // H100, session 28: 321 fit saturated under a failure at 569, then five bisection steps failed
  // before 324 fit: 12 probes where the gallop takes 9).
  int gallops = 0;
  auto guess = [&]() -> std::optional<std::int64_t> {
    if (!s.memory_limit_bytes || guesses >= kMaxGuidedProbes) return std::nullopt;
    const std::int64_t upper = bracket.hi ? hi() - 1 : s.max_value;
    if (saturated) {
      if (lo() >= upper) return std::nullopt;
      std::int64_t step = tolerance() << gallops;
      if (bracket.hi) step = std::min(step, (hi() - lo()) / 2);
      if (step < 1) return std::nullopt;
      ++gallops;
      return lo() + std::min(upper - lo(), step);
    }
    std::optional<std::int64_t> v = PredictBoundary(r.probes, peaks, lo(), upper, *limit, s.seeds);
    if (v && misses > 0 && bracket.hi) {
      // 1% of the failing value (at least 1), doubled with each miss: misses <= kMaxGuidedProbes.
      const std::int64_t back = std::max<std::int64_t>(1, hi() / 100) << (misses - 1);
      const std::int64_t stepped = std::max(lo() + 1, std::min(*v, hi() - back));
      // Stepped back to within the resolution of the largest fit, a guess can only confirm that
      // fit (BERT-base training on an H100: 1,704 fitted, the next guess was 1,705); a bisection
      // step halves the bracket instead.
      if (stepped < *v && stepped - lo() <= tolerance()) return std::nullopt;
      v = stepped;
    } else if (v) {
      // A guess above the largest fit with no failure to step back from is at least the resolution
      // above it, where a failure ends the search (with resolution 0: one above).
      v = std::max(*v, std::min(upper, lo() + tolerance()));
    }
    return v;
  };

  // Seeded: the seeds' line first. Their lines come from other caps' fits, whose peaks near those
  // caps are saturated (the allocator frees its cache and retries before it fails), so they
  // over-predict by a few percent (an H100 under 24 and 40 GiB, session 27: 16 of 31 first guesses
  // failed, 0.7-7.3% above the boundary in 14, 21% and 26% in two). On a miss the guesses walk back from the
  // failure by 2% of it, then 4%, 8%, 16% of the next (about 2%, 6%, 13% and 27% below the seeds' guess)
  // while guesses remain; with none fitting, the largest seed below the last failure (it fitted under the
  // other cap), then min_value. Each keeps a probe for min_value, so that a search that fits nowhere still
  // probes it (none_fits).
  const std::optional<std::int64_t> seed_guess =
      s.memory_limit_bytes && !s.seeds.empty() && s.max_probes >= 2
          ? SeedGuess(s.seeds, s.min_value, s.max_value,
                      std::min(*s.memory_limit_bytes, s.seed_limit_bytes.value_or(*s.memory_limit_bytes)))
          : std::nullopt;
  if (seed_guess) {
    ++guesses;
    run(*seed_guess, true, true);
    auto missed = [&] {
      return !r.probes.back().passed && budget_left() && r.probes.back().value > s.min_value;
    };
    while (missed() && guesses < kMaxGuidedProbes && r.probes.size() + 2 <= s.max_probes) {
      ++misses;  // the guesses after a fit step back from their failure further
      const std::int64_t failure = r.probes.back().value;
      const std::int64_t back = std::max<std::int64_t>(1, failure / 50) << (misses - 1);
      if (failure - back <= s.min_value) break;
      ++guesses;
      run(failure - back, true);
    }
    if (missed()) {
      const std::int64_t failure = r.probes.back().value;
      std::optional<std::int64_t> below;
      for (const GuidePoint& p : s.seeds) {
        if (p.value > s.min_value && p.value < failure && (!below || p.value > *below)) below = p.value;
      }
      if (below && r.probes.size() + 2 <= s.max_probes) {
        run(*below, false, true);
      } else {
        below.reset();
      }
      if ((!below || !r.probes.back().passed) && budget_left()) run(s.min_value, false);
    }
  } else {
    run(s.min_value, false);
  }
  while (budget_left() && bracket.lo) {
    if (bracket.hi ? resolved() : lo() >= s.max_value) break;
    if (straight_misses >= 2 && far_miss) {
      // Two guesses from a far-carried line failed: a bisection step, whose fit (if it fits) is a
      // new anchor far from the small probes. It halves the bracket, so plan's bound holds.
      straight_misses = 0;
      run(lo() + (hi() - lo()) / 2, false);
    } else if (const std::optional<std::int64_t> v = guess()) {
      ++guesses;
      const std::int64_t fit = lo();
      run(*v, true);
      if (r.probes.back().passed) {
        straight_misses = 0;
      } else {
        ++misses;
        if (straight_misses++ == 0) far_miss = *v > fit * kFarGuess;
      }
    } else if (!bracket.hi) {
      run(Doubled(lo(), s.max_value), false);
    } else {
      run(lo() + (hi() - lo()) / 2, false);
    }
  }

  if (bracket.lo) r.largest_passing = lo();
  if (bracket.hi) r.smallest_failing = hi();
  if (bracket.lo && bracket.hi && hi() - lo() == 1) {
    r.end = BoundarySearchEnd::kConverged;
  } else if (bracket.lo && bracket.hi && resolved()) {
    r.end = BoundarySearchEnd::kResolved;
  } else if (!bracket.lo && bracket.hi && hi() <= s.min_value) {
    r.end = BoundarySearchEnd::kNoneFits;
  } else if (bracket.lo && !bracket.hi && lo() >= s.max_value) {
    r.end = BoundarySearchEnd::kMaxFits;
  } else if (stopped) {
    r.end = BoundarySearchEnd::kStopped;
  } else if (failed) {
    r.end = BoundarySearchEnd::kProbeFailed;
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
  if (!s.memory_limit_bytes) return std::min(s.max_probes, doubling + bisection);
  // Guided: a first failure may come from a guess anywhere in [min_value, max_value].
  std::size_t any_bracket = 0;
  for (std::int64_t w = s.max_value - s.min_value; w > 1; w = (w + 1) / 2) ++any_bracket;
  return std::min(s.max_probes, doubling + any_bracket + kMaxGuidedProbes + (s.seeded ? 1 : 0));
}

}  // namespace dlbench::stats
