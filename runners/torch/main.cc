// dlbench-torch: started by `dlbench run` with the protocol pipes on DLBENCH_PROTOCOL_FD_IN/_OUT.
// `dlbench-torch --models` prints the model zoo at standard sizes as JSON instead (what
// `dlbench models` shows): each model's parameters, forward FLOPs per sample and sizes.
#include <torch/torch.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/log.h"
#include "models/zoo.h"
#include "protocol/runner_session.h"
#include "torch_runner.h"

namespace {

int PrintModels() {
  nlohmann::json out = nlohmann::json::array();
  torch::NoGradGuard no_grad;
  for (const std::string& name : dlbench::torchrunner::KnownModels()) {
    torch::manual_seed(0);
    const auto model = dlbench::torchrunner::MakeModel(name, {});
    std::int64_t parameters = 0;
    for (const auto& p : model->parameters()) parameters += p.numel();
    out.push_back({{"model", name},
                   {"parameters", parameters},
                   {"forward_flops_per_sample", model->ForwardFlopsPerSample()},
                   {"train_flops_per_sample", 3 * model->ForwardFlopsPerSample()},
                   {"sizes", model->EffectiveOptions()}});
  }
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--models") == 0) return PrintModels();
  if (argc > 1) {
    std::fprintf(stderr, "usage: dlbench-torch [--models]   (a cell runs through `dlbench run`)\n");
    return 2;
  }
  auto session = dlbench::protocol::RunnerSession::Connect();
  if (!session.ok()) {
    std::fprintf(stderr, "dlbench-torch: %s\n", session.error().message.c_str());
    return 2;
  }
  return dlbench::torchrunner::RunTorchCell(**session);
}
