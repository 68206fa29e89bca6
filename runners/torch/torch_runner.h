// dlbench-torch: the runner that executes real models through LibTorch (docs/torch-runner.md).
#pragma once

#include "protocol/runner_session.h"

namespace dlbench::torchrunner {

// One cell, start to end, over a connected session: HELLO, CONFIGURE, checks, build, READY, the
// measured loop (train or infer), MEMORY, EXTRAS, DONE. A cell that cannot run ends with one
// ERROR (invalid, unsupported, oom or internal) and no DONE. Returns the process exit code:
// 0 whenever the outcome was reported (an ERROR included), non-zero only when the protocol
// itself failed.
int RunTorchCell(protocol::RunnerSession& session);

}  // namespace dlbench::torchrunner
