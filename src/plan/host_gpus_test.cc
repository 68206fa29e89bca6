// plan/host_gpus.h: a ddp cuda cell's world_size above the host's GPUs is a warning at its line.
#include "plan/host_gpus.h"

#include <gtest/gtest.h>

namespace dlbench::plan {
namespace {

struct Planned {
  config::Matrix matrix;
  Plan plan;
};

Planned PlanText(const std::string& yaml) {
  Result<config::Matrix> m = config::ParseMatrix(yaml, "m.yaml");
  EXPECT_TRUE(m.ok()) << m.error().message;
  if (!m.ok()) return {};
  Result<Plan> plan = Expand(*m);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  return {*m, plan.ok() ? *plan : Plan{}};
}

constexpr char kDdp[] =
    "runner: torch\n"
    "matrix:\n"
    "  model: resnet50\n"
    "  device: [cuda, cpu]\n"
    "  strategy: ddp\n"
    "  world_size: [1, 2, 4]\n";

TEST(HostGpusTest, WarnsAtTheWorldSizeLineForEachValueAboveTheHostsGpus) {
  const Planned p = PlanText(kDdp);
  ASSERT_EQ(p.plan.cells.size(), 6u);
  EXPECT_EQ(GpusNeeded(p.plan.cells), 4) << "cpu cells need no GPU";
  const std::vector<std::string> w = GpuShortfallWarnings(p.matrix, p.plan.cells, 1, "NVML: 1 GPU");
  ASSERT_EQ(w.size(), 2u) << "world_size 2 and 4 on cuda; never the cpu cells";
  EXPECT_EQ(
      w[0],
      "m.yaml:6:3: warning: world_size 2 of strategy ddp on cuda needs 2 GPUs on this host, and it has 1 "
      "(NVML: 1 GPU): its cells will end unsupported (ranks would share a GPU)");
  EXPECT_NE(w[1].find("world_size 4 of strategy ddp on cuda needs 4 GPUs"), std::string::npos) << w[1];
  EXPECT_TRUE(GpuShortfallWarnings(p.matrix, p.plan.cells, 4, "NVML: 4 GPUs").empty());
  EXPECT_EQ(GpuShortfallWarnings(p.matrix, p.plan.cells, 0, "NVML: 0 GPUs").size(), 2u)
      << "world_size 1 is an ordinary cell: its one GPU is the runner's to check, as for any cuda cell";
}

TEST(HostGpusTest, CellsWithoutDdpOnCudaNeedNoGpuPerRank) {
  const Planned p = PlanText("runner: null\nmatrix:\n  model: [a, b]\n  step_ms: 1\n");
  EXPECT_EQ(GpusNeeded(p.plan.cells), 0);
  EXPECT_TRUE(GpuShortfallWarnings(p.matrix, p.plan.cells, 0, "none").empty());
}

}  // namespace
}  // namespace dlbench::plan
