// The input-bound verdict's controls (R7; docs/input-pipeline.md "The verdict"): every cell that
// takes its batches from the host (data other than `device`) is compared with the same cell
// reading a device-resident batch. The plan reuses such a cell when the matrix has one and adds
// it otherwise, and puts each control before the cells that need it, so the orchestrator can
// conclude when a cell ends.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "config/matrix.h"

namespace dlbench::plan {

// Whether the cell gets an input-bound verdict: `data` is set and not `device`, and the cell runs
// its model (pipeline_only: true measures the pipeline alone and has nothing to compare).
bool TakesInputVerdict(const config::Combination& params);

// The control of such a cell: the same parameters with data: device and without the keys that only
// shape a host pipeline (data_path, data_workers, prefetch, pin_memory, async_copy, cache,
// shuffle_buffer, skip_corrupt, pipeline_only).
config::Combination InputControlParams(const config::Combination& params);

// Its pipeline_only twin: the same parameters with pipeline_only: true, which runs the same
// pipeline (source, workers, prefetch, cache, batch and input size, device) without the model, so
// its samples_per_s is what that pipeline delivers alone.
config::Combination PipelineTwinParams(const config::Combination& params);

struct InputControls {
  // For each combination, the index of its control in the (grown) list, or -1.
  std::vector<long> control_of;
  // For each combination that takes a verdict, the index of its pipeline_only twin
  // (PipelineTwinParams, matched exactly) when the matrix has one, else -1. A twin is never
  // added: it is asked for with a `pipeline_only: [false, true]` axis (or an include entry).
  std::vector<long> pipeline_twin_of;
  // How many combinations were appended as controls (the last `added` of the list).
  std::size_t added = 0;
};

// For every combination that takes a verdict, finds its control among `combinations` (the one
// with exactly InputControlParams' parameters first; else the first data: device cell whose other
// parameters, pipeline keys aside, are equal) or appends InputControlParams(c) to `combinations`
// and its CellKey to `keys` (parallel to it), and finds its pipeline_only twin among the given
// combinations. Combinations are distinct on entry and stay so.
InputControls FindOrAddInputControls(std::vector<config::Combination>& combinations,
                                     std::vector<std::string>& keys);

// `order` is the run order as (combination, repetition) pairs. Returns it with each control's
// occurrence of the same repetition moved just before the first cell that needs it, when it came
// later; everything else keeps its relative order. O(n log n) in the size of `order`.
std::vector<std::pair<std::size_t, int>> ControlsFirst(const std::vector<std::pair<std::size_t, int>>& order,
                                                       const std::vector<long>& control_of);

// The same for cells that need several others (an input control, a ddp cell's world_size 1 cell
// and twins: plan/ddp_references.h): `needs[c]` lists the combinations c is compared with (indices,
// -1 entries ignored). Each needed occurrence is placed, its own needs first, just before the
// first cell that needs it. The needs must not form a cycle.
std::vector<std::pair<std::size_t, int>> ControlsFirst(const std::vector<std::pair<std::size_t, int>>& order,
                                                       const std::vector<std::vector<long>>& needs);

}  // namespace dlbench::plan
