// What the boundary search's tests share (boundary_search_test.cc: bisection and its bounds;
// boundary_guide_test.cc: guesses from the peaks' line; boundary_seed_test.cc: seeds from other
// caps): probe answers of a known boundary or a known memory model.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "stats/boundary_search.h"

namespace dlbench::stats::boundary_test {

inline constexpr double kGiB = 1 << 30;

// What fits: every value up to `boundary` (0: nothing).
inline auto FitsUpTo(std::int64_t boundary, int* calls = nullptr) {
  return [boundary, calls](std::int64_t v) {
    if (calls != nullptr) ++*calls;
    return v <= boundary;
  };
}

// A cell whose memory is base + per_value x v, and that fits while its real need is within
// `limit`. It reports `reported` x its real peak: 1 is the truth; below 1 a runner that under-reports
// (an allocator's rounding and workspaces the peak does not count), so the line over-predicts.
inline auto AffineMemory(double base, double per_value, double limit, double reported = 1.0) {
  return [=](std::int64_t v) {
    const double need = base + per_value * static_cast<double>(v);
    ProbeAnswer a;
    a.passed = need <= limit;
    if (a.passed) a.peak_bytes = need * reported;
    return a;
  };
}

// A cell whose need is base + per_value x v and that fits while it is within `limit`, reporting
// `over` x its need, at most `ceiling` x the limit: the caching allocator's reserved peak, which
// holds cache above what is allocated and near a fraction's limit frees it and retries, so that it
// sits just under the limit well below the boundary (saturated peaks, SearchBoundary).
inline auto ReservedNearTheLimit(double base, double per_value, double limit, double over, double ceiling) {
  return [=](std::int64_t v) {
    const double need = base + per_value * static_cast<double>(v);
    ProbeAnswer a;
    a.passed = need <= limit;
    if (a.passed) a.peak_bytes = std::min(ceiling * limit, over * need);
    return a;
  };
}

// The settings of bench/gpu/memory-caps.sh's searches (batch 8 to 4,096, 14 probes, 2%) under
// `cap_bytes`, guided by the peaks.
inline BoundarySearchSettings TableSettings(double cap_bytes) {
  BoundarySearchSettings s;
  s.min_value = 8;
  s.max_value = 4096;
  s.max_probes = 14;
  s.resolution = 0.02;
  s.memory_limit_bytes = cap_bytes;
  return s;
}

// The values the search probed, in order.
inline std::vector<std::int64_t> Values(const BoundarySearchResult& r) {
  std::vector<std::int64_t> values;
  for (const BoundaryProbe& p : r.probes) values.push_back(p.value);
  return values;
}

}  // namespace dlbench::stats::boundary_test
