// boundary_seed: other_caps (docs/memory.md "Seeds from other caps"): a boundary search's seeds,
// the fits of the same cell's stored searches under other memory caps.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "stats/boundary_search.h"
#include "store/result_store.h"

namespace dlbench::orchestrator {

// The guide's points from the stored searches of the same cell under other memory caps, and which
// searches they came from.
struct BoundarySeeds {
  std::vector<stats::GuidePoint> points;
  nlohmann::json sources = nlohmann::json::array();  // per search used: memory_cap, run_id, points
  // The device less its CUDA context, from a seed's record on a device about as large as the cap
  // (memory_cap_applied): the seeds' first guess aims at it where it is below the cap
  // (BoundarySearchSettings::seed_limit_bytes; the later guesses aim at what the probes say).
  std::optional<double> device_usable_bytes;
};

// The keys of the cells of `plan_cells` (the whole plan, before --only) that equal `cell` in every
// parameter but memory_cap, each with a memory_cap other than the cell's.
std::vector<std::string> OtherCapKeys(const plan::Cell& cell, const std::vector<plan::Cell>& plan_cells);

// The seeds of a boundary search that asks for them (BoundarySettings(cell).seeded): for each of
// OtherCapKeys, the newest record in `store` (CellHistory; any run, this one included; newest by its
// run's start) that holds a search over the same key with a probe that fit with a guide peak, and
// every such probe. A key whose history cannot be read gives no seeds; `note` gets why
// (several reasons joined by "; ").
BoundarySeeds FindBoundarySeeds(const plan::Cell& cell, const std::vector<plan::Cell>& plan_cells,
                                store::ResultStore& store, std::string* note = nullptr);

}  // namespace dlbench::orchestrator
