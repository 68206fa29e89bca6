// The input-bound verdict's controls in the plan: reused when the matrix has them, added when it
// does not, run before the cells compared with them, kept by --only.
#include "plan/input_controls.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

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

std::string Data(const Cell& c) {
  auto it = c.params.find("data");
  return it == c.params.end() ? "" : it->second.get<std::string>();
}

const Cell* ById(const Plan& plan, const std::string& id) {
  for (const Cell& c : plan.cells) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

TEST(InputControlsTest, TakesAVerdictOnlyWithHostDataThatRunsTheModel) {
  EXPECT_FALSE(TakesInputVerdict({}));
  EXPECT_FALSE(TakesInputVerdict({{"data", Value("device")}}));
  EXPECT_TRUE(TakesInputVerdict({{"data", Value("host")}}));
  EXPECT_TRUE(TakesInputVerdict({{"data", Value("jpeg_dir")}, {"pipeline_only", Value(false)}}));
  EXPECT_FALSE(TakesInputVerdict({{"data", Value("jpeg_dir")}, {"pipeline_only", Value(true)}}));
}

TEST(InputControlsTest, ControlDropsPipelineKeysAndKeepsTheRest) {
  const Combination cell = {
      {"model", Value("mlp")},       {"batch_size", Value(8)},     {"data", Value("jpeg_dir")},
      {"data_path", Value("/d")},    {"data_workers", Value(2)},   {"prefetch", Value(4)},
      {"cache", Value(true)},        {"pin_memory", Value(false)}, {"shuffle_buffer", Value(10)},
      {"skip_corrupt", Value(true)}, {"async_copy", Value(false)}, {"pipeline_only", Value(false)}};
  const Combination expected = {{"model", Value("mlp")}, {"batch_size", Value(8)}, {"data", Value("device")}};
  EXPECT_EQ(InputControlParams(cell), expected);
}

TEST(InputControlsTest, ReusesTheExactControlThenAnyDeviceCellThenAddsOne) {
  std::vector<Combination> combos = {
      {{"model", Value("a")}, {"data", Value("host")}},
      {{"model", Value("a")}, {"data", Value("device")}},
      {{"model", Value("b")}, {"data", Value("device")}, {"data_workers", Value(3)}},
      {{"model", Value("b")}, {"data", Value("host")}, {"data_workers", Value(3)}},
      {{"model", Value("c")}, {"data", Value("host")}},
      {{"model", Value("c")}, {"data", Value("jpeg_dir")}, {"data_path", Value("/x")}},
  };
  std::vector<std::string> keys;
  for (const auto& c : combos) keys.push_back(CellKey(c));
  const InputControls controls = FindOrAddInputControls(combos, keys);
  ASSERT_EQ(combos.size(), 7U);  // one control added, for model c (both c cells share it)
  ASSERT_EQ(keys.size(), 7U);
  EXPECT_EQ(controls.added, 1U);
  EXPECT_EQ(controls.control_of, (std::vector<long>{1, -1, -1, 2, 6, 6, -1}));
  EXPECT_EQ(combos[6], (Combination{{"model", Value("c")}, {"data", Value("device")}}));
  EXPECT_EQ(keys[6], CellKey(combos[6]));
}

TEST(InputControlsTest, ControlsMoveBeforeTheirFirstDependentOfTheSameRepetition) {
  // Combinations 0 and 2 need 1 and 3; 3 comes late in round 0, 1 early in round 1.
  const std::vector<long> control_of = {1, -1, 3, -1};
  const std::vector<std::pair<std::size_t, int>> order = {{0, 0}, {2, 0}, {1, 0}, {3, 0},
                                                          {1, 1}, {2, 1}, {0, 1}, {3, 1}};
  const std::vector<std::pair<std::size_t, int>> expected = {{1, 0}, {0, 0}, {3, 0}, {2, 0},
                                                             {1, 1}, {3, 1}, {2, 1}, {0, 1}};
  EXPECT_EQ(ControlsFirst(order, control_of), expected);
}

TEST(InputControlsTest, ExpandAddsTheMissingControlAndRunsItFirst) {
  const Plan plan = ExpandText(
      "runner: torch\nrepetitions: 2\nordering: interleaved\nmatrix:\n  model: [resnet50]\n  scenario: "
      "[train]\n"
      "  batch_size: [4]\n  data: [host]\n  data_workers: [1, 2]\n");
  // Two host cells (the workers axis does nothing to host but makes two keys) and one control, twice.
  ASSERT_EQ(plan.cells.size(), 6U);
  std::map<std::string, int> position;
  for (const Cell& c : plan.cells) position[c.id] = c.index;
  int added = 0;
  for (const Cell& c : plan.cells) {
    if (Data(c) == "device") {
      EXPECT_TRUE(c.added_as_control);
      EXPECT_TRUE(c.input_control_id.empty());
      EXPECT_EQ(c.params.count("data_workers"), 0U);
      ++added;
      continue;
    }
    EXPECT_FALSE(c.added_as_control);
    ASSERT_FALSE(c.input_control_id.empty()) << c.id;
    const Cell* control = ById(plan, c.input_control_id);
    ASSERT_NE(control, nullptr) << c.input_control_id;
    EXPECT_EQ(control->repetition, c.repetition);
    EXPECT_LT(position[control->id], position[c.id]);
  }
  EXPECT_EQ(added, 2);
}

TEST(InputControlsTest, ExpandReusesADeviceCellOfTheMatrix) {
  const Plan plan = ExpandText(
      "runner: torch\nordering: grouped\nmatrix:\n  model: [resnet50]\n  scenario: [train]\n  batch_size: "
      "[4]\n"
      "  data: [host, device]\n");
  ASSERT_EQ(plan.cells.size(), 2U);
  EXPECT_EQ(Data(plan.cells[0]), "device");  // moved before the host cell that needs it
  EXPECT_FALSE(plan.cells[0].added_as_control);
  EXPECT_EQ(Data(plan.cells[1]), "host");
  EXPECT_EQ(plan.cells[1].input_control_id, plan.cells[0].id);
}

TEST(InputControlsTest, NoControlsWithoutHostDataOrForACommandRunner) {
  for (const Cell& c :
       ExpandText("runner: torch\nmatrix:\n  model: [resnet50]\n  batch_size: [4, 8]\n").cells) {
    EXPECT_TRUE(c.input_control_id.empty());
  }
  const Plan command = ExpandText("runner: {command: [./bench]}\nmatrix:\n  data: [host, jpeg_dir]\n");
  ASSERT_EQ(command.cells.size(), 2U);
  for (const Cell& c : command.cells) EXPECT_TRUE(c.input_control_id.empty());
}

TEST(InputControlsTest, FindsThePipelineOnlyTwinOfTheSameSettingsAndNeverAddsOne) {
  std::vector<Combination> combos = {
      {{"model", Value("a")}, {"data", Value("host")}, {"prefetch", Value(2)}},
      {{"model", Value("a")},
       {"data", Value("host")},
       {"prefetch", Value(2)},
       {"pipeline_only", Value(true)}},
      {{"model", Value("a")},
       {"data", Value("host")},
       {"prefetch", Value(4)},
       {"pipeline_only", Value(false)}},
      {{"model", Value("a")},
       {"data", Value("host")},
       {"prefetch", Value(8)},
       {"pipeline_only", Value(true)}},
      {{"model", Value("a")}, {"data", Value("device")}},
  };
  std::vector<std::string> keys;
  keys.reserve(combos.size());
  for (const auto& c : combos) keys.push_back(CellKey(c));
  const InputControls controls = FindOrAddInputControls(combos, keys);
  EXPECT_EQ(controls.added, 0U);
  // Cell 0's twin is cell 1 (the same prefetch); cell 2 (prefetch 4) has none: the prefetch 8 twin
  // measures another pipeline. Twins and the control take no twin themselves.
  EXPECT_EQ(controls.pipeline_twin_of, (std::vector<long>{1, -1, -1, -1, -1}));
  EXPECT_EQ(controls.control_of, (std::vector<long>{4, -1, 4, -1, -1}));
  EXPECT_EQ(PipelineTwinParams(combos[2]).at("pipeline_only"), Value(true));
}

TEST(InputControlsTest, ExpandRunsEachPipelineOnlyTwinBeforeTheCellItIsMatchedTo) {
  const Plan plan = ExpandText(
      "runner: torch\nrepetitions: 2\nordering: interleaved\nmatrix:\n  model: [resnet50]\n  scenario: "
      "[train]\n  batch_size: [4]\n  data: [host]\n  prefetch: [2, 4]\n  pipeline_only: [false, true]\n");
  // Four cells of the matrix and one added control (prefetch is a pipeline key), twice.
  ASSERT_EQ(plan.cells.size(), 10U);
  std::map<std::string, int> position;
  for (const Cell& c : plan.cells) position[c.id] = c.index;
  int matched = 0;
  for (const Cell& c : plan.cells) {
    const auto only = c.params.find("pipeline_only");
    if (Data(c) == "device" || (only != c.params.end() && only->second == Value(true))) {
      EXPECT_TRUE(c.input_pipeline_id.empty()) << c.id;
      continue;
    }
    ASSERT_FALSE(c.input_pipeline_id.empty()) << c.id;
    const Cell* twin = ById(plan, c.input_pipeline_id);
    ASSERT_NE(twin, nullptr) << c.input_pipeline_id;
    EXPECT_EQ(twin->params.at("pipeline_only"), Value(true));
    EXPECT_EQ(twin->params.at("prefetch"), c.params.at("prefetch"));
    EXPECT_EQ(twin->repetition, c.repetition);
    EXPECT_LT(position[twin->id], position[c.id]);
    EXPECT_FALSE(c.input_control_id.empty());
    ++matched;
  }
  EXPECT_EQ(matched, 4);

  for (const Cell& c : ExpandText("runner: torch\nmatrix:\n  model: [resnet50]\n  scenario: [train]\n  "
                                  "batch_size: [4]\n  data: [host]\n  prefetch: [2, 4]\n")
                           .cells) {
    EXPECT_TRUE(c.input_pipeline_id.empty()) << "no twin in the matrix, none added: " << c.id;
  }
}

TEST(InputControlsTest, OnlyKeepsTheControlOfWhatItKeeps) {
  const Plan plan = ExpandText(
      "runner: torch\nordering: grouped\nmatrix:\n  model: [resnet50]\n  scenario: [train]\n  batch_size: "
      "[4, 8]\n"
      "  data: [host]\n");
  ASSERT_EQ(plan.cells.size(), 4U);
  std::vector<Cell> kept;
  for (const Cell& c : plan.cells) {
    if (Data(c) == "host" && c.params.at("batch_size") == Value(8)) kept.push_back(c);
  }
  ASSERT_EQ(kept.size(), 1U);
  const std::vector<Cell> with = WithInputControls(plan.cells, kept);
  ASSERT_EQ(with.size(), 2U);
  EXPECT_EQ(with[0].id, kept[0].input_control_id);
  EXPECT_EQ(with[1].id, kept[0].id);
}

}  // namespace
}  // namespace dlbench::plan
