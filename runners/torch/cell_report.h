// What a torch-runner cell reports of itself, read from its CellState: READY's effective cell (what
// ran, beside what was asked) and EXTRAS' metrics and info (docs/protocol.md).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "cell_state.h"

namespace dlbench::torchrunner {

// READY's effective cell: the resolved device, precision, threads, switches, seed, optimizer and
// the rest that ran. Called after Build (and the capture, when there is one).
nlohmann::json Effective(const CellState& s, std::uint64_t seed);

// EXTRAS' {"metrics": [...], "info": {...}}: FLOPs, weight and model file bytes, the device's peak,
// the final loss and the loss scaler's figures, and the feeder's own. Called after the measured part.
nlohmann::json Extras(const CellState& s);

}  // namespace dlbench::torchrunner
