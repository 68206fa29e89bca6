#include "config/load_rules.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "config/registry.h"

namespace dlbench::config {
namespace {

Combination Cell(std::initializer_list<std::pair<const std::string, Value>> kv) { return Combination(kv); }

std::vector<std::string> Keys(const std::vector<LoadRuleViolation>& v) {
  std::vector<std::string> keys;
  keys.reserve(v.size());
  for (const auto& x : v) keys.push_back(x.key);
  return keys;
}

TEST(LoadRulesTest, ValidCellsPass) {
  EXPECT_TRUE(CheckLoadCell(Cell({{"model", "m"}})).empty());
  EXPECT_TRUE(
      CheckLoadCell(Cell({{"scenario", "infer"}, {"load", "single_stream"}, {"min_queries", 100}})).empty());
  EXPECT_TRUE(CheckLoadCell(Cell({{"scenario", "infer"},
                                  {"load", "server"},
                                  {"target_qps", "max"},
                                  {"latency_bound_ms", 10.0},
                                  {"max_batch", 8},
                                  {"streams", 2},
                                  {"peak_max_probes", 12},
                                  {"peak_resolution", 0.02},
                                  {"peak_max_time_s", 60.0}}))
                  .empty());
  EXPECT_TRUE(CheckLoadCell(Cell({{"scenario", "infer"}, {"load", "multi_stream"}, {"samples_per_query", 4}}))
                  .empty());
  EXPECT_TRUE(
      CheckLoadCell(Cell({{"scenario", "infer"}, {"load", "offline"}, {"offline_samples", 1000}})).empty());
}

TEST(LoadRulesTest, EachRuleOnItsCase) {
  struct Case {
    Combination cell;
    std::vector<std::string> keys;
    std::string message;
  };
  const std::vector<Case> cases = {
      {Cell({{"target_qps", 100.0}}), {"target_qps"}, "applies only with load (this cell has none"},
      {Cell({{"load", "single_stream"}}),
       {"load"},
       "needs scenario: infer (this cell's scenario is the default"},
      {Cell({{"load", "single_stream"}, {"scenario", "train"}}), {"load"}, "scenario is train"},
      {Cell({{"scenario", "infer"}, {"load", "single_stream"}, {"target_qps", 100.0}}),
       {"target_qps"},
       "applies only with load: server (this cell's load is single_stream)"},
      {Cell({{"scenario", "infer"}, {"load", "server"}}), {"load"}, "server needs target_qps"},
      {Cell({{"scenario", "infer"}, {"load", "server"}, {"target_qps", "max"}}),
       {"target_qps"},
       "max needs latency_bound_ms"},
      {Cell({{"scenario", "infer"}, {"load", "offline"}, {"latency_percentile", 0.9}}),
       {"latency_percentile"},
       "single_stream, multi_stream, server"},
      {Cell({{"scenario", "infer"}, {"load", "server"}, {"target_qps", 5.0}, {"samples_per_query", 4}}),
       {"samples_per_query"},
       "applies only with load: multi_stream"},
      {Cell({{"scenario", "infer"}, {"load", "server"}, {"target_qps", 5.0}, {"peak_max_probes", 4}}),
       {"peak_max_probes"},
       "applies only with target_qps: max"},
      {Cell({{"scenario", "infer"}, {"load", "offline"}, {"peak_resolution", 0.1}}),
       {"peak_resolution"},
       "applies only with load: server"},
      {Cell({{"scenario", "infer"}, {"load", "server"}, {"target_qps", 5.0}, {"peak_confirm_s", 15.0}}),
       {"peak_confirm_s"},
       "applies only with target_qps: max"},
  };
  for (const Case& c : cases) {
    const auto v = CheckLoadCell(c.cell);
    EXPECT_EQ(Keys(v), c.keys);
    ASSERT_FALSE(v.empty());
    EXPECT_NE(v[0].message.find(c.message), std::string::npos) << v[0].message;
  }
}

TEST(LoadRulesTest, MatrixErrorsPointAtTheKeyInTheFile) {
  const std::string text =
      "runner: torch\n"                    // 1
      "matrix:\n"                          // 2
      "  model: resnet50\n"                // 3
      "  scenario: infer\n"                // 4
      "  load: [single_stream, server]\n"  // 5
      "  target_qps: 100\n"                // 6
      "include:\n"                         // 7
      "  - load: server\n"                 // 8
      "    latency_bound_ms: 10\n";        // 9
  auto matrix = ParseMatrix(text, "m.yaml");
  ASSERT_TRUE(matrix.ok()) << matrix.error().message;
  const std::vector<Combination> cells = {
      Cell({{"model", "resnet50"}, {"scenario", "infer"}, {"load", "single_stream"}, {"target_qps", 100.0}}),
      Cell({{"model", "resnet50"},
            {"scenario", "infer"},
            {"load", "server"},
            {"target_qps", 100.0},
            {"latency_bound_ms", 10.0}}),
  };
  const Status st = CheckLoadRules(*matrix, cells);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::kInvalidInput);
  EXPECT_EQ(
      st.error().message,
      "m.yaml:6:3: error: target_qps: applies only with load: server (this cell's load is single_stream) "
      "(cell 'load=single_stream,model=resnet50,scenario=infer,target_qps=100.0')");
}

TEST(LoadRulesTest, IncludeEntriesAreLocatedAndDuplicatesReportedOnce) {
  const std::string text =
      "runner: torch\n"         // 1
      "matrix:\n"               // 2
      "  model: [a, b]\n"       // 3
      "  scenario: infer\n"     // 4
      "include:\n"              // 5
      "  - load: server\n"      // 6
      "    target_qps: max\n";  // 7
  auto matrix = ParseMatrix(text, "m.yaml");
  ASSERT_TRUE(matrix.ok()) << matrix.error().message;
  std::vector<Combination> cells;
  for (const char* model : {"a", "b"}) {
    cells.push_back(
        Cell({{"model", model}, {"scenario", "infer"}, {"load", "server"}, {"target_qps", "max"}}));
  }
  const Status st = CheckLoadRules(*matrix, cells);
  ASSERT_FALSE(st.ok());
  // One line per place and message, not one per cell.
  EXPECT_EQ(st.error().message.find('\n'), std::string::npos) << st.error().message;
  EXPECT_EQ(st.error().message.rfind("m.yaml:7:5: error: target_qps: max needs latency_bound_ms", 0), 0u)
      << st.error().message;
  EXPECT_TRUE(CheckLoadRules(*matrix, {Cell({{"model", "a"}})}).ok());
}

// Several include entries set the same key: each cell's error names the entry that made it (the
// one whose other values are the cell's), not the first entry with that key.
TEST(LoadRulesTest, EachCellIsLocatedAtItsOwnIncludeEntry) {
  const std::string text =
      "runner: torch\n"                                                                    // 1
      "matrix:\n"                                                                          // 2
      "  model: [a]\n"                                                                     // 3
      "  scenario: infer\n"                                                                // 4
      "include:\n"                                                                         // 5
      "  - {model: a, batch_size: 8, load: server, target_qps: max}\n"                     // 6
      "  - {model: a, batch_size: 16, load: server, min_queries: 100, target_qps: max}\n"  // 7
      "  - {model: a, batch_size: 32, load: server, target_qps: max}\n";                   // 8
  auto matrix = ParseMatrix(text, "m.yaml");
  ASSERT_TRUE(matrix.ok()) << matrix.error().message;
  const std::vector<Combination> cells = {
      // min_queries as the number 100.0, written 100: the same value.
      Cell({{"model", "a"},
            {"scenario", "infer"},
            {"batch_size", 16},
            {"load", "server"},
            {"min_queries", 100.0},
            {"target_qps", "max"}}),
      Cell({{"model", "a"},
            {"scenario", "infer"},
            {"batch_size", 32},
            {"load", "server"},
            {"target_qps", "max"}}),
  };
  const Status st = CheckLoadRules(*matrix, cells);
  ASSERT_FALSE(st.ok());
  const std::string& message = st.error().message;
  EXPECT_EQ(message.rfind("m.yaml:7:", 0), 0u) << message;
  EXPECT_NE(message.find("\nm.yaml:8:"), std::string::npos) << message;
  EXPECT_EQ(message.find("m.yaml:6:"), std::string::npos) << message;
}

TEST(LoadRulesTest, RegistryTypesTheLoadKeys) {
  const ParamSpec* qps = FindParam("target_qps", ParamSection::kCell);
  ASSERT_NE(qps, nullptr);
  EXPECT_EQ(*ParseParamText(*qps, "max"), Value("max"));
  EXPECT_EQ(*ParseParamText(*qps, "250"), Value(250.0));
  EXPECT_TRUE(ValidateParamValue(*qps, Value("max")).ok());
  const auto bad = ParseParamText(*qps, "fast");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "expected a number > 0 and <= 1000000000 or max (got 'fast')");
  EXPECT_FALSE(ParseParamText(*qps, "0").ok());
  const ParamSpec* bound = FindParam("latency_bound_ms", ParamSection::kCell);
  ASSERT_NE(bound, nullptr);
  const auto zero = ParseParamText(*bound, "0");
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error().message, "expected a number > 0 and <= 10000000 (got '0')");
  EXPECT_FALSE(ParseParamText(*bound, "-3").ok());
  EXPECT_FALSE(ParseParamText(*FindParam("load", ParamSection::kCell), "burst").ok());
  // No load key has a constant default: cells without `load` keep their keys and labels.
  for (const char* key :
       {"load", "target_qps", "latency_bound_ms", "samples_per_query", "max_batch", "batch_timeout_us",
        "streams", "offline_samples", "min_queries", "early_stopping_confidence", "sample_library_size",
        "input_residency", "latency_percentile", "query_interval_ms"}) {
    const ParamSpec* spec = FindParam(key, ParamSection::kCell);
    ASSERT_NE(spec, nullptr) << key;
    EXPECT_FALSE(spec->default_value.has_value()) << key;
    // The runners that serve queries: torch, null on its virtual clock, and command runners (the
    // Python client's load driver) (docs/load.md "Parameters").
    EXPECT_EQ(spec->scope, Scope::kLoad) << key;
    EXPECT_TRUE(ScopeValidForRunner(spec->scope, "torch")) << key;
    EXPECT_TRUE(ScopeValidForRunner(spec->scope, "null")) << key;
    EXPECT_TRUE(ScopeValidForRunner(spec->scope, "command")) << key;
  }
}

TEST(LoadRulesTest, ACommandRunnersLoadKeysAreTypedAndCheckedWithTheirPosition) {
  auto ok = ParseMatrix(
      "runner: {command: [python3, -m, dlbench_runners.torch]}\nmatrix:\n  scenario: infer\n  load: server\n"
      "  target_qps: [100, max]\n  latency_bound_ms: 5\n  fruit: 3\n",
      "m.yaml");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  for (const Axis& axis : ok->axes) {
    if (axis.name == "target_qps") {
      EXPECT_TRUE(axis.values[0].is_number_float()) << "typed by the registry (a number), not passed through";
      EXPECT_EQ(axis.values[1], "max");
    }
    if (axis.name == "latency_bound_ms") {
      EXPECT_TRUE(axis.values[0].is_number_float());
    }
  }
  auto bad = ParseMatrix(
      "runner: {command: [x]}\nmatrix:\n  scenario: infer\n  load: server\n  target_qps: 100\n"
      "  latency_bound_ms: 0\n",
      "m.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "m.yaml:6:21: error: latency_bound_ms: expected a number > 0 and <= 10000000 (got '0')");
  auto scenario =
      ParseMatrix("runner: {command: [x]}\nmatrix:\n  scenario: infer\n  load: burst\n", "m.yaml");
  ASSERT_FALSE(scenario.ok());
  EXPECT_NE(scenario.error().message.find("m.yaml:4:9: error: load: expected one of"), std::string::npos)
      << scenario.error().message;
}

TEST(LoadRulesTest, MatrixValueErrorsComeWithTheirPosition) {
  auto m = ParseMatrix(
      "runner: torch\nmatrix:\n  model: resnet50\n  scenario: infer\n  load: server\n  target_qps: 100\n"
      "  latency_bound_ms: 0\n",
      "m.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message,
            "m.yaml:7:21: error: latency_bound_ms: expected a number > 0 and <= 10000000 (got '0')");
  for (const char* value : {"3601", "-1"}) {
    auto confirm = ParseMatrix(
        std::string("runner: null\nmatrix:\n  scenario: infer\n  load: server\n  target_qps: max\n"
                    "  latency_bound_ms: 10\n  peak_confirm_s: ") +
            value + "\n",
        "m.yaml");
    ASSERT_FALSE(confirm.ok()) << value;
    EXPECT_EQ(confirm.error().message,
              std::string("m.yaml:7:19: error: peak_confirm_s: expected a number between 0 and 3600 (got '") +
                  value + "')");
  }
}

// The null runner serves load cells on its virtual clock (runners/null/virtual_load.h), so it takes
// the load keys; its service time is its own and, like every load key, applies only with load.
TEST(LoadRulesTest, TheNullRunnerTakesTheLoadKeysAndItsServiceTimeIsItsOwn) {
  auto null = ParseMatrix(
      "runner: null\nmatrix:\n  scenario: infer\n  load: single_stream\n  service_us: 500\n", "m.yaml");
  EXPECT_TRUE(null.ok()) << null.error().message;
  auto torch = ParseMatrix(
      "runner: torch\nmatrix:\n  model: resnet50\n  scenario: infer\n  load: offline\n  service_us: 5\n",
      "m.yaml");
  ASSERT_FALSE(torch.ok());
  EXPECT_EQ(torch.error().message,
            "m.yaml:6:3: error: service_us: valid only with runner null (this matrix's runner is torch)");
  EXPECT_EQ(CheckLoadCell({{"scenario", "infer"}, {"service_us", 5}}).at(0).key, "service_us");
}

TEST(ConvergeRulesTest, EachRuleOnItsCase) {
  struct Case {
    Combination cell;
    std::vector<std::string> keys;
    std::string message;
  };
  const std::vector<Case> cases = {
      {Cell({{"scenario", "converge"}, {"target_accuracy", 0.9}, {"eval_every", 10}}), {}, ""},
      {Cell({{"scenario", "converge"}, {"target_loss", 0.3}}), {}, ""},
      {Cell({{"model", "m"}}), {}, ""},
      {Cell({{"target_accuracy", 0.9}}),
       {"target_accuracy"},
       "applies only with scenario: converge (this cell's is the default, train)"},
      {Cell({{"scenario", "infer"}, {"max_epochs", 3}, {"dataset_dir", "/d"}}),
       {"max_epochs", "dataset_dir"},
       "applies only with scenario: converge (this cell's is infer)"},
      {Cell({{"scenario", "converge"}}), {"scenario"}, "converge needs target_accuracy or target_loss"},
      {Cell({{"scenario", "converge"}, {"target_accuracy", 0.9}, {"target_loss", 0.3}}),
       {"target_loss"},
       "one target: target_accuracy or target_loss, not both"},
      {Cell({{"scenario", "converge"}, {"target_accuracy", 0.9}, {"data", "host"}}),
       {"data"},
       "does not apply with scenario: converge"},
  };
  for (const Case& c : cases) {
    const auto v = CheckConvergeCell(c.cell);
    std::vector<std::string> keys = Keys(v);
    std::sort(keys.begin(), keys.end());
    std::vector<std::string> expected = c.keys;
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(keys, expected);
    if (!c.message.empty()) {
      ASSERT_FALSE(v.empty());
      EXPECT_NE(v[0].message.find(c.message), std::string::npos) << v[0].message;
    }
  }
}

TEST(ConvergeRulesTest, MatrixErrorsPointAtTheKeyInTheFile) {
  const std::string text =
      "runner: torch\n"                  // 1
      "matrix:\n"                        // 2
      "  model: fashion_cnn\n"           // 3
      "  scenario: [train, converge]\n"  // 4
      "  target_accuracy: 0.9\n";        // 5
  auto matrix = ParseMatrix(text, "m.yaml");
  ASSERT_TRUE(matrix.ok()) << matrix.error().message;
  const Status st = CheckLoadRules(
      *matrix, {Cell({{"model", "fashion_cnn"}, {"scenario", "train"}, {"target_accuracy", 0.9}}),
                Cell({{"model", "fashion_cnn"}, {"scenario", "converge"}, {"target_accuracy", 0.9}})});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "m.yaml:5:3: error: target_accuracy: applies only with scenario: converge (this cell's is train) "
            "(cell 'model=fashion_cnn,scenario=train,target_accuracy=0.9')");
  // No converge key has a constant default: every other cell keeps its key.
  for (const char* key : {"target_accuracy", "target_loss", "eval_every", "max_epochs", "max_train_time_s",
                          "dataset_dir", "train_samples", "eval_samples", "eval_precisions"}) {
    const ParamSpec* spec = FindParam(key, ParamSection::kCell);
    ASSERT_NE(spec, nullptr) << key;
    EXPECT_FALSE(spec->default_value.has_value()) << key;
    EXPECT_EQ(spec->scope, Scope::kTorch) << key;
  }
}

TEST(AgreementRulesTest, MinAgreementOnlyWithInferAndEvaluationSamples) {
  EXPECT_TRUE(CheckAgreementCell(Cell({{"scenario", "infer"}, {"min_agreement", "bf16=0.9"}})).empty());
  EXPECT_TRUE(CheckAgreementCell(Cell({{"scenario", "train"}})).empty());
  const auto train = CheckAgreementCell(Cell({{"min_agreement", "bf16=0.9"}}));
  ASSERT_EQ(train.size(), 1U);
  EXPECT_EQ(
      train[0].message,
      "applies only with scenario: infer, whose evaluation outputs it checks (this cell's is the default, "
      "train)");
  const auto none = CheckAgreementCell(
      Cell({{"scenario", "infer"}, {"reference_samples", 0}, {"min_agreement", "bf16=0.9"}}));
  ASSERT_EQ(none.size(), 1U);
  EXPECT_EQ(none[0].message, "has nothing to check with reference_samples: 0 (no evaluation outputs)");
}

// The tolerances on |diff| follow min_agreement's rules, each key named in its own violation.
TEST(AgreementRulesTest, DiffTolerancesOnlyWithInferAndEvaluationSamples) {
  EXPECT_TRUE(
      CheckAgreementCell(
          Cell({{"scenario", "infer"}, {"max_abs_diff", "bf16=0.5"}, {"max_mean_abs_diff", "int8=0.1"}}))
          .empty());
  const auto train = CheckAgreementCell(
      Cell({{"scenario", "train"}, {"max_abs_diff", "bf16=0.5"}, {"max_mean_abs_diff", "bf16=0.1"}}));
  ASSERT_EQ(train.size(), 2U);
  EXPECT_EQ(train[0].key, "max_abs_diff");
  EXPECT_EQ(train[1].key, "max_mean_abs_diff");
  EXPECT_EQ(train[1].message,
            "applies only with scenario: infer, whose evaluation outputs it checks (this cell's is train)");
  const auto none = CheckAgreementCell(
      Cell({{"scenario", "infer"}, {"reference_samples", 0}, {"max_mean_abs_diff", "bf16=0.1"}}));
  ASSERT_EQ(none.size(), 1U);
  EXPECT_EQ(none[0].key, "max_mean_abs_diff");
  EXPECT_EQ(none[0].message, "has nothing to check with reference_samples: 0 (no evaluation outputs)");
}

// A malformed value is refused where it is written.
TEST(AgreementRulesTest, AMalformedDiffToleranceIsAnErrorAtItsPlace) {
  const std::string text =
      "runner: torch\n"                             // 1
      "matrix:\n"                                   // 2
      "  model: bert_base\n"                        // 3
      "  scenario: infer\n"                         // 4
      "  max_mean_abs_diff: \"bf16=0.1;tf8=1\"\n";  // 5
  auto matrix = ParseMatrix(text, "m.yaml");
  ASSERT_FALSE(matrix.ok());
  EXPECT_EQ(matrix.error().message,
            "m.yaml:5:22: error: max_mean_abs_diff: expected precision=number pairs like bf16=0.05;int8=0.5, "
            "each precision at most once (fp32, tf32, bf16, fp16, int8), each number between 0 and 1000000 "
            "(got 'bf16=0.1;tf8=1')");
}

TEST(AgreementRulesTest, MatrixErrorsPointAtTheKeyInTheFile) {
  const std::string text =
      "runner: torch\n"                   // 1
      "matrix:\n"                         // 2
      "  model: bert_base\n"              // 3
      "  scenario: train\n"               // 4
      "  min_agreement: \"int8=0.9\"\n";  // 5
  auto matrix = ParseMatrix(text, "m.yaml");
  ASSERT_TRUE(matrix.ok()) << matrix.error().message;
  const Status st = CheckLoadRules(
      *matrix, {Cell({{"model", "bert_base"}, {"scenario", "train"}, {"min_agreement", "int8=0.9"}})});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(
      st.error().message,
      "m.yaml:5:3: error: min_agreement: applies only with scenario: infer, whose evaluation outputs it "
      "checks (this cell's is train) (cell 'min_agreement=\"int8=0.9\",model=bert_base,scenario=train')");
}

}  // namespace
}  // namespace dlbench::config
