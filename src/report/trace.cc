#include "report/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>

#include "common/text.h"
#include "common/version.h"
#include "record/metrics.h"
#include "report/export.h"

namespace dlbench::report {
namespace {

double ToUs(std::int64_t ns) { return static_cast<double>(ns) / 1000.0; }

// A step number: digits only, within int64_t.
bool ParseIndex(const std::string& text, std::int64_t& out) {
  const std::optional<std::uint64_t> value = ParseUint(text);
  if (!value || *value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
  out = static_cast<std::int64_t>(*value);
  return true;
}

}  // namespace

Result<StepRange> ParseStepRange(const std::string& text) {
  const auto bad = [&text](const std::string& why) {
    return MakeError(ErrorKind::kInvalidInput,
                     fmt::format("--steps '{}': {}; expected A:B (steps A to B-1), A: or :B", text, why));
  };
  const auto colon = text.find(':');
  if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos)
    return bad("no single ':'");
  const std::string a = text.substr(0, colon);
  const std::string b = text.substr(colon + 1);
  if (a.empty() && b.empty()) return bad("both ends empty");
  StepRange range;
  if (!a.empty() && !ParseIndex(a, range.begin)) return bad("A is not a step number");
  if (!b.empty()) {
    std::int64_t end = 0;
    if (!ParseIndex(b, end)) return bad("B is not a step number");
    if (end <= range.begin) return bad("B must be greater than A");
    range.end = end;
  }
  return range;
}

nlohmann::json BuildTrace(const record::RunRecord& run, const std::vector<record::CellRecord>& cells,
                          const TraceOptions& options) {
  nlohmann::json events = nlohmann::json::array();
  for (const record::CellRecord& cell : cells) {
    const int pid = cell.index + 1;
    const std::int64_t origin = CellOriginNs(cell);
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"name", fmt::format("cell {}: {}", cell.index, cell.label)}}}});
    events.push_back({{"ph", "M"},
                      {"name", "process_sort_index"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"sort_index", cell.index}}}});

    std::map<std::uint32_t, std::vector<record::StepRecord>> by_rank;
    for (const record::StepRow& row : cell.steps) by_rank[row.rank].push_back(row.record);

    std::optional<std::int64_t> window_begin;
    std::optional<std::int64_t> window_end;
    const std::int64_t warmup = cell.warmup_steps().value_or(0);
    const auto step_phases = cell.effective.find("step_phases");
    const bool remainder_is_copy = step_phases != cell.effective.end() && step_phases->is_object() &&
                                   step_phases->value("remainder", std::string()) == "copy";
    for (auto& [rank, steps] : by_rank) {
      std::sort(steps.begin(), steps.end(),
                [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", pid},
                        {"tid", rank},
                        {"args", {{"name", fmt::format("rank {}", rank)}}}});
      std::int64_t begin = 0;
      std::int64_t end = static_cast<std::int64_t>(steps.size());
      if (options.steps) {
        begin = std::min(options.steps->begin, end);
        if (options.steps->end) end = std::min(*options.steps->end, end);
      }
      for (std::int64_t i = begin; i < end; ++i) {
        const record::StepRecord& s = steps[static_cast<std::size_t>(i)];
        const std::int64_t dur_ns = std::max<std::int64_t>(0, s.end_ns - s.start_ns);
        window_begin = std::min(window_begin.value_or(s.start_ns), s.start_ns);
        window_end = std::max(window_end.value_or(s.end_ns), s.end_ns);
        const bool is_warmup = i < warmup;
        events.push_back({{"ph", "X"},
                          {"name", fmt::format("step {}", i)},
                          {"cat", is_warmup ? "warmup" : "step"},
                          {"pid", pid},
                          {"tid", rank},
                          {"ts", ToUs(s.start_ns - origin)},
                          {"dur", ToUs(dur_ns)},
                          {"args", {{"step", i}, {"samples", s.samples}, {"warmup", is_warmup}}}});
        // Phases are laid end to end from the step's start and clipped to the step, so a runner
        // whose phases overlap (asynchronous communication) still draws inside its step. A runner
        // that declares the rest of its step to be the host-to-device copy (the torch runner's
        // step_phases.remainder, runners/torch/data/feeder.h) gets it drawn between the wait and
        // the compute, where it happens.
        std::int64_t cursor = s.start_ns;
        const std::uint32_t wait_and_compute = record::kHasDataWait | record::kHasCompute;
        std::int64_t copy_ns = 0;
        if (remainder_is_copy && (s.present & wait_and_compute) == wait_and_compute) {
          copy_ns = s.end_ns - s.start_ns - s.data_wait_ns - s.compute_ns -
                    ((s.present & record::kHasComm) != 0 ? s.comm_ns : 0);
        }
        constexpr std::uint32_t kCopyPhase = 1u << 31;  // not a StepFieldBits bit: present when copy_ns > 0
        const std::pair<std::uint32_t, std::pair<const char*, std::int64_t>> phases[] = {
            {record::kHasDataWait, {"data_wait", s.data_wait_ns}},
            {kCopyPhase, {"copy", copy_ns}},
            {record::kHasCompute, {"compute", s.compute_ns}},
            {record::kHasComm, {"comm", s.comm_ns}},
        };
        const std::uint32_t present = s.present | (copy_ns > 0 ? kCopyPhase : 0u);
        for (const auto& [bit, phase] : phases) {
          if ((present & bit) == 0) continue;
          const std::int64_t phase_dur = std::clamp<std::int64_t>(phase.second, 0, s.end_ns - cursor);
          if (phase_dur <= 0) continue;
          events.push_back({{"ph", "X"},
                            {"name", phase.first},
                            {"cat", "phase"},
                            {"pid", pid},
                            {"tid", rank},
                            {"ts", ToUs(cursor - origin)},
                            {"dur", ToUs(phase_dur)}});
          cursor += phase_dur;
        }
      }
      if (rank == 0 && warmup > 0 && warmup >= begin && warmup < end) {
        events.push_back({{"ph", "i"},
                          {"s", "p"},
                          {"name", "warm-up ends"},
                          {"pid", pid},
                          {"tid", rank},
                          {"ts", ToUs(steps[static_cast<std::size_t>(warmup)].start_ns - origin)},
                          {"args", {{record::metric::kWarmupSteps, warmup}, {"rule", cell.warmup_rule}}}});
      }
    }

    // Counters over the window of the chosen steps (all of them when no steps are stored).
    for (const record::SeriesPoint& p : cell.series) {
      if (!cell.steps.empty() && (!window_begin || p.t_ns < *window_begin || p.t_ns > *window_end)) continue;
      events.push_back({{"ph", "C"},
                        {"name", p.series},
                        {"pid", pid},
                        {"tid", 0},
                        {"ts", ToUs(p.t_ns - origin)},
                        {"args", {{"value", p.value}}}});
    }
  }
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData", {{"run_id", run.id}, {"run_name", run.name}, {"tool_version", kVersion}}}};
}

}  // namespace dlbench::report
