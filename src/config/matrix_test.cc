// Matrix files: a valid file becomes the typed Matrix; every class of bad input is reported with
// its exact file:line:col, and all problems of a file are reported together.
#include "config/matrix.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <set>
#include <string>

#include "common/files.h"
#include "config/registry.h"

namespace dlbench::config {
namespace {

TEST(MatrixTest, ParsesAFullFile) {
  const std::string text =
      "name: sweep\n"
      "runner: torch\n"
      "matrix:\n"
      "  model: [resnet50, mobilenet_v2]\n"
      "  batch_size: [1, 8]\n"
      "  device: cuda:1\n"
      "  cudnn_benchmark: [true, false]\n"
      "exclude:\n"
      "  - model: mobilenet_v2\n"
      "    batch_size: 8\n"
      "include:\n"
      "  - model: resnet50\n"
      "    image_size: 160\n"
      "repetitions: 3\n"
      "seed: 42\n"
      "timeout_s: 90\n"
      "ordering: interleaved\n"
      "order_seed: 7\n"
      "measure:\n"
      "  max_time_s: 30\n"
      "  idle_baseline_s: 2\n";
  Result<Matrix> m = ParseMatrix(text, "m.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->path, "m.yaml");
  EXPECT_EQ(m->text, text);
  EXPECT_EQ(m->name, "sweep");
  EXPECT_EQ(m->runner.name, "torch");
  ASSERT_EQ(m->axes.size(), 4u);
  EXPECT_EQ(m->axes[0].name, "model");
  EXPECT_EQ(m->axes[0].values, (std::vector<Value>{"resnet50", "mobilenet_v2"}));
  EXPECT_EQ(m->axes[0].where.line, 4);
  EXPECT_EQ(m->axes[0].where.column, 3);
  EXPECT_EQ(m->axes[1].values, (std::vector<Value>{1, 8}));
  EXPECT_TRUE(m->axes[1].values[0].is_number_integer());
  EXPECT_EQ(m->axes[2].values, (std::vector<Value>{"cuda:1"})) << "a scalar is an axis of one value";
  EXPECT_EQ(m->axes[3].values, (std::vector<Value>{true, false}));
  ASSERT_EQ(m->exclude.size(), 1u);
  EXPECT_EQ(m->exclude[0], (Combination{{"model", "mobilenet_v2"}, {"batch_size", 8}}));
  ASSERT_EQ(m->include.size(), 1u);
  EXPECT_EQ(m->include[0], (Combination{{"model", "resnet50"}, {"image_size", 160}}));
  EXPECT_EQ(m->repetitions, 3);
  EXPECT_EQ(m->seed, 42u);
  EXPECT_DOUBLE_EQ(m->timeout_s, 90.0);
  EXPECT_EQ(m->ordering, Ordering::kInterleaved);
  EXPECT_EQ(m->order_seed, 7u);
  EXPECT_DOUBLE_EQ(m->measure.max_time_s, 30.0);
  ASSERT_TRUE(m->measure.idle_baseline_s.has_value());
  EXPECT_DOUBLE_EQ(*m->measure.idle_baseline_s, 2.0);
  EXPECT_EQ(m->measure.min_steps, MeasureSettings().min_steps) << "unset keys keep their defaults";
}

TEST(MatrixTest, DefaultsWhenOnlyAMatrixIsGiven) {
  Result<Matrix> m = ParseMatrix("matrix:\n  step_ms: [1, 2.5]\n", "m.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->runner.name, "null");
  EXPECT_EQ(m->repetitions, 1);
  EXPECT_EQ(m->ordering, Ordering::kGrouped);
  EXPECT_EQ(m->axes[0].values, (std::vector<Value>{1.0, 2.5}));
  EXPECT_TRUE(m->axes[0].values[0].is_number_float()) << "a number parameter stores doubles";
  EXPECT_TRUE(ParseMatrix("runner: null\nmatrix: {step_ms: 1}\n", "m.yaml").ok());
}

// Every measure: key of the registry lands in its own MeasureSettings field.
TEST(MatrixTest, EveryMeasureKeyIsApplied) {
  const std::string text =
      "matrix: {step_ms: 1}\n"
      "measure:\n"
      "  min_steps: 11\n"
      "  max_steps: 500\n"
      "  min_time_s: 0.5\n"
      "  max_time_s: 9\n"
      "  target_rel_ci: 0.05\n"
      "  ci_level: 0.99\n"
      "  min_warmup_steps: 4\n"
      "  idle_baseline_s: 3\n"
      "  sample_interval_ms: 50\n"
      "  retry_disturbed: 2\n";
  std::set<std::string> registry_keys;
  for (const ParamSpec& spec : Registry()) {
    if (spec.section == ParamSection::kMeasure) registry_keys.insert(spec.name);
  }
  for (const std::string& key : registry_keys) {
    EXPECT_NE(text.find("  " + key + ":"), std::string::npos) << "add " << key << " to this test";
  }
  Result<Matrix> m = ParseMatrix(text, "m.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const MeasureSettings& s = m->measure;
  EXPECT_EQ(s.min_steps, 11);
  EXPECT_EQ(s.max_steps, 500);
  EXPECT_DOUBLE_EQ(s.min_time_s, 0.5);
  EXPECT_DOUBLE_EQ(s.max_time_s, 9.0);
  EXPECT_DOUBLE_EQ(s.target_rel_ci, 0.05);
  EXPECT_DOUBLE_EQ(s.ci_level, 0.99);
  EXPECT_EQ(s.min_warmup_steps, 4);
  EXPECT_DOUBLE_EQ(s.idle_baseline_s.value_or(-1), 3.0);
  EXPECT_DOUBLE_EQ(s.sample_interval_ms, 50.0);
  EXPECT_EQ(s.retry_disturbed, 2);
}

TEST(MatrixTest, CommandRunnerPassesUnknownKeysThrough) {
  Result<Matrix> m = ParseMatrix(
      "runner:\n"
      "  command: [python3, bench.py, --fast]\n"
      "matrix:\n"
      "  batch_size: [1, 2]\n"
      "  fruit: [apple, '1']\n"
      "  n: [1, 2.5, true]\n"
      "  step_ms: 3\n",
      "m.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->runner.name, "command");
  EXPECT_EQ(m->runner.command, (std::vector<std::string>{"python3", "bench.py", "--fast"}));
  EXPECT_EQ(m->axes[1].values, (std::vector<Value>{"apple", "1"}));
  EXPECT_TRUE(m->axes[1].values[1].is_string()) << "quoted scalars stay strings";
  EXPECT_TRUE(m->axes[2].values[0].is_number_integer());
  EXPECT_TRUE(m->axes[2].values[1].is_number_float());
  EXPECT_TRUE(m->axes[2].values[2].is_boolean());
  EXPECT_TRUE(m->axes[3].values[0].is_number_integer())
      << "a null-runner key is not typed for a command runner";
  // Core keys are still validated.
  Result<Matrix> bad = ParseMatrix("runner: {command: [x]}\nmatrix:\n  batch_size: 0\n", "m.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "m.yaml:3:15: error: batch_size: expected an integer between 1 and 1048576 or max (got '0')");
}

struct ErrorCase {
  const char* name;
  const char* yaml;
  const char* message;  // the whole error message
};

class MatrixErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(MatrixErrorTest, ReportsExactLocationAndExpectation) {
  const ErrorCase& c = GetParam();
  Result<Matrix> m = ParseMatrix(c.yaml, "m.yaml");
  ASSERT_FALSE(m.ok()) << c.name;
  EXPECT_EQ(m.error().kind, ErrorKind::kInvalidInput);
  EXPECT_EQ(m.error().message, c.message) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MatrixErrorTest,
    ::testing::Values(
        ErrorCase{"unknown_axis_with_suggestion", "matrix:\n  batchsize: [1, 2]\n",
                  "m.yaml:2:3: error: matrix: unknown key 'batchsize' (did you mean 'batch_size'?)"},
        ErrorCase{"unknown_axis_far_from_any", "matrix:\n  flux: 1\n",
                  "m.yaml:2:3: error: matrix: unknown key 'flux'"},
        ErrorCase{"unknown_top_level", "matrix: {batch_size: 1}\nrepetition: 3\n",
                  "m.yaml:2:1: error: unknown key 'repetition' (did you mean 'repetitions'?)"},
        ErrorCase{"unknown_measure_key", "matrix: {batch_size: 1}\nmeasure:\n  min_step: 5\n",
                  "m.yaml:3:3: error: measure: unknown key 'min_step' (did you mean 'min_steps'?)"},
        ErrorCase{"unknown_runner_key", "runner: {comand: [x]}\nmatrix: {batch_size: 1}\n",
                  "m.yaml:1:9: error: runner: expected a mapping {command: [argv...]} (got no 'command')\n"
                  "m.yaml:1:10: error: runner: unknown key 'comand' (did you mean 'command'?)"},
        ErrorCase{"duplicate_axis", "matrix:\n  batch_size: 1\n  batch_size: 2\n",
                  "m.yaml:3:3: error: matrix: duplicate key 'batch_size' (first at 2:3)"},
        ErrorCase{"duplicate_top_level", "matrix: {batch_size: 1}\nseed: 1\nseed: 2\n",
                  "m.yaml:3:1: error: duplicate key 'seed' (first at 2:1)"},
        ErrorCase{"duplicate_in_include", "matrix: {batch_size: 1}\ninclude:\n  - {step_ms: 1, step_ms: 2}\n",
                  "m.yaml:3:18: error: include[0]: duplicate key 'step_ms' (first at 3:6)"},
        ErrorCase{
            "negative_batch", "matrix:\n  batch_size: [1, -4]\n",
            "m.yaml:2:19: error: batch_size: expected an integer between 1 and 1048576 or max (got '-4')"},
        ErrorCase{"fraction_for_int", "matrix:\n  world_size: 1.5\n",
                  "m.yaml:2:15: error: world_size: expected an integer between 1 and 1024 (got '1.5')"},
        ErrorCase{"enum_outside_set", "matrix:\n  precision: fp64\n",
                  "m.yaml:2:14: error: precision: expected one of fp32, tf32, bf16, fp16, int8 (got 'fp64')"},
        ErrorCase{"bool_not_true_false",
                  "runner: torch\nmatrix:\n  model: resnet50\n  cudnn_benchmark: yes\n",
                  "m.yaml:4:20: error: cudnn_benchmark: expected true or false (got 'yes')"},
        ErrorCase{"axis_is_mapping", "matrix:\n  batch_size: {a: 1}\n",
                  "m.yaml:2:15: error: batch_size: expected a value or a list of values (got a mapping)"},
        ErrorCase{
            "nested_list_value", "matrix:\n  batch_size: [[1]]\n",
            "m.yaml:2:16: error: batch_size: expected an integer between 1 and 1048576 or max (got a list)"},
        ErrorCase{"empty_axis", "matrix:\n  batch_size: []\n",
                  "m.yaml:2:15: error: batch_size: expected a non-empty list of values (got [])"},
        ErrorCase{"repeated_axis_value", "matrix:\n  batch_size: [1, 1]\n",
                  "m.yaml:2:19: error: batch_size: value 1 is listed twice (repeat cells with repetitions)"},
        ErrorCase{
            "empty_matrix", "matrix: {}\n",
            "m.yaml:1:9: error: matrix: expected a mapping of at least one parameter to a value or a list "
            "of values (got an empty mapping)"},
        ErrorCase{
            "null_matrix", "matrix:\nseed: 1\n",
            "m.yaml:1:1: error: matrix: expected a mapping of at least one parameter to a value or a list "
            "of values (got null)"},
        ErrorCase{"missing_matrix", "seed: 1\n",
                  "m.yaml:1:1: error: missing required key 'matrix' (the axes to run)"},
        ErrorCase{"empty_file", "",
                  "m.yaml:1:1: error: the file is empty; expected a mapping with at least 'matrix'"},
        ErrorCase{"root_is_list", "- a\n- b\n",
                  "m.yaml:1:1: error: expected a mapping of top-level keys (got a list)"},
        ErrorCase{"null_scope_with_torch", "runner: torch\nmatrix:\n  model: resnet50\n  step_ms: 2\n",
                  "m.yaml:4:3: error: step_ms: valid only with runner null (this matrix's runner is torch)"},
        ErrorCase{
            "torch_scope_with_null", "matrix:\n  base_width: 64\n",
            "m.yaml:2:3: error: base_width: valid only with runner torch (this matrix's runner is null)"},
        ErrorCase{"torch_needs_model", "runner: torch\nmatrix:\n  batch_size: 1\n",
                  "m.yaml:2:1: error: matrix: 'model' is required with runner torch (add it as an axis)"},
        ErrorCase{
            "bad_runner_name", "runner: tf\nmatrix: {batch_size: 1}\n",
            "m.yaml:1:9: error: runner: expected null, torch or a mapping {command: [argv...]} (got 'tf')"},
        ErrorCase{
            "command_as_string", "runner: {command: python3 x.py}\nmatrix: {batch_size: 1}\n",
            "m.yaml:1:19: error: runner.command: expected a non-empty list of program and arguments, e.g. "
            "[python3, bench.py] (got 'python3 x.py')"},
        ErrorCase{"repetitions_zero", "matrix: {batch_size: 1}\nrepetitions: 0\n",
                  "m.yaml:2:14: error: repetitions: expected an integer between 1 and 100000 (got '0')"},
        ErrorCase{"timeout_zero", "matrix: {batch_size: 1}\ntimeout_s: 0\n",
                  "m.yaml:2:12: error: timeout_s: expected a number > 0 and <= 604800 (got '0')"},
        ErrorCase{"ordering_unknown", "matrix: {batch_size: 1}\nordering: random\n",
                  "m.yaml:2:11: error: ordering: expected one of grouped, interleaved (got 'random')"},
        ErrorCase{"measure_min_over_max",
                  "matrix: {batch_size: 1}\nmeasure:\n  min_steps: 50\n  max_steps: 20\n",
                  "m.yaml:4:14: error: measure.max_steps: expected min_steps <= max_steps (got min_steps 50, "
                  "max_steps 20)"},
        ErrorCase{"measure_min_over_default_max", "matrix: {batch_size: 1}\nmeasure:\n  min_time_s: 100\n",
                  "m.yaml:3:15: error: measure.min_time_s: expected min_time_s <= max_time_s (got min_time_s "
                  "100.0, max_time_s 60.0)"},
        ErrorCase{"measure_ci_level", "matrix: {batch_size: 1}\nmeasure:\n  ci_level: 0.4\n",
                  "m.yaml:3:13: error: measure.ci_level: expected a number > 0.5 and < 1 (got '0.4')"},
        ErrorCase{"measure_target", "matrix: {batch_size: 1}\nmeasure: {target_rel_ci: 1}\n",
                  "m.yaml:2:26: error: measure.target_rel_ci: expected a number > 0 and < 1 (got '1')"},
        ErrorCase{"exclude_names_non_axis", "matrix:\n  batch_size: [1, 2]\nexclude:\n  - precision: fp16\n",
                  "m.yaml:4:5: error: exclude[0]: 'precision' is not a matrix axis"},
        ErrorCase{
            "exclude_typo_of_axis", "matrix:\n  batch_size: [1, 2]\nexclude:\n  - batchsize: 1\n",
            "m.yaml:4:5: error: exclude[0]: 'batchsize' is not a matrix axis (did you mean 'batch_size'?)"},
        ErrorCase{"exclude_value_not_in_axis", "matrix:\n  batch_size: [1, 2]\nexclude:\n  - batch_size: 7\n",
                  "m.yaml:4:17: error: exclude[0].batch_size: 7 is not a value of the axis (1, 2)"},
        ErrorCase{"exclude_not_a_list", "matrix:\n  batch_size: [1, 2]\nexclude: {batch_size: 1}\n",
                  "m.yaml:3:10: error: exclude: expected a list of mappings (got a mapping)"},
        ErrorCase{
            "empty_include_entry", "matrix:\n  batch_size: [1, 2]\ninclude:\n  - {}\n",
            "m.yaml:4:5: error: include[0]: expected a mapping of parameter to value (got an empty mapping)"},
        ErrorCase{"include_bad_value", "matrix:\n  batch_size: [1, 2]\ninclude:\n  - batch_size: x\n",
                  "m.yaml:4:17: error: include[0].batch_size: expected an integer between 1 and 1048576 or "
                  "max (got 'x')"},
        ErrorCase{"include_unknown_key", "matrix:\n  batch_size: [1, 2]\ninclude:\n  - setp_ms: 2\n",
                  "m.yaml:4:5: error: include[0]: unknown key 'setp_ms' (did you mean 'step_ms'?)"}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return std::string(info.param.name); });

TEST(MatrixTest, ReportsEveryErrorOfAFileSortedByPosition) {
  Result<Matrix> m = ParseMatrix(
      "matrix:\n"
      "  batchsize: [1, 2]\n"
      "  precision: fp64\n"
      "repetitions: -1\n"
      "measure:\n"
      "  ci_level: 2\n",
      "bad.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message,
            "bad.yaml:2:3: error: matrix: unknown key 'batchsize' (did you mean 'batch_size'?)\n"
            "bad.yaml:3:14: error: precision: expected one of fp32, tf32, bf16, fp16, int8 (got 'fp64')\n"
            "bad.yaml:4:14: error: repetitions: expected an integer between 1 and 100000 (got '-1')\n"
            "bad.yaml:6:13: error: measure.ci_level: expected a number > 0.5 and < 1 (got '2')");
}

TEST(MatrixTest, YamlSyntaxErrorsCarryTheParserPosition) {
  Result<Matrix> m = ParseMatrix("matrix:\n  batch_size: [1, 2\nseed: 1\n", "m.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, ErrorKind::kInvalidInput);
  EXPECT_EQ(m.error().message.rfind("m.yaml:3:", 0), 0u) << m.error().message;
  EXPECT_NE(m.error().message.find("error: YAML syntax error: "), std::string::npos) << m.error().message;

  Result<Matrix> tab = ParseMatrix("matrix:\n  a: b: c\n", "m.yaml");
  ASSERT_FALSE(tab.ok());
  EXPECT_EQ(tab.error().message, "m.yaml:2:7: error: YAML syntax error: illegal map value");
}

class LoadMatrixTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/dlbench-config-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::remove((dir_ + "/m.yaml").c_str());
    rmdir(dir_.c_str());
  }
  std::string dir_;
};

TEST_F(LoadMatrixTest, KeepsTheFileBytes) {
  const std::string text = "# a comment kept verbatim\nmatrix:\n  batch_size: [1, 2]   # trailing\n";
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/m.yaml", text).ok());
  Result<Matrix> m = LoadMatrix(dir_ + "/m.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->text, text);
  EXPECT_EQ(m->path, dir_ + "/m.yaml");
}

TEST_F(LoadMatrixTest, ErrorsNameTheFile) {
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/m.yaml", "matrix:\n  batch_size: 0\n").ok());
  Result<Matrix> bad = LoadMatrix(dir_ + "/m.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(
      bad.error().message,
      dir_ + "/m.yaml:2:15: error: batch_size: expected an integer between 1 and 1048576 or max (got '0')");

  Result<Matrix> missing = LoadMatrix(dir_ + "/absent.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(missing.error().message.rfind(dir_ + "/absent.yaml: error: cannot read", 0), 0u)
      << missing.error().message;

  Result<Matrix> directory = LoadMatrix(dir_);
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.error().kind, ErrorKind::kIo);
  EXPECT_NE(directory.error().message.find("is a directory"), std::string::npos);
}

}  // namespace
}  // namespace dlbench::config
