// Matrix -> the ordered list of cells to run.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "config/matrix.h"

namespace dlbench::plan {

struct Cell {
  int index = 0;                                // position in run order, 0-based
  std::map<std::string, config::Value> params;  // requested parameters, defaults filled from the registry
  int repetition = 0;                           // 0-based
  std::uint64_t seed = 0;                       // derived from matrix seed, key and repetition
  std::string key;                              // canonical text of params: the same cell across runs
  std::string id;                               // key + "#r" + repetition: unique within a run
  std::string label;                            // short human label: "resnet50 train bs=32 cpu fp32"
  // The input-bound verdict's control (plan/input_controls.h): the id of the cell with data:
  // device this cell is compared with (earlier in run order); empty when the cell takes none.
  std::string input_control_id;
  // Its pipeline_only twin (InputControls::pipeline_twin_of), earlier in run order, when the
  // matrix has one: the pipeline's own rate, set against what the model takes.
  std::string input_pipeline_id;
  bool added_as_control = false;  // the matrix does not name this cell: the plan added it as a control
  // A ddp cell's references (plan/ddp_references.h), each earlier in run order; empty when the
  // plan has no such cell: its world_size 1 cell (scaling efficiency), its ddp_mode compute_only
  // twin (exposed communication) and its serial twin (overlap).
  std::string ddp_scaling_control_id;
  std::string ddp_compute_only_id;
  std::string ddp_serial_id;
};

struct Plan {
  std::vector<Cell> cells;
  // "FILE:LINE:COL: warning: ..." lines about the matrix that do not stop it (a size key the
  // cell's model does not read, left out of those cells: config/model_rules.h).
  std::vector<std::string> warnings;
};

// The most cells one plan may hold (docs/limits.md). A run of more cells than this is beyond what
// one matrix should describe, and refusing it up front keeps `plan` and `run` fast and bounded in
// memory (a cell costs a few KiB while planned).
inline constexpr std::uint64_t kMaxCells = 100'000;

// The most cells `matrix` can expand to, computed without expanding it: (the product of the axis
// sizes + one per include entry) x repetitions, before exclude and before identical combinations
// merge. Saturates at UINT64_MAX.
std::uint64_t MaxCellCount(const config::Matrix& matrix);

// Cartesian product of the axes, minus exclude, plus include, plus the input-bound verdict's
// controls that the matrix lacks (plan/input_controls.h); repeated; ordered by policy, with each
// control, and each ddp cell's references (plan/ddp_references.h), before the cells compared with it.
// kInvalidInput when nothing is left to run, or, before anything is expanded, when MaxCellCount
// exceeds kMaxCells (the message gives the count and how it arises).
Result<Plan> Expand(const config::Matrix& matrix);

// Canonical key of a parameter set (sorted "name=value" joined by ',').
std::string CellKey(const std::map<std::string, config::Value>& params);

// The parameter combinations of a matrix before defaults: the cartesian product of the axes in
// file order (last axis fastest), minus exclude, then include with GitHub Actions semantics
// (docs/config-reference.md, "How a matrix becomes cells"). Expand builds on this; it materialises
// every combination, so a caller checks MaxCellCount first, as Expand does.
std::vector<config::Combination> ExpandCombinations(const config::Matrix& matrix);

// The seed of one repetition of a cell (docs/config-reference.md, "Seeds"):
//   SplitMix64(SplitMix64(matrix_seed ^ Fnv1a64(key)) ^ repetition) & (2^63 - 1).
// Stable across platforms and releases: stored results depend on it.
std::uint64_t DeriveCellSeed(std::uint64_t matrix_seed, const std::string& key, int repetition);

}  // namespace dlbench::plan
