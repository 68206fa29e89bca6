#include "record/records.h"

#include <algorithm>

#include "record/metrics.h"

namespace dlbench::record {

nlohmann::json RunSelectionToJson(const RunSelection& selection) {
  nlohmann::json out = nlohmann::json::object();
  if (!selection.only.empty()) out["only"] = selection.only;
  if (!selection.shard.empty()) out["shard"] = selection.shard;
  if (!selection.set.empty()) out["set"] = selection.set;
  return out;
}

Result<RunSelection> RunSelectionFromJson(const nlohmann::json& json) {
  auto bad = [&](const std::string& why) {
    return MakeError(ErrorKind::kStore,
                     "run selection " + json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                         " is not {\"only\": [text, ...], \"shard\": \"K/N\", \"set\": [text, ...]}: " + why);
  };
  if (!json.is_object()) return bad("not an object");
  RunSelection selection;
  for (const auto& [key, value] : json.items()) {
    if (key == "only") {
      if (!value.is_array()) return bad("only is not an array");
      for (const auto& filter : value) {
        if (!filter.is_string()) return bad("an only filter is not text");
        selection.only.push_back(filter.get<std::string>());
      }
    } else if (key == "shard") {
      if (!value.is_string()) return bad("shard is not text");
      selection.shard = value.get<std::string>();
    } else if (key == "set") {
      if (!value.is_array()) return bad("set is not an array");
      for (const auto& assignment : value) {
        if (!assignment.is_string()) return bad("a set assignment is not text");
        selection.set.push_back(assignment.get<std::string>());
      }
    } else {
      return bad("unknown key '" + key + "'");
    }
  }
  return selection;
}

std::vector<StepRecord> RankZeroSteps(const CellRecord& cell) {
  std::vector<StepRecord> out;
  out.reserve(cell.steps.size());
  for (const auto& row : cell.steps) {
    if (row.rank == 0) out.push_back(row.record);
  }
  // Rank 0 sends its records in step order and the store keeps them so; sorting by start makes
  // the window (an index into the step sequence) mean the same whatever order rows came back in.
  std::stable_sort(out.begin(), out.end(),
                   [](const StepRecord& a, const StepRecord& b) { return a.start_ns < b.start_ns; });
  return out;
}

std::int64_t StepsEndedBy(const std::vector<StepRecord>& rank_zero_steps, std::int64_t t_ns) {
  // Steps of one rank run one after the other, so their ends ascend with their starts.
  const auto it = std::upper_bound(rank_zero_steps.begin(), rank_zero_steps.end(), t_ns,
                                   [](std::int64_t t, const StepRecord& r) { return t < r.end_ns; });
  return static_cast<std::int64_t>(it - rank_zero_steps.begin());
}

std::vector<StepRecord> MeasuredSteps(const CellRecord& cell) {
  if (!cell.window || cell.window->steps <= 0) return {};
  std::vector<StepRecord> rank0 = RankZeroSteps(cell);
  const auto size = static_cast<std::int64_t>(rank0.size());
  const std::int64_t first = std::clamp<std::int64_t>(cell.window->first_step, 0, size);
  const std::int64_t last = std::clamp<std::int64_t>(first + cell.window->steps, first, size);
  return {rank0.begin() + first, rank0.begin() + last};
}

void SetMetric(CellRecord& cell, std::string_view name, double value) {
  const std::string_view unit = MetricUnit(name);
  for (auto& m : cell.metrics) {
    if (m.name == name) {
      m.value = value;
      m.unit = std::string(unit);
      return;
    }
  }
  cell.metrics.push_back({std::string(name), value, std::string(unit)});
}

const MetricRecord* FindMetric(const CellRecord& cell, std::string_view name) {
  for (const auto& m : cell.metrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::optional<double> MetricValue(const CellRecord& cell, std::string_view name) {
  const MetricRecord* m = FindMetric(cell, name);
  return m != nullptr ? std::optional<double>(m->value) : std::nullopt;
}

}  // namespace dlbench::record
