#include "stats/stability.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "stats/descriptive.h"
#include "stats/trend.h"

namespace dlbench::stats {

PettittResult Pettitt(const std::vector<double>& y) {
  PettittResult out;
  const std::size_t n = y.size();
  if (n < 2) return out;
  auto sign = [](double d) { return d > 0 ? 1.0 : (d < 0 ? -1.0 : 0.0); };
  // U_t = U_{t-1} + sum_j sign(y_t - y_j) over all j (Pettitt's recurrence): O(n^2) overall.
  double u = 0;
  for (std::size_t t = 0; t + 1 < n; ++t) {
    double v = 0;
    for (std::size_t j = 0; j < n; ++j) v += sign(y[t] - y[j]);
    u -= v;  // sum_{i<=t} sum_{j>t} sign(y_j - y_i) grows by -sum_j sign(y_t - y_j)
    if (std::abs(u) > out.k) {
      out.k = std::abs(u);
      out.change_index = t + 1;
    }
  }
  const double nn = static_cast<double>(n);
  out.p_value = std::min(1.0, 2.0 * std::exp(-6.0 * out.k * out.k / (nn * nn * nn + nn * nn)));
  return out;
}

namespace {

double MeanOf(const std::vector<double>& v, std::size_t begin, std::size_t end) {
  double sum = 0;
  for (std::size_t i = begin; i < end; ++i) sum += v[i];
  return end > begin ? sum / static_cast<double>(end - begin) : NAN;
}

}  // namespace

StabilityResult AssessStability(const std::vector<double>& values, const std::vector<double>& times_s,
                                const StabilitySettings& settings) {
  DLBENCH_CHECK(values.size() == times_s.size(), "AssessStability needs one time per value");
  StabilityResult out;
  const std::size_t n = values.size();
  out.mean = ComputeMoments(values).mean;
  const std::size_t batch = std::max<std::size_t>(5, n / std::max<std::size_t>(1, settings.batches));
  const std::size_t k = n / batch;
  out.batches = std::min(k, settings.batches);
  if (out.batches < settings.min_batches || !(out.mean > 0)) return out;
  // The batches cover the last batches * batch values; the few left over are the earliest,
  // next to the warm-up cut (as history's CutBatches does).
  const std::size_t first = n - out.batches * batch;
  std::vector<double> means(out.batches), mid_s(out.batches);
  for (std::size_t b = 0; b < out.batches; ++b) {
    const std::size_t lo = first + b * batch;
    means[b] = MeanOf(values, lo, lo + batch);
    mid_s[b] = 0.5 * (times_s[lo] + times_s[lo + batch - 1]);
  }
  const std::size_t tenth = std::max<std::size_t>(1, n / 10);
  out.first_tenth_mean = MeanOf(values, 0, tenth);
  out.last_tenth_mean = MeanOf(values, n - tenth, n);

  const MannKendallResult mk = MannKendall(means);
  const TheilSenResult ts = TheilSen(mid_s, means, 0.95);
  const PettittResult pt = Pettitt(means);
  out.trend_p = mk.p_value;
  out.shift_p = pt.p_value;
  const double duration_s = times_s.back() - times_s.front();
  out.slope_rel_per_s = std::isfinite(ts.slope) ? ts.slope / out.mean : 0;
  const double drift_rel = std::abs(out.slope_rel_per_s) * duration_s;

  const std::size_t split = pt.change_index;  // in batches
  const double before = MeanOf(means, 0, split);
  const double after = MeanOf(means, split, means.size());
  const double shift_rel = split > 0 && split < means.size() ? std::abs(after - before) / out.mean : 0;

  const bool drifting = mk.p_value < settings.alpha && drift_rel >= settings.min_rel_change;
  const bool shifted = pt.p_value < settings.alpha && shift_rel >= settings.min_rel_change;
  if (!drifting && !shifted) {
    out.kind = Stability::kStable;
    return out;
  }
  // Both tests answer to either movement; the model that fits the batch means better says which.
  double sse_line = 0, sse_step = 0;
  for (std::size_t b = 0; b < means.size(); ++b) {
    const double line = ts.intercept + ts.slope * mid_s[b];
    sse_line += (means[b] - line) * (means[b] - line);
    const double level = b < split ? before : after;
    sse_step += (means[b] - level) * (means[b] - level);
  }
  const bool step_fits_better = shifted && (!drifting || sse_step < sse_line);
  if (step_fits_better) {
    out.kind = Stability::kShifted;
    out.shift_step = first + split * batch;
    out.level_before = MeanOf(values, 0, out.shift_step);
    out.level_after = MeanOf(values, out.shift_step, n);
  } else {
    out.kind = Stability::kDrifting;
  }
  return out;
}

}  // namespace dlbench::stats
