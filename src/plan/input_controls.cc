#include "plan/input_controls.h"

#include <array>
#include <map>
#include <set>
#include <string_view>

#include "plan/plan.h"

namespace dlbench::plan {
namespace {

using config::Combination;
using config::Value;

// The keys that only shape a host pipeline (config/registry_entries_torch.cc, "The input pipeline").
constexpr std::array<std::string_view, 9> kPipelineKeys = {"data_path",      "data_workers", "prefetch",
                                                           "pin_memory",     "async_copy",   "cache",
                                                           "shuffle_buffer", "skip_corrupt", "pipeline_only"};

bool IsDeviceData(const Combination& params) {
  auto it = params.find("data");
  return it != params.end() && it->second.is_string() && it->second.get<std::string>() == "device";
}

// The parameters a cell and its control share: all but `data` and the pipeline keys.
std::string SharedKey(const Combination& params) {
  Combination shared = params;
  shared.erase("data");
  for (std::string_view k : kPipelineKeys) shared.erase(std::string(k));
  return CellKey(shared);
}

}  // namespace

bool TakesInputVerdict(const Combination& params) {
  auto data = params.find("data");
  if (data == params.end() || !data->second.is_string() || data->second.get<std::string>() == "device") {
    return false;
  }
  auto only = params.find("pipeline_only");
  return only == params.end() || !(only->second.is_boolean() && only->second.get<bool>());
}

Combination InputControlParams(const Combination& params) {
  Combination control = params;
  for (std::string_view k : kPipelineKeys) control.erase(std::string(k));
  control["data"] = Value("device");
  return control;
}

Combination PipelineTwinParams(const Combination& params) {
  Combination twin = params;
  twin["pipeline_only"] = Value(true);
  return twin;
}

InputControls FindOrAddInputControls(std::vector<Combination>& combinations, std::vector<std::string>& keys) {
  const std::size_t given = combinations.size();
  std::map<std::string, std::size_t> by_key;
  std::map<std::string, std::size_t> device_by_shared;
  for (std::size_t i = 0; i < given; ++i) {
    by_key.emplace(keys[i], i);
    if (IsDeviceData(combinations[i])) device_by_shared.emplace(SharedKey(combinations[i]), i);
  }
  InputControls out;
  out.control_of.assign(given, -1);
  out.pipeline_twin_of.assign(given, -1);
  for (std::size_t i = 0; i < given; ++i) {
    if (!TakesInputVerdict(combinations[i])) continue;
    if (auto twin = by_key.find(CellKey(PipelineTwinParams(combinations[i]))); twin != by_key.end()) {
      out.pipeline_twin_of[i] = static_cast<long>(twin->second);
    }
    Combination control = InputControlParams(combinations[i]);
    std::string key = CellKey(control);
    if (auto it = by_key.find(key); it != by_key.end()) {
      out.control_of[i] = static_cast<long>(it->second);
      continue;
    }
    if (auto it = device_by_shared.find(SharedKey(control)); it != device_by_shared.end()) {
      out.control_of[i] = static_cast<long>(it->second);
      continue;
    }
    const std::size_t index = combinations.size();
    by_key.emplace(key, index);
    device_by_shared.emplace(SharedKey(control), index);
    combinations.push_back(std::move(control));
    keys.push_back(std::move(key));
    out.control_of[i] = static_cast<long>(index);
    ++out.added;
  }
  out.control_of.resize(combinations.size(), -1);
  out.pipeline_twin_of.resize(combinations.size(), -1);
  return out;
}

std::vector<std::pair<std::size_t, int>> ControlsFirst(const std::vector<std::pair<std::size_t, int>>& order,
                                                       const std::vector<long>& control_of) {
  std::vector<std::vector<long>> needs(control_of.size());
  for (std::size_t c = 0; c < control_of.size(); ++c) {
    if (control_of[c] >= 0) needs[c].push_back(control_of[c]);
  }
  return ControlsFirst(order, needs);
}

std::vector<std::pair<std::size_t, int>> ControlsFirst(const std::vector<std::pair<std::size_t, int>>& order,
                                                       const std::vector<std::vector<long>>& needs) {
  std::set<std::pair<std::size_t, int>> placed;
  std::vector<std::pair<std::size_t, int>> out;
  out.reserve(order.size());
  // Depth-first: a needed cell's own needs go before it. The needs form no cycle, so the depth is
  // at most the number of combinations; in practice 2 (a ddp cell, its twin, the twin's twin).
  auto place = [&](const auto& self, const std::pair<std::size_t, int>& entry) -> void {
    if (placed.count(entry)) return;
    if (entry.first < needs.size()) {
      for (long n : needs[entry.first]) {
        if (n >= 0 && static_cast<std::size_t>(n) != entry.first)
          self(self, {static_cast<std::size_t>(n), entry.second});
      }
    }
    if (placed.insert(entry).second) out.push_back(entry);
  };
  for (const auto& entry : order) place(place, entry);
  return out;
}

}  // namespace dlbench::plan
