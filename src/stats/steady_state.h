// Steady-state analysis of one autocorrelated series (a cell's step times): where the warm-up
// transient ends (MSER-5) and how precisely the steady-state mean is known (batch means).
// docs/measurement.md explains the method and why these two rules were chosen.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "stats/descriptive.h"

namespace dlbench::stats {

inline constexpr std::size_t kBatchMeansDefaultBatches = 20;
inline constexpr std::size_t kBatchMeansMinBatchSize = 10;
inline constexpr std::size_t kMser5BatchSize = 5;
// MSER-5 compares the tails left after candidate cuts over the first half of the batches; with
// fewer than this many batches the comparison means nothing and no cut is proposed.
inline constexpr std::size_t kMser5MinBatches = 4;

// Non-overlapping batch means confidence interval of the mean of a stationary, possibly
// autocorrelated series.
// - k = min(batches, n / 10) batches of b = n / k consecutive values each (at least 10 values a
//   batch, so that the batch means are close to independent); the n - k b values left over are
//   dropped from the start of the series, the end nearest to warm-up.
// - The interval is mean(x) +- t_{(1+level)/2, k-1} s_B / sqrt(k), where s_B is the sample
//   standard deviation of the k batch means and mean(x) the mean of all values (so the interval
//   is centred on the mean that is reported).
// nullopt when k < 2 (fewer than 20 values), batches < 2, or level is not in (0, 1).
// All values equal -> the zero-width interval [x, x].
std::optional<Interval> BatchMeansCI(const std::vector<double>& x, double level,
                                     std::size_t batches = kBatchMeansDefaultBatches);

// The MSER-5 truncation point (White 1997; White, Cobb and Spratt 2000) without any floor:
// the series is cut into floor(n / 5) batch means Z_0.. (a trailing partial batch is ignored);
// for every d in [0, floor(batches / 2)] MSER(d) = sum_{j>=d} (Z_j - mean_{j>=d} Z)^2 / (m_d)^2
// with m_d = batches - d; the result is 5 d* for the smallest d* minimising MSER. Restricting d
// to the first half avoids MSER's known artefact of choosing a cut near the end of the series.
// nullopt when there are fewer than kMser5MinBatches batches. O(n) time, O(n / 5) memory.
std::optional<std::size_t> Mser5Cut(const std::vector<double>& x);

// The warm-up cut to use: max(Mser5Cut(x), min_cut), or min_cut when the series is too short
// for MSER-5; never more than x.size() (a series shorter than min_cut is all warm-up).
std::size_t Mser5Truncation(const std::vector<double>& x, std::size_t min_cut);

}  // namespace dlbench::stats
