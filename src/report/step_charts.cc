#include "report/step_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "common/clock.h"
#include "common/human_text.h"
#include "report/chart_json.h"
#include "report/html_report.h"

namespace dlbench::report {
namespace {

using nlohmann::json;

using chart::Axis;
using chart::Dataset;
using chart::Point;

// The measured window as positions in RankZeroSteps(cell): [first, end), clipped to the steps.
std::pair<std::size_t, std::size_t> WindowBounds(const record::CellRecord& cell, std::size_t steps) {
  const record::MeasuredWindow w = cell.window.value_or(record::MeasuredWindow{});
  const auto n = static_cast<std::int64_t>(steps);
  const std::int64_t first = std::clamp<std::int64_t>(w.first_step, 0, n);
  const std::int64_t end = std::clamp<std::int64_t>(first + w.steps, first, n);
  return {static_cast<std::size_t>(first), static_cast<std::size_t>(end)};
}

}  // namespace

void StepCharts(const std::vector<record::CellRecord>& cells, int max_points, std::vector<json>& charts) {
  for (const auto& c : cells) {
    const auto steps = record::RankZeroSteps(c);
    if (steps.empty()) continue;
    const auto [cut, measured_end] = WindowBounds(c, steps.size());
    std::vector<double> ms(steps.size());
    for (std::size_t i = 0; i < steps.size(); ++i) ms[i] = NsToMs(steps[i].end_ns - steps[i].start_ns);
    // The y axis runs from 0 to 10% above the longest measured step, so one 1 s autotuning step in
    // the warm-up cannot flatten the steps that count; steps outside the measured window that are
    // longer are clipped and marked at the top edge. Without a measured window every step counts.
    const bool has_window = cut < measured_end;
    const std::size_t scale_begin = has_window ? cut : 0;
    const std::size_t scale_end = has_window ? measured_end : steps.size();
    const double top = 1.1 * *std::max_element(ms.begin() + static_cast<std::ptrdiff_t>(scale_begin),
                                               ms.begin() + static_cast<std::ptrdiff_t>(scale_end));
    const double y_max = top > 0 ? top : 1.0;  // all-zero steps (a virtual clock) still get an axis
    const auto segment = [&](std::size_t begin, std::size_t end) {
      json data = json::array();
      for (std::size_t k : ThinIndices(end - begin, max_points)) {
        data.push_back(Point(static_cast<double>(begin + k), ms[begin + k]));
      }
      return data;
    };
    json datasets = json::array();
    if (cut > 0) {
      json warm = Dataset("warm-up", "line", segment(0, cut));
      warm["color"] = "#9e9e9e";
      datasets.push_back(std::move(warm));
    }
    if (has_window) datasets.push_back(Dataset("measured", "line", segment(cut, measured_end)));
    if (measured_end < steps.size() && has_window) {
      json after =
          Dataset("after the stop decision (not measured)", "line", segment(measured_end, steps.size()));
      after["color"] = "#bdbdbd";
      datasets.push_back(std::move(after));
    }
    std::vector<std::size_t> clipped;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (ms[i] > y_max) clipped.push_back(i);
    }
    std::string note =
        fmt::format("{} of rank 0", CountNoun(static_cast<std::int64_t>(steps.size()), "step"));
    if (cut > 0 && has_window) {
      json line =
          Dataset(fmt::format("warm-up cut (step {})", cut), "vline",
                  json::array({Point(static_cast<double>(cut), 0), Point(static_cast<double>(cut), y_max)}));
      line["color"] = "#d62728";
      datasets.push_back(std::move(line));
      note += fmt::format("; the first {} warm-up ({})", cut == 1 ? "is" : fmt::format("{} are", cut),
                          c.warmup_rule.empty() ? "rule not recorded" : c.warmup_rule);
    }
    if (!clipped.empty()) {
      double longest = 0;
      json data = json::array();
      for (std::size_t k : ThinIndices(clipped.size(), max_points)) {
        json p = Point(static_cast<double>(clipped[k]), y_max);
        p["v"] = ms[clipped[k]];  // the step's own time, for the tooltip
        data.push_back(std::move(p));
      }
      for (std::size_t i : clipped) longest = std::max(longest, ms[i]);
      const std::string what =
          CountNoun(static_cast<std::int64_t>(clipped.size()), "step") + " outside the measured window";
      json marks = Dataset(fmt::format("{} above the axis (up to {})", what, HumanDurationNs(longest * 1e6)),
                           "clipped", std::move(data));
      marks["color"] = "#6d6d6d";
      datasets.push_back(std::move(marks));
      note += fmt::format(
          "; the axis ends 10% above the longest measured step: {} (the longest {}) {} "
          "clipped and marked at the top edge",
          what, HumanDurationNs(longest * 1e6), clipped.size() == 1 ? "is" : "are");
    }
    if (steps.size() > static_cast<std::size_t>(max_points)) note += "; thinned for drawing";
    json y_axis = Axis("step time (ms)");
    y_axis["min"] = 0;
    y_axis["max"] = y_max;
    charts.push_back({{"section", "steps"},
                      {"title", chart::CellTitle(c)},
                      {"note", note + "."},
                      {"x", Axis("step")},
                      {"y", std::move(y_axis)},
                      {"datasets", std::move(datasets)}});
  }
}

}  // namespace dlbench::report
