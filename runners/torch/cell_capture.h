// CUDA-graph capture of a step-loop cell (`cuda_graph: true`; docs/torch-runner.md "CUDA graphs"):
// the infer forward or the whole training step, captured once after Build into CellState::graph,
// and what READY's effective cell says of it. A load cell's graphs are its executor's
// (load_scenario.h), not these.
#pragma once

#include <nlohmann/json.hpp>

#include "cell_state.h"

namespace dlbench::torchrunner {

// cuda_graph: the fixed batch's forward, as InferStep runs it, captured once (cuda_graph.h).
void CaptureInferForward(CellState& s);

// cuda_graph on a train cell: the whole step (gradients set to none, forward and loss under
// autocast, backward, the optimizer's step) captured once, as torch.cuda.graph captures a whole
// network from Python. The warm-up runs are training steps (the optimizer's state is made there);
// the capture's backward allocates the gradients from the graph's pool, and every replay writes
// them, the weights and the optimizer's state in place. The optimizer must make the same launches
// every step: SGD (no step count), or AdamW with its step count on the device (ForeachAdamW's
// capturable form, which Build picks for such cells); LibTorch's per-parameter AdamW is refused.
void CaptureTrainStep(CellState& s);

// The effective cell's cuda_graph: false, or what is replayed and how long the capture took.
nlohmann::json CudaGraphEffective(const CellState& s);

}  // namespace dlbench::torchrunner
