#include "report/scaling_charts.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <string>

#include "record/metrics.h"
#include "record/outcome.h"
#include "report/chart_json.h"

namespace dlbench::report {
namespace {

using nlohmann::json;

// Every parameter but world_size.
std::string ConfigurationOf(const record::CellRecord& cell) {
  return chart::ConfigurationWithout(cell, "world_size");
}

}  // namespace

void ScalingCharts(const std::vector<record::CellRecord>& cells, std::vector<json>& charts) {
  std::map<std::string, std::vector<const record::CellRecord*>> groups;
  for (const auto& c : cells) {
    if (c.outcome == record::Outcome::kOk && chart::Param(c, "strategy") == "ddp" &&
        chart::Param(c, "model") != "allreduce" && chart::NumericParam(c, "world_size") &&
        chart::Metric(c, record::metric::kDdpGlobalSamplesPerS)) {
      groups[ConfigurationOf(c)].push_back(&c);
    }
  }
  for (auto& [config, members] : groups) {
    std::map<double, std::vector<const record::CellRecord*>> by_world;
    for (const auto* c : members) by_world[*chart::NumericParam(*c, "world_size")].push_back(c);
    if (by_world.size() < 2) continue;  // one world size is a point, not a curve
    json measured = json::array();
    std::string note;
    for (const auto& [world, at] : by_world) {
      double sum = 0;
      for (const auto* c : at) sum += *chart::Metric(*c, record::metric::kDdpGlobalSamplesPerS);
      measured.push_back(chart::Point(world, sum / static_cast<double>(at.size())));
      // The figures of the point's first repetition.
      const record::CellRecord& first = *at.front();
      std::string figures;
      if (auto e = chart::Metric(first, record::metric::kDdpScalingEfficiencyPct))
        figures += fmt::format("efficiency {}%", chart::Fmt(*e, 3));
      if (auto share = chart::Metric(first, record::metric::kDdpAllreduceSharePct))
        figures +=
            fmt::format("{}all-reduce {}% of the step", figures.empty() ? "" : ", ", chart::Fmt(*share, 3));
      if (auto overlap = chart::Metric(first, record::metric::kDdpOverlapPct))
        figures += fmt::format("{}overlap {}%", figures.empty() ? "" : ", ", chart::Fmt(*overlap, 3));
      if (!figures.empty()) note += fmt::format("{:.0f} ranks: {}. ", world, figures);
    }
    json datasets = json::array();
    json line = chart::Dataset("global samples/s (mean)", "line", measured);
    line["point_radius"] = 3;
    datasets.push_back(std::move(line));
    const double lo = by_world.begin()->first;
    const double hi = by_world.rbegin()->first;
    if (lo == 1) {
      const double single = measured[0]["y"].get<double>();
      json ideal = chart::Dataset(
          fmt::format("ideal: ranks x the world_size 1 cell ({} samples/s)", chart::Fmt(single, 4)), "vline",
          json::array({chart::Point(lo, single * lo), chart::Point(hi, single * hi)}));
      ideal["color"] = "#7f7f7f";
      datasets.push_back(std::move(ideal));
    } else {
      note += "No world_size 1 cell in this run: no ideal line. ";
    }
    json x_axis = chart::Axis("ranks (world_size)");
    x_axis["min"] = lo;
    x_axis["max"] = hi;
    const std::string title = chart::SharedLabel(members);
    charts.push_back({{"section", "scaling"},
                      {"title", title.empty() ? config : title},
                      {"configuration", config},
                      {"note", note},
                      {"x", std::move(x_axis)},
                      {"y", chart::RateAxis("global samples/s")},
                      {"datasets", std::move(datasets)}});
  }
}

}  // namespace dlbench::report
