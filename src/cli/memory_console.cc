#include "cli/memory_console.h"

#include <fmt/core.h>

#include <optional>
#include <utility>

#include "cli/console.h"
#include "common/text.h"
#include "record/metrics.h"

namespace dlbench::cli {
namespace {

std::optional<double> Number(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

std::string Text(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

std::string Count(std::optional<double> v) { return v ? fmt::format("{:.0f}", *v) : "none"; }

// A probe's memory: its measured (or modelled) peak, or what its failed allocation asked for.
std::string ProbeMemory(const nlohmann::json& memory) {
  if (const auto bytes = Number(memory, "bytes")) {
    return FormatBytes(bytes) + " (" + TerminalSafe(Text(memory, "metric")) + ")";
  }
  if (const auto asked = Number(memory, "requested_bytes")) return "asked " + FormatBytes(asked);
  return "-";
}

// A probe's wall time as the orchestrator saw it (`times.wall_s`, orchestrator/boundary_cell.cc).
std::optional<double> ProbeWall(const nlohmann::json& probe) {
  if (!probe.is_object() || !probe.contains("times")) return std::nullopt;
  const auto wall = Number(probe["times"], "wall_s");
  return wall && *wall >= 0 ? wall : std::nullopt;
}

}  // namespace

std::string RenderBoundarySearches(const std::vector<record::CellRecord>& cells) {
  std::string out;
  for (const record::CellRecord& c : cells) {
    if (!c.extras.contains("boundary_search") || !c.extras["boundary_search"].is_object()) continue;
    const nlohmann::json& search = c.extras["boundary_search"];
    const nlohmann::json probes = search.value("probes", nlohmann::json::array());
    std::string cap;
    if (c.extras.contains("memory_cap") && c.extras["memory_cap"].is_object()) {
      cap = fmt::format(", memory_cap {} ({})", FormatBytes(Number(c.extras["memory_cap"], "bytes")),
                        TerminalSafe(Text(c.extras["memory_cap"], "mechanism")));
    }
    // boundary_seed: other_caps: how many points the other caps' searches gave, and which caps.
    if (search.contains("seeds") && search["seeds"].is_object()) {
      const nlohmann::json& seeds = search["seeds"];
      std::string caps;
      for (const nlohmann::json& from : seeds.value("from", nlohmann::json::array())) {
        if (!from.is_object() || !from.contains("memory_cap") || !from["memory_cap"].is_string()) continue;
        caps += (caps.empty() ? "" : ", ") + TerminalSafe(from["memory_cap"].get<std::string>());
      }
      cap += caps.empty() ? "; no seeds stored under other caps"
                          : fmt::format("; seeded by {} fits under {}", Count(Number(seeds, "points")), caps);
    }
    // Records stored before seq_len and image_size could be searched have no key: batch_size.
    const std::string key = Text(search, "key").empty() ? "batch_size" : Text(search, "key");
    // The search's own probes; the measured runs that ended oom are listed after them. Their wall
    // times summed where every probe has one (records from before probes kept `times` have none).
    std::size_t searched = 0;
    double probe_seconds = 0;
    bool timed = probes.is_array() && !probes.empty();
    if (probes.is_array()) {
      for (const nlohmann::json& p : probes) {
        searched += p.is_object() && p.value("measured", false) ? 0 : 1;
        const auto wall = ProbeWall(p);
        timed = timed && wall.has_value();
        probe_seconds += wall.value_or(0);
      }
    }
    std::string took = timed ? fmt::format(", {:.1f} s of probes", probe_seconds) : "";
    if (search.contains("resumed_probes") && search["resumed_probes"].is_number_integer())
      took += fmt::format(", {} kept from an interrupted run", search["resumed_probes"].get<std::int64_t>());
    out += fmt::format("  #{} {}: largest {} {}, first failing {} ({}; {} of at most {} probes{}{})\n",
                       c.index, TerminalSafe(c.label.empty() ? c.key : c.label), TerminalSafe(key),
                       Count(Number(search, "found")), Count(Number(search, "first_failing")),
                       TerminalSafe(Text(search, "end")), searched, Count(Number(search, "max_probes")), took,
                       cap);
    if (!probes.is_array()) continue;
    // Which process ran each probe (pid, and its how-many-th cell) and which probes the peaks' line
    // chose; records stored before probes recorded them have neither.
    Table table({{"probe", true},
                 {TerminalSafe(key), true},
                 {"chosen by", false},
                 {"process", false},
                 {"outcome", false},
                 {"wall", true},
                 {"memory", false},
                 {"message", false}});
    for (std::size_t i = 0; i < probes.size(); ++i) {
      const nlohmann::json& p = probes[i];
      const bool guided = p.is_object() && p.value("guided", false);
      const bool from_seeds = p.is_object() && p.value("from_seeds", false);
      // A measured run of the value found that ended oom, before the search stepped down from it.
      const bool measured = p.is_object() && p.value("measured", false);
      std::string process = "-";
      if (p.is_object() && p.contains("process") && p["process"].is_object()) {
        process = fmt::format("pid {} cell {}", Count(Number(p["process"], "pid")),
                              Count(Number(p["process"], "cell_of_process")));
      }
      // A probe kept from an interrupted run of the same search (probe_journal.h): its process was
      // that run's.
      if (p.is_object() && p.value("resumed", false)) process += ", earlier run";
      table.AddRow({std::to_string(i + 1), Count(Number(p, key.c_str())),
                    measured     ? "measured"
                    : from_seeds ? "seeds"
                    : guided     ? "peaks"
                                 : "search",
                    process, TerminalSafe(Text(p, "outcome")),
                    ProbeWall(p) ? fmt::format("{:.2f} s", *ProbeWall(p)) : "-",
                    p.is_object() && p.contains("memory") ? ProbeMemory(p["memory"]) : "-",
                    TerminalSafe(Text(p, "message"))});
    }
    out += table.Render();
  }
  if (out.empty()) return "";
  return "\nBoundary search (batch_size, seq_len or image_size: max; each probe a fresh runner process "
         "unless "
         "boundary_probe_process: shared; chosen by doubling and bisection, or by the peaks' line under "
         "boundary_guide: peak_memory, or from the same cell's searches under other caps under "
         "boundary_seed: "
         "other_caps; the cell is the value found, measured, 5% lower while its measured "
         "run "
         "ends oom):\n" +
         out;
}

std::string RenderMemoryBreakdowns(const std::vector<record::CellRecord>& cells) {
  namespace metric = record::metric;
  // The dataset column (a converge cell's training and held-out sets on its device) is there only
  // when a cell has it, so the tables of runs without converge cells keep their shape.
  bool dataset = false;
  for (const record::CellRecord& c : cells)
    dataset = dataset || record::MetricValue(c, metric::kDatasetBytes).has_value();
  std::vector<Table::Column> columns = {
      {"cell", false}, {"weights", true}, {"gradients", true}, {"optimizer", true}, {"batch", true}};
  if (dataset) columns.push_back({"dataset", true});
  for (const char* title : {"expected", "peak", "rest", "reserved peak", "fragmentation"})
    columns.push_back({title, true});
  Table table(std::move(columns));
  bool any = false;
  for (const record::CellRecord& c : cells) {
    const auto expected = record::MetricValue(c, metric::kExpectedResidentBytes);
    const auto peak = record::MetricValue(c, metric::kMemoryPeakBytes);
    if (!expected && !peak) continue;
    any = true;
    auto bytes = [&](std::string_view name) {
      const auto v = record::MetricValue(c, name);
      return v ? FormatBytes(v) : std::string("-");
    };
    const bool cuda = record::MetricValue(c, metric::kAllocatorFragmentationBytes).has_value();
    std::vector<std::string> row = {
        fmt::format("#{} {}", c.index, TerminalSafe(c.label.empty() ? c.key : c.label)),
        bytes(metric::kWeightBytes), bytes(metric::kGradBytes), bytes(metric::kOptimizerStateBytes),
        bytes(metric::kInputBatchBytes)};
    if (dataset) row.push_back(bytes(metric::kDatasetBytes));
    row.insert(row.end(), {bytes(metric::kExpectedResidentBytes), bytes(metric::kMemoryPeakBytes),
                           bytes(metric::kActivationWorkspaceBytes),
                           cuda ? bytes(record::memory::kDeviceReservedPeakBytes) : std::string("-"),
                           bytes(metric::kAllocatorFragmentationBytes)});
    table.AddRow(std::move(row));
  }
  if (!any) return "";
  return "\nMemory (expected from the model's tensors and optimizer, with a converge cell's dataset; "
         "peak: the CUDA allocator's, or on the CPU the RSS above the runner's before the build; rest: "
         "activations and workspaces; docs/memory.md):\n" +
         table.Render();
}

}  // namespace dlbench::cli
