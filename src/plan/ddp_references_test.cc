// A ddp cell's references in the plan (plan/ddp_references.h): its world_size 1 cell and its
// compute-only and serial twins are found among the matrix's cells, never added, and run before
// it; --only keeps the world_size 1 cell with it.
#include "plan/ddp_references.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "plan/input_controls.h"
#include "plan/plan.h"
#include "plan/selection.h"

namespace dlbench::plan {
namespace {

using config::Combination;
using config::Value;

Plan ExpandText(const std::string& yaml) {
  Result<config::Matrix> m = config::ParseMatrix(yaml, "m.yaml");
  EXPECT_TRUE(m.ok()) << m.error().message;
  if (!m.ok()) return {};
  Result<Plan> plan = Expand(*m);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  return plan.ok() ? *plan : Plan{};
}

std::string Param(const Cell& c, const char* key) {
  auto it = c.params.find(key);
  if (it == c.params.end()) return "";
  return it->second.is_string() ? it->second.get<std::string>() : it->second.dump();
}

const Cell* Find(const Plan& plan, const std::string& world, const std::string& mode) {
  for (const Cell& c : plan.cells) {
    if (Param(c, "world_size") == world && Param(c, "ddp_mode") == mode) return &c;
  }
  return nullptr;
}

int Position(const Plan& plan, const std::string& id) {
  for (const Cell& c : plan.cells) {
    if (c.id == id) return c.index;
  }
  return -1;
}

TEST(DdpReferencesTest, ParamsChangeOnlyTheirKey) {
  const Combination cell = {{"model", Value("mlp")},
                            {"strategy", Value("ddp")},
                            {"world_size", Value(4)},
                            {"batch_size", Value(8)}};
  EXPECT_TRUE(IsDdpCell(cell));
  EXPECT_FALSE(IsDdpCell({{"strategy", Value("none")}}));
  EXPECT_EQ(DdpMode(cell), "overlap") << "the torch runner's default";
  Combination control = cell;
  control["world_size"] = Value(1);
  EXPECT_EQ(ScalingControlParams(cell), control);
  Combination twin = cell;
  twin["ddp_mode"] = Value("compute_only");
  EXPECT_EQ(DdpTwinParams(cell, "compute_only"), twin);
  EXPECT_EQ(DdpMode(twin), "compute_only");
}

TEST(DdpReferencesTest, FindsEachCellsReferencesAndRunsThemFirst) {
  // world_size 2 first and overlap first in the file: grouped order would run every cell before
  // its references.
  const Plan plan = ExpandText(
      "runner: torch\nordering: grouped\nmatrix:\n  model: resnet50\n  strategy: ddp\n  world_size: [2, 1]\n"
      "  ddp_mode: [overlap, serial, compute_only]\n");
  ASSERT_EQ(plan.cells.size(), 6u) << "nothing added";
  for (const Cell& c : plan.cells) EXPECT_FALSE(c.added_as_control);
  for (const std::string world : {"1", "2"}) {
    const Cell* overlap = Find(plan, world, "overlap");
    const Cell* serial = Find(plan, world, "serial");
    const Cell* compute = Find(plan, world, "compute_only");
    ASSERT_TRUE(overlap && serial && compute);
    EXPECT_EQ(overlap->ddp_compute_only_id, compute->id);
    EXPECT_EQ(overlap->ddp_serial_id, serial->id);
    EXPECT_EQ(serial->ddp_compute_only_id, compute->id);
    EXPECT_EQ(serial->ddp_serial_id, "") << "a serial cell is its own baseline";
    EXPECT_EQ(compute->ddp_compute_only_id, "");
    EXPECT_LT(compute->index, serial->index);
    EXPECT_LT(serial->index, overlap->index);
    if (world == "1") {
      EXPECT_EQ(overlap->ddp_scaling_control_id, "") << "world_size 1 is the control";
    } else {
      for (const std::string mode : {"overlap", "serial", "compute_only"}) {
        const Cell* c = Find(plan, "2", mode);
        const Cell* control = Find(plan, "1", mode);
        EXPECT_EQ(c->ddp_scaling_control_id, control->id) << mode;
        EXPECT_LT(control->index, c->index) << mode;
      }
    }
  }
}

TEST(DdpReferencesTest, AddsNothingWhenTheMatrixLacksThem) {
  const Plan plan = ExpandText(
      "runner: torch\nmatrix:\n  model: resnet50\n  strategy: ddp\n  world_size: [2, 4]\n  batch_size: [4, "
      "8]\n");
  ASSERT_EQ(plan.cells.size(), 4u);
  for (const Cell& c : plan.cells) {
    EXPECT_EQ(c.ddp_scaling_control_id, "");
    EXPECT_EQ(c.ddp_compute_only_id, "");
    EXPECT_EQ(c.ddp_serial_id, "");
  }
}

TEST(DdpReferencesTest, ControlsMatchEveryOtherParameterAndRepetition) {
  const Plan plan = ExpandText(
      "runner: torch\nrepetitions: 2\nordering: interleaved\norder_seed: 5\nmatrix:\n  model: resnet50\n"
      "  strategy: ddp\n  world_size: [1, 2]\n  batch_size: [4, 8]\n");
  ASSERT_EQ(plan.cells.size(), 8u);
  for (const Cell& c : plan.cells) {
    if (Param(c, "world_size") == "1") continue;
    ASSERT_FALSE(c.ddp_scaling_control_id.empty()) << c.id;
    const int at = Position(plan, c.ddp_scaling_control_id);
    ASSERT_GE(at, 0) << c.ddp_scaling_control_id;
    const Cell& control = plan.cells[static_cast<std::size_t>(at)];
    EXPECT_EQ(Param(control, "batch_size"), Param(c, "batch_size"));
    EXPECT_EQ(control.repetition, c.repetition);
    EXPECT_LT(control.index, c.index) << "run first, in its own repetition";
  }
}

TEST(DdpReferencesTest, OnlyKeepsTheWorldSizeOneCellButNotTheTwins) {
  const Plan plan = ExpandText(
      "runner: torch\nmatrix:\n  model: resnet50\n  strategy: ddp\n  world_size: [1, 2]\n"
      "  ddp_mode: [overlap, compute_only]\n");
  ASSERT_EQ(plan.cells.size(), 4u);
  const Cell* target = Find(plan, "2", "overlap");
  ASSERT_TRUE(target);
  const std::vector<Cell> kept = WithInputControls(plan.cells, {*target});
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].id, target->ddp_scaling_control_id);
  EXPECT_EQ(kept[1].id, target->id);
}

TEST(DdpReferencesTest, AnAllreduceCellHasNoReferences) {
  const std::vector<Combination> cells = {
      {{"model", Value("allreduce")}, {"strategy", Value("ddp")}, {"world_size", Value(2)}},
      {{"model", Value("allreduce")}, {"strategy", Value("ddp")}, {"world_size", Value(1)}},
      {{"model", Value("allreduce")},
       {"strategy", Value("ddp")},
       {"world_size", Value(2)},
       {"ddp_mode", Value("compute_only")}}};
  std::vector<std::string> keys;
  keys.reserve(cells.size());
  for (const Combination& c : cells) keys.push_back(CellKey(c));
  const DdpReferences refs = FindDdpReferences(cells, keys);
  EXPECT_EQ(refs.scaling_control_of, (std::vector<long>{-1, -1, -1}));
  EXPECT_EQ(refs.compute_only_of, (std::vector<long>{-1, -1, -1}));
}

TEST(ControlsFirstTest, PlacesEveryNeedAndItsOwnNeedsFirst) {
  // 0 needs 1 and 2; 2 needs 1; 3 needs nothing. Run order 0, 3, 2, 1.
  const std::vector<std::vector<long>> needs = {{1, 2}, {}, {1}, {}};
  const std::vector<std::pair<std::size_t, int>> order = {{0, 0}, {3, 0}, {2, 0}, {1, 0}};
  const std::vector<std::pair<std::size_t, int>> expected = {{1, 0}, {2, 0}, {0, 0}, {3, 0}};
  EXPECT_EQ(ControlsFirst(order, needs), expected);
  // The single-control form keeps its meaning: 1's control 0 moves before it.
  EXPECT_EQ(ControlsFirst({{1, 0}, {0, 0}}, std::vector<long>{-1, 0}),
            (std::vector<std::pair<std::size_t, int>>{{0, 0}, {1, 0}}));
}

}  // namespace
}  // namespace dlbench::plan
