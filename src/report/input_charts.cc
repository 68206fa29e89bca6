#include "report/input_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "common/human_text.h"
#include "record/metrics.h"
#include "record/outcome.h"
#include "report/chart_json.h"

namespace dlbench::report {
namespace {

using nlohmann::json;

std::optional<double> Workers(const record::CellRecord& cell) {
  auto it = cell.effective.find("data_workers");
  if (it != cell.effective.end() && it->is_number()) return it->get<double>();
  return chart::NumericParam(cell, "data_workers");
}

bool ReadsFiles(const record::CellRecord& cell) {
  const std::string data = chart::Param(cell, "data");
  return data == "jpeg_dir" || data == "tfrecord";
}

// Every parameter but data_workers.
std::string ConfigurationOf(const record::CellRecord& cell) {
  return chart::ConfigurationWithout(cell, "data_workers");
}

const json* Verdict(const record::CellRecord& cell) {
  auto it = cell.extras.find(record::kInputVerdictExtrasKey);
  return it != cell.extras.end() && it->is_object() ? &*it : nullptr;
}

}  // namespace

void InputCharts(const std::vector<record::CellRecord>& cells, std::vector<json>& charts) {
  std::map<std::string, const record::CellRecord*> by_id;
  for (const auto& c : cells) by_id[c.cell_id] = &c;
  std::map<std::string, std::vector<const record::CellRecord*>> groups;
  for (const auto& c : cells) {
    if (c.outcome == record::Outcome::kOk && ReadsFiles(c) && !c.params.value("pipeline_only", false) &&
        Workers(c) && chart::Metric(c, record::metric::kSamplesPerS)) {
      groups[ConfigurationOf(c)].push_back(&c);
    }
  }
  for (auto& [config, members] : groups) {
    // Mean samples/s per worker count; each repetition as a point when there are several.
    std::map<double, std::vector<const record::CellRecord*>> by_workers;
    for (const auto* c : members) by_workers[*Workers(*c)].push_back(c);
    if (by_workers.size() < 2) continue;  // one worker count is a point, not a curve
    json curve = json::array();
    json raw = json::array();
    std::string note;
    std::optional<double> compute_bound_from;
    std::optional<double> ceiling;
    for (const auto& [workers, at] : by_workers) {
      double sum = 0;
      for (const auto* c : at) {
        const double v = *chart::Metric(*c, record::metric::kSamplesPerS);
        sum += v;
        raw.push_back(chart::Point(workers, v));
      }
      curve.push_back(chart::Point(workers, sum / static_cast<double>(at.size())));
      // The verdict of the point's first repetition, and the control it was measured against.
      if (const json* v = Verdict(*at.front())) {
        const std::string bound =
            v->value("bound", json()).is_string() ? v->value("bound", std::string()) : "no verdict";
        note += fmt::format("{}: {}. ", CountNoun(static_cast<std::int64_t>(workers), "worker"), bound);
        if (bound == "compute-bound" && !compute_bound_from) compute_bound_from = workers;
        if (auto control = by_id.find(v->value("control_cell", std::string())); control != by_id.end()) {
          if (auto speed = chart::Metric(*control->second, record::metric::kSamplesPerS)) {
            ceiling = std::max(ceiling.value_or(0.0), *speed);
          }
        }
      }
    }
    json datasets = json::array();
    json line = chart::Dataset("mean samples/s", "line", curve);
    line["point_radius"] = 3;
    datasets.push_back(std::move(line));
    if (raw.size() > curve.size()) datasets.push_back(chart::Dataset("each repetition", "points", raw));
    const double lo = by_workers.begin()->first;
    const double hi = by_workers.rbegin()->first;
    if (ceiling) {
      json c = chart::Dataset(
          fmt::format("compute-only ceiling, data: device ({} samples/s)", chart::Fmt(*ceiling, 4)), "vline",
          json::array({chart::Point(lo, *ceiling), chart::Point(hi, *ceiling)}));
      c["color"] = "#7f7f7f";
      datasets.push_back(std::move(c));
    } else {
      note += "No control measured: no compute-only ceiling. ";
    }
    if (compute_bound_from) {
      note += fmt::format("Compute-bound from {}.",
                          CountNoun(static_cast<std::int64_t>(*compute_bound_from), "worker"));
    } else if (ceiling) {
      note += "Input-limited at every worker count measured.";
    }
    json x_axis = chart::Axis("data_workers");
    x_axis["min"] = lo;
    x_axis["max"] = hi;
    const std::string title = chart::SharedLabel(members);
    charts.push_back({{"section", "input"},
                      {"title", title.empty() ? config : title},
                      {"configuration", config},
                      {"note", note},
                      {"x", std::move(x_axis)},
                      {"y", chart::RateAxis("samples/s")},
                      {"datasets", std::move(datasets)}});
  }
}

}  // namespace dlbench::report
