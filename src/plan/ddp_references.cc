#include "plan/ddp_references.h"

#include <algorithm>
#include <cstdint>
#include <map>

#include "plan/plan.h"

namespace dlbench::plan {
namespace {

using config::Combination;
using config::Value;

std::string Text(const Combination& params, const char* key) {
  auto it = params.find(key);
  return it != params.end() && it->second.is_string() ? it->second.get<std::string>() : std::string();
}

std::int64_t WorldSize(const Combination& params) {
  auto it = params.find("world_size");
  return it != params.end() && it->second.is_number_integer() ? it->second.get<std::int64_t>() : 1;
}

}  // namespace

bool IsDdpCell(const Combination& params) { return Text(params, "strategy") == "ddp"; }

std::string DdpMode(const Combination& params) {
  const std::string mode = Text(params, "ddp_mode");
  return mode.empty() ? "overlap" : mode;
}

Combination ScalingControlParams(const Combination& params) {
  Combination control = params;
  control["world_size"] = Value(1);
  return control;
}

Combination DdpTwinParams(const Combination& params, const std::string& mode) {
  Combination twin = params;
  twin["ddp_mode"] = Value(mode);
  return twin;
}

DdpReferences FindDdpReferences(const std::vector<Combination>& combinations,
                                const std::vector<std::string>& keys) {
  DdpReferences out;
  out.scaling_control_of.assign(combinations.size(), -1);
  out.compute_only_of.assign(combinations.size(), -1);
  out.serial_of.assign(combinations.size(), -1);
  if (std::none_of(combinations.begin(), combinations.end(), IsDdpCell)) return out;
  std::map<std::string, long> by_key;
  for (std::size_t i = 0; i < keys.size(); ++i) by_key.emplace(keys[i], static_cast<long>(i));
  auto find = [&](const Combination& params) {
    auto it = by_key.find(CellKey(params));
    return it == by_key.end() ? -1L : it->second;
  };
  for (std::size_t i = 0; i < combinations.size(); ++i) {
    const Combination& c = combinations[i];
    // model: allreduce measures the collective alone: no step to scale, no backward to overlap.
    if (!IsDdpCell(c) || Text(c, "model") == "allreduce") continue;
    if (WorldSize(c) > 1) out.scaling_control_of[i] = find(ScalingControlParams(c));
    const std::string mode = DdpMode(c);
    if (mode == "overlap" || mode == "serial")
      out.compute_only_of[i] = find(DdpTwinParams(c, "compute_only"));
    if (mode == "overlap") out.serial_of[i] = find(DdpTwinParams(c, "serial"));
  }
  return out;
}

}  // namespace dlbench::plan
