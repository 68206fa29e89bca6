#include "cli/ddp_console.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "cli/console.h"
#include "common/human_text.h"
#include "common/text.h"
#include "monitor/host_summary.h"
#include "orchestrator/ddp_analysis.h"
#include "record/metrics.h"

namespace dlbench::cli {
namespace {

namespace metric = record::metric;
using nlohmann::json;

std::string Param(const record::CellRecord& c, const char* key) {
  auto it = c.params.find(key);
  if (it == c.params.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

int WorldSize(const record::CellRecord& c) { return orchestrator::DdpWorldSize(c); }
std::string Mode(const record::CellRecord& c) { return orchestrator::DdpModeOf(c); }

std::optional<double> Metric(const record::CellRecord& c, std::string_view name) {
  return record::MetricValue(c, name);
}

std::string Pct(std::optional<double> v) { return v ? fmt::format("{:.1f}%", *v) : "-"; }

// What groups cells into one scaling table: every parameter but world_size and ddp_mode.
std::string GroupKey(const record::CellRecord& c) {
  json p = c.params;
  if (p.is_object()) {
    p.erase("world_size");
    p.erase("ddp_mode");
  }
  return p.dump();
}

std::string GroupTitle(const record::CellRecord& c) {
  std::string title = Param(c, "model");
  for (const char* key : {"batch_size", "device", "precision", "backend"}) {
    const std::string v = Param(c, key);
    if (!v.empty()) title += ", " + std::string(key) + " " + v;
  }
  return title;
}

std::string Slowest(const record::CellRecord& c) {
  const std::optional<double> rank = Metric(c, metric::kDdpSlowestRank);
  if (!rank) return "-";
  return fmt::format("{:.0f} (+{}, {:.1f}%)", *rank, FormatDurationNs(Metric(c, metric::kDdpStragglerLagNs)),
                     Metric(c, metric::kDdpStragglerLagPct).value_or(0.0));
}

// The cell's extras[kDdpScalingExtrasKey], or an empty object.
json ScalingExtras(const record::CellRecord& c) {
  if (!c.extras.is_object()) return json::object();
  auto it = c.extras.find(record::kDdpScalingExtrasKey);
  return it != c.extras.end() && it->is_object() ? *it : json::object();
}

std::string WhyNone(const json& x, const char* figure) {
  if (!x.is_object() || !x.contains(figure) || !x[figure].is_object()) return "";
  const json& f = x[figure];
  return f.contains("why_none") && f["why_none"].is_string() ? f["why_none"].get<std::string>() : "";
}

std::string RenderAllReduce(const std::vector<const record::CellRecord*>& cells) {
  Table table({{"#", true},
               {"ranks", true},
               {"backend", false},
               {"bytes", true},
               {"time", true},
               {"algbw", true},
               {"busbw", true}});
  for (const record::CellRecord* c : cells) {
    const json x = ScalingExtras(*c);
    std::optional<double> bytes;
    if (x.is_object() && x.contains("allreduce_bytes") && x["allreduce_bytes"].is_number())
      bytes = x["allreduce_bytes"].get<double>();
    auto bw = [&](std::string_view name) {
      const std::optional<double> v = Metric(*c, name);
      return v ? FormatBytes(*v) + "/s" : std::string("-");
    };
    table.AddRow({std::to_string(c->index), std::to_string(WorldSize(*c)),
                  TerminalSafe(Param(*c, "backend").empty() ? std::string("auto") : Param(*c, "backend")),
                  FormatBytes(bytes), FormatDurationNs(Metric(*c, metric::kStepTimeMeanNs)),
                  bw(metric::kAllreduceAlgbwBytesPerS), bw(metric::kAllreduceBusbwBytesPerS)});
  }
  return fmt::format(
      "\nAll-reduce alone (model allreduce; nccl-tests' definitions: algbw = bytes / time, busbw = algbw x "
      "2(n-1)/n; time = rank 0's mean):\n{}",
      table.Render());
}

}  // namespace

std::string RenderScaling(const std::vector<record::CellRecord>& cells) {
  std::map<std::string, std::vector<const record::CellRecord*>> groups;
  std::vector<std::string> order;
  std::vector<const record::CellRecord*> allreduce;
  for (const record::CellRecord& c : cells) {
    if (c.outcome != record::Outcome::kOk || Param(c, "strategy") != "ddp") continue;
    if (Param(c, "model") == "allreduce") {
      allreduce.push_back(&c);
      continue;
    }
    if (!Metric(c, metric::kDdpGlobalSamplesPerS)) continue;
    const std::string key = GroupKey(c);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&c);
  }
  std::string out;
  for (const std::string& key : order) {
    std::vector<const record::CellRecord*>& group = groups[key];
    std::stable_sort(
        group.begin(), group.end(), [](const record::CellRecord* a, const record::CellRecord* b) {
          return std::make_pair(Mode(*a), WorldSize(*a)) < std::make_pair(Mode(*b), WorldSize(*b));
        });
    Table table({{"#", true},
                 {"ranks", true},
                 {"ddp_mode", false},
                 {"global samples/s", true},
                 {"speedup", true},
                 {"efficiency", true},
                 {"all-reduce share", true},
                 {"exposed comm", true},
                 {"overlap", true},
                 {"slowest rank (lag)", false}});
    std::vector<std::string> notes;
    std::set<std::string> noted;
    for (const record::CellRecord* c : group) {
      const int world = WorldSize(*c);
      const std::optional<double> speedup = Metric(*c, metric::kDdpSpeedup);
      table.AddRow({std::to_string(c->index), std::to_string(world), TerminalSafe(Mode(*c)),
                    FormatRate(Metric(*c, metric::kDdpGlobalSamplesPerS)),
                    world == 1 ? "1 (control)"
                    : speedup  ? fmt::format("{:.2f}x", *speedup)
                               : "-",
                    world == 1 ? "-" : Pct(Metric(*c, metric::kDdpScalingEfficiencyPct)),
                    Pct(Metric(*c, metric::kDdpAllreduceSharePct)),
                    FormatDurationNs(Metric(*c, metric::kDdpExposedCommNs)),
                    Pct(Metric(*c, metric::kDdpOverlapPct)), Slowest(*c)});
      const json x = ScalingExtras(*c);
      static constexpr std::pair<const char*, const char*> kFigures[] = {
          {"efficiency", "no efficiency"},
          {"exposed", "no exposed communication"},
          {"overlap", "no overlap"}};
      for (const auto& [figure, name] : kFigures) {
        const std::string why = WhyNone(x, figure);
        if (why.empty()) continue;
        const std::string note = fmt::format("#{} {}: {}", c->index, name, why);
        if (noted.insert(note).second) notes.push_back(note);
      }
    }
    out += fmt::format(
        "\nScaling of {} (ddp; batch_size is per rank; speedup against the run's world_size 1 cell):\n{}",
        TerminalSafe(GroupTitle(*group.front())), table.Render());
    for (const std::string& n : notes) out += "  " + TerminalSafe(n) + "\n";
  }
  if (!allreduce.empty()) out += RenderAllReduce(allreduce);
  return out;
}

std::string RenderHosts(const std::vector<record::CellRecord>& cells) {
  namespace f = monitor::host_figure;
  auto number = [](const json& o, const char* key) -> std::optional<double> {
    const auto it = o.find(key);
    if (it == o.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  auto fixed = [](std::optional<double> v, const char* unit) {
    return v ? fmt::format("{:.2f}{}", *v, unit) : std::string("-");
  };
  Table table({{"#", true},
               {"rank", true},
               {"host", false},
               {"samples", true},
               {"busy cores (mean/max)", true},
               {"host mem peak", true},
               {"runner cores", true},
               {"runner RSS peak", true},
               {"GPU util", false},
               {"GPU power (mean/max)", false}});
  std::vector<std::string> notes;
  for (const record::CellRecord& c : cells) {
    if (!c.extras.is_object()) continue;
    const auto hosts = c.extras.find(monitor::kHostsExtrasKey);
    if (hosts == c.extras.end() || !hosts->is_array()) continue;
    for (const json& h : *hosts) {
      if (!h.is_object()) continue;
      const std::string rank = h.contains("rank") ? h["rank"].dump() : "?";
      const std::string host =
          TerminalSafe(h.value("host", std::string("?")) + " (" + h.value("addr", std::string("?")) + ")");
      const auto figures = h.find("figures");
      if (figures == h.end() || !figures->is_object()) {
        table.AddRow({std::to_string(c.index), rank, host, "-", "-", "-", "-", "-", "-", "-"});
        notes.push_back(fmt::format("#{} rank {}: no figures: {}", c.index, rank,
                                    TerminalSafe(h.value("missing", std::string("not known")))));
        continue;
      }
      const json& x = *figures;
      const auto busy = number(x, f::kCpuBusyCoresMean);
      std::string util;
      std::string power;
      for (const json& g : x.value(f::kGpus, json::array())) {
        if (!g.is_object()) continue;
        const std::string name = "gpu" + g.value(f::kGpuIndex, json(0)).dump();
        const auto u = number(g, f::kGpuUtilMeanPct);
        const auto pm = number(g, f::kGpuPowerMeanW);
        const auto px = number(g, f::kGpuPowerMaxW);
        if (u) util += (util.empty() ? "" : ", ") + fmt::format("{} {:.0f}%", name, *u);
        if (pm && px)
          power += (power.empty() ? "" : ", ") + fmt::format("{} {:.0f}/{:.0f} W", name, *pm, *px);
      }
      const auto rounds = number(x, f::kRounds);
      table.AddRow(
          {std::to_string(c.index), rank, host, rounds ? fmt::format("{:.0f}", *rounds) : "-",
           busy ? fmt::format("{:.2f}/{:.2f}", *busy, number(x, f::kCpuBusyCoresMax).value_or(*busy)) : "-",
           FormatBytes(number(x, f::kMemPeakBytes)), fixed(number(x, f::kRunnerCpuCores), ""),
           FormatBytes(number(x, f::kRunnerRssPeakBytes)), util.empty() ? "-" : util,
           power.empty() ? "-" : power});
    }
  }
  if (table.empty()) return "";
  std::string out = fmt::format(
      "\nHosts of the group cells (each task samples its own host while its rank runs; figures over the "
      "runner's whole life, start-up included):\n{}",
      table.Render());
  for (const std::string& n : notes) out += "  " + n + "\n";
  return out;
}

}  // namespace dlbench::cli
