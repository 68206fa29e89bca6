// The series helpers of a cell's analysis (analysis_parts.h): grouping, windows, means, counters
// and integrals over sampled series.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "monitor/analysis_parts.h"
#include "record/metrics.h"
#include "record/series.h"

namespace dlbench::monitor::analysis_parts {
namespace {

// The value of a piecewise-linear series at t; beyond its ends, extended along the nearest segment
// (a counter's rate continues) or held (with one point).
double InterpolateAt(const Series& s, std::int64_t t) {
  if (s.size() == 1) return s.front().value;
  auto it =
      std::lower_bound(s.begin(), s.end(), t, [](const Point& p, std::int64_t v) { return p.t_ns < v; });
  std::size_t hi = static_cast<std::size_t>(it - s.begin());
  hi = std::clamp<std::size_t>(hi, 1, s.size() - 1);
  const Point& a = s[hi - 1];
  const Point& b = s[hi];
  if (b.t_ns == a.t_ns) return b.value;
  double f = static_cast<double>(t - a.t_ns) / static_cast<double>(b.t_ns - a.t_ns);
  return a.value + f * (b.value - a.value);
}

}  // namespace

void Metrics::Add(std::string_view name, double value) {
  if (std::isfinite(value)) out_.push_back({std::string(name), value, std::string(record::MetricUnit(name))});
}

SeriesMap GroupSeries(const std::vector<record::SeriesPoint>& points) {
  SeriesMap map;
  for (const auto& p : points) map[p.series].push_back({p.t_ns, p.value});
  for (auto& [name, series] : map) {
    std::stable_sort(series.begin(), series.end(),
                     [](const Point& a, const Point& b) { return a.t_ns < b.t_ns; });
  }
  return map;
}

std::map<int, const Series*> GpuSeries(const SeriesMap& map, std::string_view reading) {
  std::map<int, const Series*> out;
  for (const auto& [name, series] : map) {
    auto ref = record::series::ParseGpuSeriesName(name);
    if (ref && ref->field == reading) out[ref->index] = &series;
  }
  return out;
}

std::vector<double> ValuesIn(const Series& s, const Window& w) {
  std::vector<double> v;
  for (const auto& p : s) {
    if (w.Contains(p.t_ns)) v.push_back(p.value);
  }
  return v;
}

Series SumPerRound(const std::map<int, const Series*>& by_gpu, const Window& w) {
  std::map<std::int64_t, double> sums;
  for (const auto& [index, series] : by_gpu) {
    for (const auto& p : *series) {
      if (w.Contains(p.t_ns)) sums[p.t_ns] += p.value;
    }
  }
  Series out;
  for (const auto& [t, v] : sums) out.push_back({t, v});
  return out;
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? NAN : sum / static_cast<double>(v.size());
}

double MaxOf(const std::vector<double>& v) { return v.empty() ? NAN : *std::max_element(v.begin(), v.end()); }

std::optional<double> CounterDelta(const Series& s, const Window& w) {
  if (s.size() < 2) return std::nullopt;
  for (std::size_t i = 1; i < s.size(); ++i) {
    if (s[i].value < s[i - 1].value) return std::nullopt;
  }
  return InterpolateAt(s, w.end_ns) - InterpolateAt(s, w.start_ns);
}

std::optional<double> CounterEnergy(const Series& counter, const Series& power, const Window& w) {
  const Point* first = nullptr;
  const Point* last = nullptr;
  for (std::size_t i = 0; i < counter.size(); ++i) {
    if (i > 0 && counter[i].value < counter[i - 1].value) return std::nullopt;
    if (counter[i].t_ns < w.start_ns || counter[i].t_ns > w.end_ns) continue;
    if (first == nullptr) first = &counter[i];
    last = &counter[i];
  }
  if (first == nullptr || first == last) return std::nullopt;
  double joules = last->value - first->value;
  for (const Window edge : {Window{w.start_ns, first->t_ns}, Window{last->t_ns, w.end_ns}}) {
    if (edge.end_ns <= edge.start_ns) continue;
    const auto part = Integrate(power, edge);
    if (!part) return std::nullopt;
    joules += *part;
  }
  return joules;
}

std::optional<double> Integrate(const Series& s, const Window& w) {
  if (s.empty()) return std::nullopt;
  auto at = [&](std::int64_t t) {
    if (t <= s.front().t_ns) return s.front().value;
    if (t >= s.back().t_ns) return s.back().value;
    return InterpolateAt(s, t);
  };
  std::vector<Point> knots{{w.start_ns, at(w.start_ns)}};
  for (const auto& p : s) {
    if (p.t_ns > w.start_ns && p.t_ns < w.end_ns) knots.push_back(p);
  }
  knots.push_back({w.end_ns, at(w.end_ns)});
  double joules = 0;
  for (std::size_t i = 1; i < knots.size(); ++i) {
    joules += 0.5 * (knots[i].value + knots[i - 1].value) *
              static_cast<double>(knots[i].t_ns - knots[i - 1].t_ns) * 1e-9;
  }
  return joules;
}

std::optional<double> OtherCores(const SeriesMap& map, const Window& w) {
  auto host = map.find(std::string(record::series::kHostCpuBusyCores));
  auto proc = map.find(std::string(record::series::kProcCpuS));
  if (host == map.end() || proc == map.end() || w.seconds() <= 0) return std::nullopt;
  const double host_busy = Mean(ValuesIn(host->second, w));
  const auto tree_s = CounterDelta(proc->second, w);
  if (!std::isfinite(host_busy) || !tree_s) return std::nullopt;
  return std::max(0.0, host_busy - *tree_s / w.seconds());
}

}  // namespace dlbench::monitor::analysis_parts
