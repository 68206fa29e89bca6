// Plan expansion: product order, exclude and include against GitHub Actions' documented examples,
// defaults, keys, labels, seeds, ordering and estimates.
#include "plan/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "config/registry.h"
#include "plan/estimate.h"

namespace dlbench::plan {
namespace {

using config::Combination;
using config::Value;

config::Matrix Parse(const std::string& yaml) {
  Result<config::Matrix> m = config::ParseMatrix(yaml, "m.yaml");
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? *m : config::Matrix{};
}

Plan ExpandOk(const config::Matrix& matrix) {
  Result<Plan> plan = Expand(matrix);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  return plan.ok() ? *plan : Plan{};
}

// GitHub's examples use keys no registry knows; a command runner passes them through.
constexpr const char* kCommand = "runner: {command: [./bench]}\n";

TEST(ExpandCombinationsTest, ProductInAxisOrderLastAxisFastest) {
  auto combos = ExpandCombinations(Parse("matrix:\n  batch_size: [1, 2]\n  precision: [fp32, bf16, fp16]\n"));
  std::vector<std::pair<int, std::string>> got;
  for (const Combination& c : combos)
    got.emplace_back(c.at("batch_size").get<int>(), c.at("precision").get<std::string>());
  EXPECT_EQ(got, (std::vector<std::pair<int, std::string>>{
                     {1, "fp32"}, {1, "bf16"}, {1, "fp16"}, {2, "fp32"}, {2, "bf16"}, {2, "fp16"}}));
}

// docs.github.com, "Example: Expanding configurations" (include).
TEST(ExpandCombinationsTest, GitHubIncludeExample) {
  auto combos = ExpandCombinations(Parse(std::string(kCommand) + "matrix:\n"
                                                                 "  fruit: [apple, pear]\n"
                                                                 "  animal: [cat, dog]\n"
                                                                 "include:\n"
                                                                 "  - color: green\n"
                                                                 "  - color: pink\n"
                                                                 "    animal: cat\n"
                                                                 "  - fruit: apple\n"
                                                                 "    shape: circle\n"
                                                                 "  - fruit: banana\n"
                                                                 "  - fruit: banana\n"
                                                                 "    animal: cat\n"));
  const std::vector<Combination> expected = {
      {{"fruit", "apple"}, {"animal", "cat"}, {"color", "pink"}, {"shape", "circle"}},
      {{"fruit", "apple"}, {"animal", "dog"}, {"color", "green"}, {"shape", "circle"}},
      {{"fruit", "pear"}, {"animal", "cat"}, {"color", "pink"}},
      {{"fruit", "pear"}, {"animal", "dog"}, {"color", "green"}},
      {{"fruit", "banana"}},
      {{"fruit", "banana"}, {"animal", "cat"}},
  };
  EXPECT_EQ(combos, expected);
}

// docs.github.com, "Example: Excluding matrix configurations": 12 combinations minus 1 minus 2.
TEST(ExpandCombinationsTest, GitHubExcludeExample) {
  auto combos = ExpandCombinations(Parse(std::string(kCommand) + "matrix:\n"
                                                                 "  os: [macos-latest, windows-latest]\n"
                                                                 "  version: [12, 14, 16]\n"
                                                                 "  environment: [staging, production]\n"
                                                                 "exclude:\n"
                                                                 "  - os: macos-latest\n"
                                                                 "    version: 12\n"
                                                                 "    environment: production\n"
                                                                 "  - os: windows-latest\n"
                                                                 "    version: 16\n"));
  EXPECT_EQ(combos.size(), 9u);
  for (const Combination& c : combos) {
    EXPECT_FALSE(c.at("os") == "macos-latest" && c.at("version") == 12 &&
                 c.at("environment") == "production");
    EXPECT_FALSE(c.at("os") == "windows-latest" && c.at("version") == 16);
  }
}

// Include is applied after exclude; an entry that matches an existing combination exactly adds no
// job, one that matches none adds one (5 jobs, not 6).
TEST(ExpandCombinationsTest, IncludeMatchingAnExistingCombinationAddsNothing) {
  auto combos = ExpandCombinations(Parse(std::string(kCommand) + "matrix:\n"
                                                                 "  os: [ubuntu-latest, windows-latest]\n"
                                                                 "  node: [14, 16]\n"
                                                                 "exclude:\n"
                                                                 "  - os: windows-latest\n"
                                                                 "    node: 14\n"
                                                                 "include:\n"
                                                                 "  - os: macos-latest\n"
                                                                 "    node: 18\n"
                                                                 "  - os: ubuntu-latest\n"
                                                                 "    node: 14\n"
                                                                 "  - os: windows-latest\n"
                                                                 "    node: 14\n"
                                                                 "    npm: 6\n"));
  const std::vector<Combination> expected = {
      {{"os", "ubuntu-latest"}, {"node", 14}},
      {{"os", "ubuntu-latest"}, {"node", 16}},
      {{"os", "windows-latest"}, {"node", 16}},
      {{"os", "macos-latest"}, {"node", 18}},
      {{"os", "windows-latest"}, {"node", 14}, {"npm", 6}},  // excluded, so include adds it anew
  };
  EXPECT_EQ(combos, expected);
}

TEST(ExpandTest, FillsDefaultsOfTheRunnersScope) {
  Plan null_plan = ExpandOk(Parse("matrix:\n  batch_size: [4]\n"));
  ASSERT_EQ(null_plan.cells.size(), 1u);
  const auto& p = null_plan.cells[0].params;
  EXPECT_EQ(p.at("step_ms"), Value(1.0));
  EXPECT_EQ(p.at("inject"), Value("none"));
  EXPECT_EQ(p.at("exit_code"), Value(3));
  EXPECT_EQ(p.at("precision"), Value("fp32"));
  EXPECT_EQ(p.at("samples_per_step"), Value(4)) << "samples_per_step defaults to batch_size";
  EXPECT_FALSE(p.count("model")) << "no default: stays absent";
  EXPECT_FALSE(p.count("cudnn_benchmark")) << "a torch parameter is not filled for the null runner";

  Plan explicit_plan = ExpandOk(Parse("matrix:\n  batch_size: 4\n  samples_per_step: 2\n"));
  EXPECT_EQ(explicit_plan.cells[0].params.at("samples_per_step"), Value(2));

  Plan torch_plan = ExpandOk(Parse("runner: torch\nmatrix:\n  model: resnet50\n"));
  const auto& t = torch_plan.cells[0].params;
  EXPECT_EQ(t.at("cudnn_benchmark"), Value(true));
  EXPECT_EQ(t.at("memory_format"), Value("auto"));
  EXPECT_EQ(t.at("scenario"), Value("train"));
  EXPECT_FALSE(t.count("image_size")) << "absent means the model's standard size";
  EXPECT_FALSE(t.count("threads"));
  EXPECT_FALSE(t.count("step_ms"));

  Plan command_plan = ExpandOk(Parse(std::string(kCommand) + "matrix:\n  fruit: apple\n"));
  std::set<std::string> names;
  for (const auto& kv : command_plan.cells[0].params) names.insert(kv.first);
  EXPECT_EQ(names, (std::set<std::string>{"batch_size", "device", "fruit", "precision", "scenario",
                                          "strategy", "world_size"}));
}

TEST(ExpandTest, KeyIdAndRepetitions) {
  config::Matrix m = Parse(std::string(kCommand) + "matrix:\n  batch_size: [8, 1]\nrepetitions: 2\n");
  Plan plan = ExpandOk(m);
  ASSERT_EQ(plan.cells.size(), 4u);
  const std::string key8 = "batch_size=8,device=cpu,precision=fp32,scenario=train,strategy=none,world_size=1";
  EXPECT_EQ(plan.cells[0].key, key8);
  EXPECT_EQ(plan.cells[0].id, key8 + "#r0");
  EXPECT_EQ(plan.cells[1].id, key8 + "#r1");
  EXPECT_EQ(plan.cells[1].repetition, 1);
  EXPECT_EQ(plan.cells[2].params.at("batch_size"), Value(1));
  for (std::size_t i = 0; i < plan.cells.size(); ++i) EXPECT_EQ(plan.cells[i].index, static_cast<int>(i));
  EXPECT_EQ(CellKey({{"b", Value("x,y")}, {"a", Value(1.5)}, {"c", Value("8")}}), "a=1.5,b=\"x,y\",c=\"8\"");
  EXPECT_EQ(CellKey({}), "");
}

TEST(ExpandTest, IdenticalCombinationsAreOneCell) {
  Plan plan =
      ExpandOk(Parse("matrix:\n  batch_size: [1, 2]\ninclude:\n  - batch_size: 4\n  - batch_size: 4\n"));
  ASSERT_EQ(plan.cells.size(), 3u);
  // An include that only restates defaults yields the same cell as the product's.
  Plan same =
      ExpandOk(Parse("matrix:\n  batch_size: [1]\n  precision: [fp16]\ninclude:\n"
                     "  - batch_size: 1\n    precision: fp32\n"));
  EXPECT_EQ(same.cells.size(), 2u);
}

TEST(ExpandTest, RejectsAnEmptyPlanAndMissingRequiredParameters) {
  config::Matrix m = Parse("matrix:\n  batch_size: [1, 2]\nexclude:\n  - batch_size: 1\n  - batch_size: 2\n");
  Result<Plan> empty = Expand(m);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().kind, ErrorKind::kInvalidInput);
  EXPECT_EQ(empty.error().message, "m.yaml: error: nothing to run: exclude removed every combination");

  // model is an axis, but an include entry that extends nothing makes a cell without it.
  config::Matrix torch = Parse(
      "runner: torch\nmatrix:\n  model: [resnet50]\n  batch_size: [1]\n"
      "include:\n  - batch_size: 64\n");
  Result<Plan> missing = Expand(torch);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("has no 'model', required with runner torch"), std::string::npos)
      << missing.error().message;
}

TEST(ExpandTest, LabelsShowWhatVariesAndTheModel) {
  Plan plan =
      ExpandOk(Parse("runner: torch\nmatrix:\n  model: [resnet50, mobilenet_v2]\n  batch_size: [1, 32]\n"
                     "  device: cpu\n  image_size: [160]\n"));
  std::vector<std::string> labels;
  for (const Cell& c : plan.cells) labels.push_back(c.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"resnet50 bs=1", "resnet50 bs=32", "mobilenet_v2 bs=1",
                                              "mobilenet_v2 bs=32"}));

  Plan varied = ExpandOk(Parse("matrix:\n  step_ms: [1, 2]\n  precision: [fp32, bf16]\n"));
  EXPECT_EQ(varied.cells[1].label, "bf16 step_ms=1.0");

  // A parameter set by an include entry labels only the cells where it differs from its default.
  Plan included =
      ExpandOk(Parse("matrix:\n  inject: [none, exit]\n  step_ms: 1\ninclude:\n"
                     "  - inject: exit\n    exit_code: 7\n  - inject: none\n    step_ms: 2\n"));
  std::vector<std::string> included_labels;
  for (const Cell& c : included.cells) included_labels.push_back(c.label);
  EXPECT_EQ(included_labels,
            (std::vector<std::string>{"inject=none", "inject=exit exit_code=7", "step_ms=2.0 inject=none"}));

  Plan single = ExpandOk(Parse("matrix:\n  step_ms: 2\n  batch_size: 1\n"));
  EXPECT_EQ(single.cells[0].label, "step_ms=2.0") << "a single cell shows its non-default parameters";
  Plan defaults = ExpandOk(Parse("matrix:\n  batch_size: 1\n"));
  EXPECT_EQ(defaults.cells[0].label, "defaults");
}

// int8 where the torch runner has no int8 form is warned at the precision's place, once per
// model, device and scenario; the cells stay in the plan (the matrix crosses precisions).
TEST(ExpandTest, WarnsOfInt8CellsThatWillEndUnsupported) {
  auto m = config::ParseMatrix(
      "runner: torch\nmatrix:\n  model: [bert_base, resnet50]\n  precision: [fp32, int8]\n  scenario: "
      "[infer, "
      "train]\n  batch_size: [1, 8]\n",
      "m.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto plan = Expand(*m);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->cells.size(), 16u);
  std::vector<std::string> int8;
  for (const std::string& w : plan->warnings)
    if (w.find("precision int8") != std::string::npos) int8.push_back(w);
  ASSERT_EQ(int8.size(), 3u) << "bert_base train, resnet50 infer and train; not bert_base infer";
  EXPECT_EQ(
      int8[0],
      "m.yaml:4:3: warning: precision int8 of bert_base (device cpu, scenario train) will end unsupported: "
      "int8 is an inference deployment; use scenario infer (scenario train trains)");
  EXPECT_NE(
      int8[1].find("of resnet50 (device cpu, scenario infer) will end unsupported: only bert_base has a "
                   "dynamic int8 form"),
      std::string::npos)
      << int8[1];
  auto cuda = config::ParseMatrix(
      "runner: torch\nmatrix:\n  model: bert_base\n  precision: int8\n  scenario: infer\n  device: cuda\n",
      "m.yaml");
  ASSERT_TRUE(cuda.ok());
  auto on_cuda = Expand(*cuda);
  ASSERT_TRUE(on_cuda.ok());
  ASSERT_EQ(on_cuda->warnings.size(), 1u);
  EXPECT_NE(on_cuda->warnings[0].find("CPU's quantized engines only"), std::string::npos)
      << on_cuda->warnings[0];
}

// A ceiling under twice min_time_s can leave too little after MSER-5's cut: warned at its line.
TEST(ExpandTest, WarnsWhenMaxTimeCannotHoldTwiceMinTime) {
  auto close = config::ParseMatrix(
      "runner: null\nmatrix:\n  model: a\nmeasure:\n  min_time_s: 1.5\n  max_time_s: 2\n", "m.yaml");
  ASSERT_TRUE(close.ok()) << close.error().message;
  auto plan = Expand(*close);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->warnings.size(), 1u);
  EXPECT_EQ(plan->warnings[0].rfind(
                "m.yaml:6:3: warning: measure.max_time_s 2.0 is less than twice min_time_s 1.5", 0),
            0u)
      << plan->warnings[0];
  EXPECT_NE(plan->warnings[0].find("raise max_time_s to at least 3.0"), std::string::npos)
      << plan->warnings[0];
  auto roomy = config::ParseMatrix(
      "runner: null\nmatrix:\n  model: a\nmeasure:\n  min_time_s: 1.5\n  max_time_s: 3\n", "m.yaml");
  ASSERT_TRUE(roomy.ok());
  auto fine = Expand(*roomy);
  ASSERT_TRUE(fine.ok());
  EXPECT_TRUE(fine->warnings.empty());
  auto defaults = config::ParseMatrix("runner: null\nmatrix:\n  model: a\n", "m.yaml");
  ASSERT_TRUE(defaults.ok());
  EXPECT_TRUE(Expand(*defaults)->warnings.empty());
}

TEST(SeedTest, MatchesTheDocumentedMix) {
  // Expected values computed independently (Python) from the formula in docs/config-reference.md.
  EXPECT_EQ(DeriveCellSeed(42, "batch_size=8,model=resnet50", 0), 8957001772265552895ull);
  EXPECT_EQ(DeriveCellSeed(42, "batch_size=8,model=resnet50", 1), 4354090874053384558ull);
  EXPECT_EQ(DeriveCellSeed(0, "", 0), 2448385507222971125ull);
}

TEST(SeedTest, StableAndDistinct) {
  const std::string yaml =
      "matrix:\n  batch_size: [1, 2, 3]\n  step_ms: [1, 2, 3]\nrepetitions: 3\nseed: 7\n";
  Plan a = ExpandOk(Parse(yaml));
  Plan b = ExpandOk(Parse(yaml));
  std::set<std::uint64_t> seeds;
  ASSERT_EQ(a.cells.size(), 27u);
  for (std::size_t i = 0; i < a.cells.size(); ++i) {
    EXPECT_EQ(a.cells[i].seed, b.cells[i].seed);
    EXPECT_EQ(a.cells[i].seed, DeriveCellSeed(7, a.cells[i].key, a.cells[i].repetition));
    EXPECT_LT(a.cells[i].seed, 1ull << 63);
    seeds.insert(a.cells[i].seed);
  }
  EXPECT_EQ(seeds.size(), 27u) << "every cell and repetition has its own seed";

  Plan other =
      ExpandOk(Parse("matrix:\n  batch_size: [1, 2, 3]\n  step_ms: [1, 2, 3]\nrepetitions: 3\nseed: 8\n"));
  for (std::size_t i = 0; i < a.cells.size(); ++i) EXPECT_NE(a.cells[i].seed, other.cells[i].seed);

  // Adding a cell leaves the others' seeds alone: a seed depends on the key, not the position.
  Plan grown =
      ExpandOk(Parse("matrix:\n  batch_size: [4, 1, 2, 3]\n  step_ms: [1, 2, 3]\nrepetitions: 3\nseed: 7\n"));
  std::map<std::string, std::uint64_t> grown_seeds;
  for (const Cell& c : grown.cells) grown_seeds[c.id] = c.seed;
  for (const Cell& c : a.cells) EXPECT_EQ(grown_seeds.at(c.id), c.seed) << c.id;
}

std::vector<std::pair<std::size_t, int>> Order(const Plan& plan, const std::vector<std::string>& keys) {
  std::vector<std::pair<std::size_t, int>> order;
  for (const Cell& c : plan.cells) {
    std::size_t index = std::find(keys.begin(), keys.end(), c.key) - keys.begin();
    order.emplace_back(index, c.repetition);
  }
  return order;
}

TEST(OrderingTest, GroupedKeepsRepetitionsAdjacent) {
  Plan plan = ExpandOk(Parse("matrix:\n  batch_size: [1, 2]\nrepetitions: 3\n"));
  std::vector<std::string> keys = {plan.cells[0].key, plan.cells[3].key};
  EXPECT_EQ(Order(plan, keys),
            (std::vector<std::pair<std::size_t, int>>{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}));
}

TEST(OrderingTest, InterleavedIsAPortableShuffleOfEachRound) {
  const std::string base = "matrix:\n  batch_size: [1, 2, 3, 4, 5]\nrepetitions: 2\nordering: interleaved\n";
  Plan grouped = ExpandOk(Parse("matrix:\n  batch_size: [1, 2, 3, 4, 5]\n"));
  std::vector<std::string> keys;
  for (const Cell& c : grouped.cells) keys.push_back(c.key);

  Plan seven = ExpandOk(Parse(base + "order_seed: 7\n"));
  // Expected order computed independently (Python) from the documented Fisher-Yates over SplitMix64.
  EXPECT_EQ(Order(seven, keys),
            (std::vector<std::pair<std::size_t, int>>{
                {4, 0}, {1, 0}, {3, 0}, {0, 0}, {2, 0}, {2, 1}, {0, 1}, {3, 1}, {1, 1}, {4, 1}}));
  EXPECT_EQ(Order(ExpandOk(Parse(base + "order_seed: 7\n")), keys), Order(seven, keys)) << "deterministic";
  Plan eight = ExpandOk(Parse(base + "order_seed: 8\n"));
  EXPECT_NE(Order(eight, keys), Order(seven, keys));
  // Each round holds every cell once, and seeds do not depend on the order.
  auto order = Order(eight, keys);
  for (int round = 0; round < 2; ++round) {
    std::set<std::size_t> cells;
    for (std::size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(order[round * 5 + i].second, round);
      cells.insert(order[round * 5 + i].first);
    }
    EXPECT_EQ(cells.size(), 5u);
  }
  for (const Cell& c : eight.cells) EXPECT_EQ(c.seed, DeriveCellSeed(0, c.key, c.repetition));
}

TEST(EstimateTest, HistoryFirstThenMeasureBounds) {
  config::Matrix m =
      Parse("matrix:\n  step_ms: [1, 500]\n  setup_ms: 2000\nmeasure:\n  idle_baseline_s: 2\n");
  Plan plan = ExpandOk(m);
  const Cell& fast = plan.cells[0];
  const Cell& slow = plan.cells[1];
  KeyHistory stored;
  stored.cells = 3;
  stored.mean_s = 4.5;
  stored.min_s = 4.0;
  stored.max_s = 5.5;
  Estimate known = EstimateCell(fast, m, {{fast.key, stored}});
  EXPECT_TRUE(known.from_history);
  EXPECT_DOUBLE_EQ(known.seconds, 4.5);
  EXPECT_DOUBLE_EQ(known.high_s, 5.5);
  EXPECT_DOUBLE_EQ(known.low_s, 4.0) << "stored cells ran faster than the policy's least (5 s)";
  // fast: min_time_s (1) beats 12 steps of 1 ms; plus 2 s idle baseline and 2 s setup.
  KeyHistory other = stored;
  other.mean_s = 99;
  Estimate fast_est = EstimateCell(fast, m, {{"another-key", other}});
  EXPECT_FALSE(fast_est.from_history);
  EXPECT_DOUBLE_EQ(fast_est.seconds, 1.0 + 2.0 + 2.0);
  EXPECT_DOUBLE_EQ(fast_est.low_s, fast_est.seconds);
  EXPECT_DOUBLE_EQ(fast_est.high_s, 2.0 + 600.0) << "idle baseline + the default timeout_s";
  ASSERT_TRUE(fast_est.step_s.has_value());
  EXPECT_DOUBLE_EQ(*fast_est.step_s, 0.001);
  EXPECT_FALSE(fast_est.step_from_history);
  // slow: (min_warmup_steps 2 + min_steps 10) x 0.5 s = 6 s of steps.
  EXPECT_DOUBLE_EQ(EstimateCell(slow, m, {}).seconds, 6.0 + 2.0 + 2.0);

  config::Matrix capped = Parse("matrix:\n  step_ms: 500\nmeasure:\n  max_time_s: 3\n");
  EXPECT_DOUBLE_EQ(EstimateCell(ExpandOk(capped).cells[0], capped, {}).seconds, 3.0);
  config::Matrix timeout = Parse("matrix:\n  step_ms: 500\ntimeout_s: 2.5\n");
  EXPECT_DOUBLE_EQ(EstimateCell(ExpandOk(timeout).cells[0], timeout, {}).seconds, 2.5);
  config::Matrix torch = Parse("runner: torch\nmatrix:\n  model: resnet50\nmeasure: {min_time_s: 4}\n");
  EXPECT_DOUBLE_EQ(EstimateCell(ExpandOk(torch).cells[0], torch, {}).seconds, 4.0);
}

// Which cells cannot hold the measured steps an interval needs: 20 (or min_steps) x 1.25 for the
// warm-up cut, at a declared step time or the stored one; torch cells without history are not
// judged (their step time is unknown).
TEST(EstimateTest, ReachableStepsAtTheDeclaredOrStoredStepTime) {
  config::Matrix m = Parse("matrix:\n  step_ms: [100, 500]\nmeasure:\n  max_time_s: 8\n");
  EXPECT_DOUBLE_EQ(StepsNeeded(m.measure), 25.0);
  Plan plan = ExpandOk(m);
  auto reach = [&](const Cell& c) { return ReachableSteps(EstimateCell(c, m, {}), m.measure); };
  EXPECT_EQ(reach(plan.cells[0]), 80.0);
  EXPECT_EQ(reach(plan.cells[1]), 16.0) << "8 s at 0.5 s a step";
  config::Matrix many = Parse("matrix:\n  step_ms: 100\nmeasure:\n  max_time_s: 8\n  min_steps: 100\n");
  EXPECT_DOUBLE_EQ(StepsNeeded(many.measure), 125.0);

  config::Matrix torch = Parse("runner: torch\nmatrix:\n  model: resnet50\nmeasure: {max_time_s: 5}\n");
  const Plan torch_plan = ExpandOk(torch);
  ASSERT_EQ(torch_plan.cells.size(), 1u);
  const Cell& cell = torch_plan.cells[0];
  EXPECT_FALSE(ReachableSteps(EstimateCell(cell, torch, {}), torch.measure).has_value());
  KeyHistory slow;
  slow.cells = 1;
  slow.mean_s = slow.min_s = slow.max_s = 20;
  slow.step_s = 0.4;
  const Estimate e = EstimateCell(cell, torch, {{cell.key, slow}});
  EXPECT_TRUE(e.step_from_history);
  EXPECT_EQ(ReachableSteps(e, torch.measure), 12.0);
}

// Cells the measure policy does not stop: a converge cell trains to its target or its
// max_train_time_s, a peak search probes for peak_max_time_s (max_time_s by default).
TEST(EstimateTest, ConvergeAndPeakCellsAreBoundedByTheirOwnRules) {
  config::Matrix converge = Parse(
      "runner: torch\nmatrix:\n  model: fashion_cnn\n  scenario: converge\n  target_accuracy: 0.7\n  "
      "max_train_time_s: 240\ntimeout_s: 300\nmeasure: {idle_baseline_s: 1}\n");
  const Plan converge_plan = ExpandOk(converge);
  ASSERT_EQ(converge_plan.cells.size(), 1u);
  const Estimate c = EstimateCell(converge_plan.cells[0], converge, {});
  EXPECT_FALSE(c.policy_stops);
  EXPECT_DOUBLE_EQ(c.seconds, 241.0);
  EXPECT_DOUBLE_EQ(c.low_s, 1.0);
  EXPECT_DOUBLE_EQ(c.high_s, 301.0);
  EXPECT_FALSE(ReachableSteps(c, converge.measure).has_value());

  config::Matrix peak = Parse(
      "matrix:\n  step_ms: 1\n  scenario: infer\n  load: server\n  target_qps: max\n  latency_bound_ms: 10\n "
      " virtual_time: "
      "true\nmeasure: {max_time_s: 30}\n");
  const Plan peak_plan = ExpandOk(peak);
  ASSERT_EQ(peak_plan.cells.size(), 1u);
  const Estimate p = EstimateCell(peak_plan.cells[0], peak, {});
  EXPECT_FALSE(p.policy_stops);
  EXPECT_DOUBLE_EQ(p.seconds, 30.0);
  EXPECT_DOUBLE_EQ(p.high_s, 600.0);
  // At least the peak's one confirmation: peak_confirm_s (15 s) and its 0.5 s warm-up.
  EXPECT_DOUBLE_EQ(p.low_s, 15.5);
  config::Matrix unconfirmed = Parse(
      "matrix:\n  step_ms: 1\n  scenario: infer\n  load: server\n  target_qps: max\n  latency_bound_ms: 10\n"
      "  peak_confirm_s: 0\n  virtual_time: true\nmeasure: {max_time_s: 30}\n");
  const Plan unconfirmed_plan = ExpandOk(unconfirmed);
  ASSERT_EQ(unconfirmed_plan.cells.size(), 1u);
  EXPECT_DOUBLE_EQ(EstimateCell(unconfirmed_plan.cells[0], unconfirmed, {}).low_s, 0.0);
}

// The example matrices in examples/ stay valid and cover what they promise.
TEST(ExamplesTest, NullExamplesExpand) {
  for (const char* name : {"null-smoke.yaml", "null-failures.yaml"}) {
    Result<config::Matrix> m = config::LoadMatrix(std::string(DLBENCH_SOURCE_DIR) + "/examples/" + name);
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(m->runner.name, "null") << name;
    Result<Plan> plan = Expand(*m);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_GE(plan->cells.size(), 3u) << name;
  }
  Result<config::Matrix> failures =
      config::LoadMatrix(std::string(DLBENCH_SOURCE_DIR) + "/examples/null-failures.yaml");
  ASSERT_TRUE(failures.ok());
  std::set<std::string> injected;
  Result<Plan> plan = Expand(*failures);
  ASSERT_TRUE(plan.ok());
  for (const Cell& c : plan->cells) injected.insert(c.params.at("inject").get<std::string>());
  const config::ParamSpec* inject = config::FindParam("inject", config::ParamSection::kCell);
  EXPECT_EQ(injected, std::set<std::string>(inject->allowed.begin(), inject->allowed.end()))
      << "one cell per injected failure, plus normal ones";
}

}  // namespace
}  // namespace dlbench::plan
