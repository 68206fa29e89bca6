// boundary_seed: other_caps (boundary_seeds.h): the seeds of a boundary search from the same
// cell's stored searches under other memory caps.
#include "orchestrator/boundary_seeds.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "orchestrator/boundary_cell.h"
#include "orchestrator/memory_cap.h"

namespace dlbench::orchestrator {
namespace {

// A seed's record gives the device's usable bytes only from a device of at least this share of the
// cell's cap (FindBoundarySeeds).
constexpr double kSeedDeviceShare = 0.97;

// A record's boundary search over `key` (extras.boundary_search with probes), or nullptr.
const nlohmann::json* SearchOf(const record::CellRecord& rec, const std::string& key) {
  const auto search = rec.extras.find("boundary_search");
  if (search == rec.extras.end() || !search->is_object() || search->value("key", "") != key ||
      !search->contains("probes") || !(*search)["probes"].is_array())
    return nullptr;
  return &*search;
}

// A stored search's probes that fit with a guide peak, as the guide's points; stored data, so only
// what the search's own checks would accept.
std::vector<stats::GuidePoint> FitsOf(const nlohmann::json& search, const std::string& key) {
  std::vector<stats::GuidePoint> points;
  for (const nlohmann::json& probe : search["probes"]) {
    if (!probe.is_object() || probe.value("fits", nlohmann::json()) != true) continue;
    const auto value = probe.find(key);
    const auto peak = probe.find("guide_peak_bytes");
    if (value == probe.end() || !value->is_number_integer() || peak == probe.end() || !peak->is_number())
      continue;
    const std::int64_t v = value->get<std::int64_t>();
    const double bytes = peak->get<double>();
    if (v < 1 || v > (std::int64_t{1} << 52) || !std::isfinite(bytes) || bytes < 0) continue;
    points.push_back({v, bytes});
  }
  return points;
}

}  // namespace

std::vector<std::string> OtherCapKeys(const plan::Cell& cell, const std::vector<plan::Cell>& plan_cells) {
  constexpr const char* kCap = "memory_cap";
  std::vector<std::string> keys;
  const auto own = cell.params.find(kCap);
  if (own == cell.params.end()) return keys;
  for (const plan::Cell& other : plan_cells) {
    const auto cap = other.params.find(kCap);
    if (cap == other.params.end() || cap->second == own->second || other.params.size() != cell.params.size())
      continue;
    const bool same = std::all_of(other.params.begin(), other.params.end(), [&](const auto& entry) {
      if (entry.first == kCap) return true;
      const auto mine = cell.params.find(entry.first);
      return mine != cell.params.end() && mine->second == entry.second;
    });
    if (same && std::find(keys.begin(), keys.end(), other.key) == keys.end()) keys.push_back(other.key);
  }
  return keys;
}

BoundarySeeds FindBoundarySeeds(const plan::Cell& cell, const std::vector<plan::Cell>& plan_cells,
                                store::ResultStore& store, std::string* note) {
  BoundarySeeds seeds;
  const std::string key = BoundarySearchKey(cell);
  const std::optional<std::int64_t> own_cap = CellMemoryCap(cell);
  for (const std::string& other : OtherCapKeys(cell, plan_cells)) {
    auto history = store.CellHistory(other);
    if (!history.ok()) {
      if (note != nullptr) *note += (note->empty() ? "" : "; ") + history.error().message;
      continue;
    }
    // The newest search over the same key with a fit that has a peak: by its run's start, not its
    // id (`dlbench db copy` gives a copied run the next id of the store it enters). A search with
    // none (it ended none_fits, or probe_failed at its first probe) says nothing and does not hide
    // an older one. One fit is a point: a seeded search that converged in two probes has one, at
    // its boundary, and the other caps' points make the line with it.
    const std::pair<record::RunRecord, record::CellRecord>* newest = nullptr;
    std::vector<stats::GuidePoint> newest_points;
    for (const auto& entry : *history) {
      const nlohmann::json* search = SearchOf(entry.second, key);
      if (search == nullptr) continue;
      std::vector<stats::GuidePoint> points = FitsOf(*search, key);
      if (points.empty()) continue;
      if (newest == nullptr || std::tie(entry.first.started_wall_ns, entry.first.id) >=
                                   std::tie(newest->first.started_wall_ns, newest->first.id)) {
        newest = &entry;
        newest_points = std::move(points);
      }
    }
    if (newest == nullptr) continue;
    const record::CellRecord& rec = newest->second;
    seeds.points.insert(seeds.points.end(), newest_points.begin(), newest_points.end());
    // The device's usable bytes, from a search on a device at least about as large as this cap
    // (nvidia-smi's memory, which a whole-device cap is written from, is a little above
    // cudaMemGetInfo's total): a store may hold searches from smaller devices.
    const std::optional<AppliedCap> applied = AppliedCapOf(rec);
    if (applied && own_cap && applied->total >= kSeedDeviceShare * static_cast<double>(*own_cap) &&
        !seeds.device_usable_bytes)
      seeds.device_usable_bytes = applied->DeviceUsable();
    const auto cap = rec.params.find("memory_cap");
    seeds.sources.push_back({{"memory_cap", cap != rec.params.end() ? *cap : nlohmann::json(nullptr)},
                             {"run_id", newest->first.id},
                             {"points", newest_points.size()}});
  }
  return seeds;
}

}  // namespace dlbench::orchestrator
