// A ddp cell on CUDA runs one rank per GPU of this host (docs/distributed.md): a world_size above
// the host's GPUs would end `unsupported` when the cell runs ("ranks would share a GPU"). `plan`
// and `run` say so at plan time, at the world_size line, as a warning: the plan may be made on
// another machine than the one that runs it, and the other cells still run.
#pragma once

#include <string>
#include <vector>

#include "config/matrix.h"
#include "plan/plan.h"

namespace dlbench::plan {

// The most GPUs any cell of `cells` needs on one host: the world_size of its strategy ddp cells of
// 2 or more ranks on a cuda device (0 when none needs a GPU per rank).
int GpusNeeded(const std::vector<Cell>& cells);

// "m.yaml:5:3: warning: world_size 4 of strategy ddp on cuda needs 4 GPUs on this host, and it
// has 1 (NVML: 1 GPU): its cells will end unsupported (ranks would share a GPU)", once per
// world_size value and place, for each ddp cuda cell whose world_size is above `gpus` (with a
// runner other than torch, which may not refuse them: "...: its ranks would share a GPU").
// `gpus_from` says where the count came from.
std::vector<std::string> GpuShortfallWarnings(const config::Matrix& matrix, const std::vector<Cell>& cells,
                                              int gpus, const std::string& gpus_from);

}  // namespace dlbench::plan
