// `dlbench export RUN --format tensorboard -o DIR` (docs/convergence.md): one run folder per cell
// under DIR, each holding one TensorBoard event file (tfrecord/events.h) of the cell's scalars
// against step and wall time:
//   step/time_ms, step/samples_per_s   every rank-0 step (at most kMaxStepPoints: above that every
//                                      k-th step, k the smallest that fits)
//   train/loss, train/lr, eval/accuracy, eval/loss   a converge cell's curves (record/series.h)
//   gpu<N>/sm_util_pct, gpu<N>/mem_util_pct, gpu<N>/power_w, gpu<N>/mem_used_bytes   the monitor's
//                                      samples of the cell's GPUs, where it recorded them
// A point's step is the number of rank-0 steps that ended at or before it (record::StepsEndedBy),
// so the curves and the step times share one axis. Its wall time is the cell's start
// (started_wall_ns) plus time_to_measure_s at the first measured step's start, and from there the
// step records' own clock.
#pragma once

#include <string>
#include <vector>

#include "common/error.h"
#include "record/records.h"
#include "tfrecord/events.h"

namespace dlbench::report {

inline constexpr std::size_t kMaxStepPoints = 100000;

// The folder of a cell under DIR: "cell-0003-" and its label with every character outside
// [A-Za-z0-9._=,-] as '_' (at most 100 of them).
std::string TensorBoardCellFolder(const record::CellRecord& cell);
// The cell's scalars in the order they are written (by tag group, then time). Needs the cell's
// steps and series loaded.
std::vector<tfrecord::ScalarEvent> TensorBoardScalars(const record::CellRecord& cell);

// Writes DIR/<cell folder>/events.out.tfevents.<started s>.dlbench-run<id> for every cell.
// DIR and the cell folders are created when absent; one that exists and is not a directory (a
// file, a symbolic link, a FIFO) is refused with kIo naming it, and nothing is written there. An
// event file of an earlier export of the same run is replaced (it is a regular file; anything
// else at that path is refused). Returns the event files written.
Result<std::vector<std::string>> WriteTensorBoard(const record::RunRecord& run,
                                                  const std::vector<record::CellRecord>& cells,
                                                  const std::string& dir);

}  // namespace dlbench::report
