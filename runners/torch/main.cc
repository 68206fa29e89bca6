// dlbench-torch: started by `dlbench run` with the protocol pipes on DLBENCH_PROTOCOL_FD_IN/_OUT.
#include <cstdio>

#include "common/log.h"
#include "protocol/runner_session.h"
#include "torch_runner.h"

int main() {
  auto session = dlbench::protocol::RunnerSession::Connect();
  if (!session.ok()) {
    std::fprintf(stderr, "dlbench-torch: %s\n", session.error().message.c_str());
    return 2;
  }
  return dlbench::torchrunner::RunTorchCell(**session);
}
