// What the analysis tests share (analysis_test.cc, analysis_growth_test.cc, analysis_checks_test.cc):
// step records, sampled series and a base input with a known window.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "monitor/analysis.h"

namespace dlbench::monitor::analysis_test {

inline constexpr std::int64_t kSecond = 1'000'000'000;

// n back-to-back steps of step_ns starting at t0, batch 32, on rank 0.
inline std::vector<record::StepRow> Steps(std::int64_t t0, std::int64_t step_ns, int n,
                                          std::uint32_t samples = 32) {
  std::vector<record::StepRow> rows;
  for (int i = 0; i < n; ++i) {
    record::StepRow row;
    row.record.start_ns = t0 + i * step_ns;
    row.record.end_ns = row.record.start_ns + step_ns;
    row.record.samples = samples;
    rows.push_back(row);
  }
  return rows;
}

// Points of `series` every period_ns over [from, to], value f(t).
inline void AddSeries(std::vector<record::SeriesPoint>& out, const std::string& series, std::int64_t from,
                      std::int64_t to, std::int64_t period_ns, const std::function<double(std::int64_t)>& f) {
  for (std::int64_t t = from; t <= to; t += period_ns) out.push_back({t, series, f(t)});
}

inline double Metric(const CellAnalysis& a, const std::string& name) {
  const auto* m = a.Find(name);
  EXPECT_NE(m, nullptr) << name;
  return m ? m->value : NAN;
}

// Steps: 2 warm-up steps of 1 s from t=0, then 10 measured steps: the window is [2 s, 12 s].
inline AnalysisInput BaseInput() {
  AnalysisInput in;
  in.steps = Steps(0, kSecond, 12);
  in.window = record::MeasuredWindow{2, 10};
  return in;
}

}  // namespace dlbench::monitor::analysis_test
