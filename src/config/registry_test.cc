// The parameter registry: its entries are coherent, values parse and validate as documented, and
// docs/config-reference.md is what the registry renders.
#include "config/registry.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "common/files.h"
#include "config/cuda_alloc_conf.h"

namespace dlbench::config {
namespace {

TEST(RegistryTest, NamesAreUniqueSnakeCaseAndDefaultsAreValid) {
  std::set<std::pair<int, std::string>> seen;
  for (const ParamSpec& spec : Registry()) {
    SCOPED_TRACE(spec.name);
    EXPECT_TRUE(seen.insert({static_cast<int>(spec.section), spec.name}).second) << "duplicate entry";
    EXPECT_EQ(spec.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_"), std::string::npos);
    EXPECT_FALSE(spec.help.empty());
    if (spec.type == ParamType::kEnum) {
      EXPECT_FALSE(spec.allowed.empty());
    }
    if (spec.default_value && spec.type != ParamType::kRunner) {
      EXPECT_TRUE(ValidateParamValue(spec, *spec.default_value).ok()) << spec.default_value->dump();
    }
    if (!spec.default_from.empty()) {
      const ParamSpec* source = FindParam(spec.default_from, spec.section);
      ASSERT_NE(source, nullptr);
      EXPECT_EQ(source->type, spec.type);
    }
    if (spec.section != ParamSection::kCell) {
      EXPECT_EQ(spec.scope, Scope::kCore);
    }
  }
}

TEST(RegistryTest, MeasureDefaultsComeFromMeasureSettings) {
  const MeasureSettings defaults;
  EXPECT_EQ(*FindParam("min_steps", ParamSection::kMeasure)->default_value, Value(defaults.min_steps));
  EXPECT_EQ(*FindParam("max_time_s", ParamSection::kMeasure)->default_value, Value(defaults.max_time_s));
  EXPECT_EQ(*FindParam("ci_level", ParamSection::kMeasure)->default_value, Value(defaults.ci_level));
  EXPECT_FALSE(FindParam("idle_baseline_s", ParamSection::kMeasure)->default_value.has_value());
  EXPECT_EQ(*FindParam("timeout_s", ParamSection::kTopLevel)->default_value, Value(Matrix().timeout_s));
}

TEST(RegistryTest, ScopesSelectParametersByRunner) {
  auto names = [](const std::string& runner) {
    std::set<std::string> out;
    for (const ParamSpec* spec : CellParamsForRunner(runner)) out.insert(spec->name);
    return out;
  };
  EXPECT_TRUE(names("null").count("step_ms"));
  EXPECT_FALSE(names("null").count("base_width"));
  EXPECT_TRUE(names("torch").count("base_width"));
  // The input's size is read by both: the torch runner's models and dlbench-null's memory model.
  EXPECT_TRUE(names("null").count("image_size"));
  EXPECT_TRUE(names("torch").count("image_size"));
  EXPECT_FALSE(names("command").count("seq_len"));
  EXPECT_FALSE(names("torch").count("step_ms"));
  // A command runner: the core keys, and the load keys (the Python client serves load cells).
  const std::set<std::string> command = names("command");
  EXPECT_EQ(command, (std::set<std::string>{"model",
                                            "scenario",
                                            "batch_size",
                                            "boundary_min",
                                            "boundary_max",
                                            "boundary_max_probes",
                                            "boundary_resolution",
                                            "boundary_probe_steps",
                                            "boundary_probe_process",
                                            "boundary_guide",
                                            "boundary_seed",
                                            "memory_cap",
                                            "cuda_alloc_conf",
                                            "host_allocator",
                                            "device",
                                            "precision",
                                            "strategy",
                                            "world_size",
                                            "load",
                                            "target_qps",
                                            "latency_bound_ms",
                                            "peak_max_probes",
                                            "peak_resolution",
                                            "peak_max_time_s",
                                            "peak_min_probe_s",
                                            "peak_confirm_s",
                                            "latency_percentile",
                                            "samples_per_query",
                                            "query_interval_ms",
                                            "max_batch",
                                            "batch_timeout_us",
                                            "streams",
                                            "offline_samples",
                                            "min_queries",
                                            "early_stopping_confidence",
                                            "sample_library_size",
                                            "input_residency"}));
  EXPECT_EQ(FindParam("batch_size", ParamSection::kTopLevel), nullptr);
  EXPECT_EQ(FindParam("min_steps", ParamSection::kMeasure)->type, ParamType::kInt);
}

struct ParseCase {
  const char* param;
  const char* text;
  const char* expected_json;  // the typed value, or nullptr when an error is expected
  const char* expected_error;
};

void PrintTo(const ParseCase& c, std::ostream* os) { *os << c.param << "='" << c.text << "'"; }

class ParseParamTextTest : public ::testing::TestWithParam<ParseCase> {};

TEST_P(ParseParamTextTest, TypesAndValidates) {
  const ParseCase& c = GetParam();
  const ParamSpec* spec = FindParam(c.param, ParamSection::kCell);
  if (spec == nullptr) spec = FindParam(c.param, ParamSection::kMeasure);
  if (spec == nullptr) spec = FindParam(c.param, ParamSection::kTopLevel);
  ASSERT_NE(spec, nullptr) << c.param;
  Result<Value> value = ParseParamText(*spec, c.text);
  if (c.expected_json != nullptr) {
    ASSERT_TRUE(value.ok()) << value.error().message;
    EXPECT_EQ(value->dump(), c.expected_json);
    auto kind = [](const Value& v) {
      return v.is_number_integer() ? "integer" : v.is_number_float() ? "float" : v.type_name();
    };
    EXPECT_STREQ(kind(*value), kind(Value::parse(c.expected_json)));
  } else {
    ASSERT_FALSE(value.ok()) << value->dump();
    EXPECT_EQ(value.error().kind, ErrorKind::kInvalidInput);
    EXPECT_EQ(value.error().message, c.expected_error);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ParseParamTextTest,
    ::testing::Values(
        ParseCase{"batch_size", "8", "8", nullptr}, ParseCase{"batch_size", "+8", "8", nullptr},
        ParseCase{"batch_size", "-4", nullptr, "expected an integer between 1 and 1048576 or max (got '-4')"},
        ParseCase{"batch_size", "0", nullptr, "expected an integer between 1 and 1048576 or max (got '0')"},
        ParseCase{"batch_size", "1.5", nullptr,
                  "expected an integer between 1 and 1048576 or max (got '1.5')"},
        ParseCase{"batch_size", "0x10", nullptr,
                  "expected an integer between 1 and 1048576 or max (got '0x10')"},
        ParseCase{"batch_size", "99999999999999999999", nullptr,
                  "expected an integer between 1 and 1048576 or max (got '99999999999999999999')"},
        ParseCase{"batch_size", "", nullptr, "expected an integer between 1 and 1048576 or max (got '')"},
        ParseCase{"exit_code", "255", "255", nullptr},
        ParseCase{"exit_code", "256", nullptr, "expected an integer between 1 and 255 (got '256')"},
        ParseCase{"step_ms", "2", "2.0", nullptr}, ParseCase{"step_ms", "1e-3", "0.001", nullptr},
        ParseCase{"step_ms", "0", "0.0", nullptr},
        ParseCase{"step_ms", "-0.5", nullptr, "expected a number between 0 and 3600000 (got '-0.5')"},
        ParseCase{"step_ms", "nan", nullptr, "expected a number between 0 and 3600000 (got 'nan')"},
        ParseCase{"step_ms", "inf", nullptr, "expected a number between 0 and 3600000 (got 'inf')"},
        ParseCase{"step_ms", "fast", nullptr, "expected a number between 0 and 3600000 (got 'fast')"},
        ParseCase{"target_rel_ci", "1", nullptr, "expected a number > 0 and < 1 (got '1')"},
        ParseCase{"target_rel_ci", "0", nullptr, "expected a number > 0 and < 1 (got '0')"},
        ParseCase{"target_rel_ci", "0.01", "0.01", nullptr},
        ParseCase{"ci_level", "0.5", nullptr, "expected a number > 0.5 and < 1 (got '0.5')"},
        ParseCase{"timeout_s", "0", nullptr, "expected a number > 0 and <= 604800 (got '0')"},
        ParseCase{"precision", "bf16", "\"bf16\"", nullptr},
        ParseCase{"precision", "fp64", nullptr, "expected one of fp32, tf32, bf16, fp16, int8 (got 'fp64')"},
        ParseCase{"precision", "FP16", nullptr, "expected one of fp32, tf32, bf16, fp16, int8 (got 'FP16')"},
        ParseCase{"device", "cpu", "\"cpu\"", nullptr}, ParseCase{"device", "cuda", "\"cuda\"", nullptr},
        ParseCase{"device", "cuda:3", "\"cuda:3\"", nullptr},
        ParseCase{"device", "gpu", nullptr, "expected cpu, cuda or cuda:N (got 'gpu')"},
        ParseCase{"device", "cuda:", nullptr, "expected cpu, cuda or cuda:N (got 'cuda:')"},
        ParseCase{"device", "cuda:x", nullptr, "expected cpu, cuda or cuda:N (got 'cuda:x')"},
        ParseCase{"cudnn_benchmark", "false", "false", nullptr},
        ParseCase{"cudnn_benchmark", "yes", nullptr, "expected true or false (got 'yes')"},
        ParseCase{"input_shapes", "B,3,224,224;B,16", "\"B,3,224,224;B,16\"", nullptr},
        ParseCase{"input_shapes", "B,3,x", nullptr, "expected shapes like B,3,224,224;B,16 (got 'B,3,x')"},
        ParseCase{"input_shapes", "B,0", nullptr, "expected shapes like B,3,224,224;B,16 (got 'B,0')"},
        ParseCase{"input_shapes", "B,3;", nullptr, "expected shapes like B,3,224,224;B,16 (got 'B,3;')"},
        ParseCase{"input_dtypes", "float32;int64", "\"float32;int64\"", nullptr},
        ParseCase{"input_dtypes", "float;int64", nullptr,
                  "expected dtypes like float32;int64 (float32, float16, bfloat16, float64, int64, int32, "
                  "int16, int8, uint8, bool) (got 'float;int64')"},
        ParseCase{"eval_precisions", "fp32; bf16;int8", "\"fp32; bf16;int8\"", nullptr},
        ParseCase{"eval_precisions", "int8;int8", nullptr,
                  "expected precisions like fp32;bf16;int8, each at most once (fp32, tf32, bf16, fp16, int8) "
                  "(got 'int8;int8')"},
        ParseCase{"eval_precisions", "fp64", nullptr,
                  "expected precisions like fp32;bf16;int8, each at most once (fp32, tf32, bf16, fp16, int8) "
                  "(got 'fp64')"},
        ParseCase{"min_agreement", "bf16=0.99; int8 = 0.9", "\"bf16=0.99; int8 = 0.9\"", nullptr},
        ParseCase{"min_agreement", "fp32=1;fp16=0", "\"fp32=1;fp16=0\"", nullptr},
        ParseCase{"min_agreement", "bf16=1.5", nullptr,
                  "expected precision=number pairs like bf16=0.99;int8=0.9, each precision at most once "
                  "(fp32, tf32, bf16, fp16, int8), each number between 0 and 1 "
                  "(got 'bf16=1.5')"},
        ParseCase{"min_agreement", "int8=0.9;int8=0.8", nullptr,
                  "expected precision=number pairs like bf16=0.99;int8=0.9, each precision at most once "
                  "(fp32, tf32, bf16, fp16, int8), each number between 0 and 1 "
                  "(got 'int8=0.9;int8=0.8')"},
        ParseCase{"min_agreement", "bf16", nullptr,
                  "expected precision=number pairs like bf16=0.99;int8=0.9, each precision at most once "
                  "(fp32, tf32, bf16, fp16, int8), each number between 0 and 1 "
                  "(got 'bf16')"},
        ParseCase{"min_agreement", "fp64=0.9", nullptr,
                  "expected precision=number pairs like bf16=0.99;int8=0.9, each precision at most once "
                  "(fp32, tf32, bf16, fp16, int8), each number between 0 and 1 "
                  "(got 'fp64=0.9')"},
        ParseCase{"min_agreement", "bf16=0.9x", nullptr,
                  "expected precision=number pairs like bf16=0.99;int8=0.9, each precision at most once "
                  "(fp32, tf32, bf16, fp16, int8), each number between 0 and 1 "
                  "(got 'bf16=0.9x')"},
        ParseCase{"min_agreement", "bf16=nan", nullptr,
                  "expected precision=number pairs like bf16=0.99;int8=0.9, each precision at most once "
                  "(fp32, tf32, bf16, fp16, int8), each number between 0 and 1 "
                  "(got 'bf16=nan')"},
        ParseCase{"max_abs_diff", "bf16=0.05; int8 = 2.5", "\"bf16=0.05; int8 = 2.5\"", nullptr},
        ParseCase{"max_abs_diff", "fp16=0;int8=1000000", "\"fp16=0;int8=1000000\"", nullptr},
        ParseCase{"max_mean_abs_diff", "bf16=0.01", "\"bf16=0.01\"", nullptr},
        ParseCase{"max_abs_diff", "bf16=-0.1", nullptr,
                  "expected precision=number pairs like bf16=0.05;int8=0.5, each precision at most once "
                  "(fp32, tf32, bf16, fp16, int8), each number between 0 and 1000000 "
                  "(got 'bf16=-0.1')"},
        ParseCase{"max_abs_diff", "bf16=1e7", nullptr,
                  "expected precision=number pairs like bf16=0.05;int8=0.5, each precision at most once "
                  "(fp32, tf32, bf16, fp16, int8), each number between 0 and 1000000 "
                  "(got 'bf16=1e7')"},
        ParseCase{"max_abs_diff", "bf16=inf", nullptr,
                  "expected precision=number pairs like bf16=0.05;int8=0.5, each precision at most once "
                  "(fp32, tf32, bf16, fp16, int8), each number between 0 and 1000000 "
                  "(got 'bf16=inf')"},
        ParseCase{"max_abs_diff", "bf16=nan", nullptr,
                  "expected precision=number pairs like bf16=0.05;int8=0.5, each precision at most once "
                  "(fp32, tf32, bf16, fp16, int8), each number between 0 and 1000000 "
                  "(got 'bf16=nan')"},
        ParseCase{"max_abs_diff", "fp64=0.1", nullptr,
                  "expected precision=number pairs like bf16=0.05;int8=0.5, each precision at most once "
                  "(fp32, tf32, bf16, fp16, int8), each number between 0 and 1000000 "
                  "(got 'fp64=0.1')"},
        ParseCase{"max_abs_diff", "bf16=0.1;bf16=0.2", nullptr,
                  "expected precision=number pairs like bf16=0.05;int8=0.5, each precision at most once "
                  "(fp32, tf32, bf16, fp16, int8), each number between 0 and 1000000 "
                  "(got 'bf16=0.1;bf16=0.2')"},
        ParseCase{"max_mean_abs_diff", "int8", nullptr,
                  "expected precision=number pairs like bf16=0.05;int8=0.5, each precision at most once "
                  "(fp32, tf32, bf16, fp16, int8), each number between 0 and 1000000 "
                  "(got 'int8')"},
        ParseCase{"max_mean_abs_diff", "int8=", nullptr,
                  "expected precision=number pairs like bf16=0.05;int8=0.5, each precision at most once "
                  "(fp32, tf32, bf16, fp16, int8), each number between 0 and 1000000 "
                  "(got 'int8=')"},
        ParseCase{"max_mean_abs_diff", "", nullptr,
                  "expected precision=number pairs like bf16=0.05;int8=0.5, each precision at most once "
                  "(fp32, tf32, bf16, fp16, int8), each number between 0 and 1000000 "
                  "(got '')"},
        ParseCase{"model", "resnet50", "\"resnet50\"", nullptr}, ParseCase{"model", "50", "\"50\"", nullptr},
        ParseCase{"min_steps", "10", "10", nullptr},
        ParseCase{"seed", "-1", nullptr, "expected an integer >= 0 (got '-1')"}));

TEST(RegistryTest, ValidateParamValueChecksTypedValues) {
  const ParamSpec& batch = *FindParam("batch_size", ParamSection::kCell);
  EXPECT_TRUE(ValidateParamValue(batch, Value(4)).ok());
  EXPECT_EQ(ValidateParamValue(batch, Value(0)).error().message,
            "expected an integer between 1 and 1048576 or max (got '0')");
  EXPECT_EQ(ValidateParamValue(batch, Value(2.0)).error().message,
            "expected an integer between 1 and 1048576 or max (got '2.0')");
  EXPECT_EQ(ValidateParamValue(batch, Value("8")).error().message,
            "expected an integer between 1 and 1048576 or max (got '8')");
  const ParamSpec& step = *FindParam("step_ms", ParamSection::kCell);
  EXPECT_TRUE(ValidateParamValue(step, Value(2)).ok()) << "an integer is a valid number";
  EXPECT_FALSE(ValidateParamValue(step, Value(true)).ok());
  const ParamSpec& scenario = *FindParam("scenario", ParamSection::kCell);
  EXPECT_EQ(ValidateParamValue(scenario, Value("eval")).error().message,
            "expected one of train, infer, converge (got 'eval')");
}

// data_workers takes an integer or the keyword auto (kept as the string, unquoted in keys).
TEST(RegistryTest, AnIntegerWithAKeywordTakesEither) {
  const ParamSpec& workers = *FindParam("data_workers", ParamSection::kCell);
  EXPECT_EQ(workers.keywords, std::vector<std::string>{"auto"});
  auto four = ParseParamText(workers, "4");
  ASSERT_TRUE(four.ok());
  EXPECT_EQ(*four, Value(4));
  auto automatic = ParseParamText(workers, "auto");
  ASSERT_TRUE(automatic.ok());
  EXPECT_EQ(*automatic, Value("auto"));
  EXPECT_EQ(FormatValue(*automatic), "auto");
  EXPECT_TRUE(ValidateParamValue(workers, Value("auto")).ok());
  const std::string expected = "expected an integer between 1 and 256 or auto";
  EXPECT_EQ(ParseParamText(workers, "banana").error().message, expected + " (got 'banana')");
  EXPECT_EQ(ParseParamText(workers, "0").error().message, expected + " (got '0')");
  EXPECT_EQ(ValidateParamValue(workers, Value(257)).error().message, expected + " (got '257')");
  EXPECT_EQ(ValidateParamValue(workers, Value("Auto")).error().message, expected + " (got 'Auto')");
  // Without a keyword the word is no integer.
  EXPECT_FALSE(ParseParamText(*FindParam("batch_size", ParamSection::kCell), "auto").ok());
}

TEST(RegistryTest, FormatValueIsCanonicalAndUnambiguous) {
  struct Case {
    Value value;
    const char* text;
  };
  const Case cases[] = {
      {Value("resnet50"), "resnet50"},
      {Value("cuda:0"), "cuda:0"},
      {Value(8), "8"},
      {Value(-3), "-3"},
      {Value(1.0), "1.0"},
      {Value(0.1), "0.1"},
      {Value(true), "true"},
      {Value("true"), "\"true\""},
      {Value("8"), "\"8\""},
      {Value("1.5"), "\"1.5\""},
      {Value("a,b"), "\"a,b\""},
      {Value("x=y"), "\"x=y\""},
      {Value(""), "\"\""},
      {Value("null"), "\"null\""},
      {Value(" x"), "\" x\""},
      {Value("B,3;B,16"), "\"B,3;B,16\""},
      {Value("say \"hi\""), "\"say \\\"hi\\\"\""},
  };
  for (const Case& c : cases) EXPECT_EQ(FormatValue(c.value), c.text) << c.value.dump();
}

TEST(RegistryTest, NearestKeySuggestsOnlyCloseKeys) {
  const std::vector<std::string> keys = {"batch_size", "step_ms",     "seed",
                                         "model",      "repetitions", "world_size"};
  struct Case {
    const char* typo;
    const char* expected;  // nullptr: no suggestion
  };
  const Case cases[] = {
      {"batchsize", "batch_size"},
      {"bacth_size", "batch_size"},
      {"Batch_size", "batch_size"},
      {"stepms", "step_ms"},
      {"seeds", "seed"},
      {"modle", "model"},
      {"repetition", "repetitions"},
      {"worldsize", "world_size"},
      {"xyz", nullptr},
      {"s", nullptr},
      {"batch", nullptr},
      {"completely_else", nullptr},
  };
  for (const Case& c : cases) {
    std::optional<std::string> near = NearestKey(c.typo, keys);
    if (c.expected == nullptr) {
      EXPECT_FALSE(near.has_value()) << c.typo << " -> " << near.value_or("");
    } else {
      EXPECT_EQ(near.value_or("<none>"), c.expected) << c.typo;
    }
  }
  EXPECT_FALSE(NearestKey("abc", {}).has_value());
}

TEST(RegistryTest, DescribeExpectedNamesTheRule) {
  EXPECT_EQ(DescribeExpected(*FindParam("world_size", ParamSection::kCell)), "an integer between 1 and 1024");
  EXPECT_EQ(DescribeExpected(*FindParam("scenario", ParamSection::kCell)), "one of train, infer, converge");
  EXPECT_EQ(DescribeExpected(*FindParam("warmup_factor", ParamSection::kCell)),
            "a number between 1 and 1000");
  EXPECT_EQ(DescribeExpected(*FindParam("model", ParamSection::kCell)), "a string");
  EXPECT_EQ(DescribeExpected(*FindParam("runner", ParamSection::kTopLevel)),
            "null, torch or a mapping {command: [argv...]}");
}

TEST(RegistryTest, HelpAndReferenceListEveryKey) {
  const std::string help = RenderParamHelp();
  const std::string reference = RenderConfigReference();
  for (const ParamSpec& spec : Registry()) {
    EXPECT_NE(help.find("  " + spec.name + " "), std::string::npos) << spec.name;
    EXPECT_NE(reference.find("| `" + spec.name + "` |"), std::string::npos) << spec.name;
  }
  EXPECT_NE(help.find("between 1 and 255"), std::string::npos);
  EXPECT_NE(reference.find("| `exit_code` | int |  | `3` | between 1 and 255 |"), std::string::npos);
}

// docs/config-reference.md is generated; this fails when someone changes the registry (or edits the
// file by hand) without regenerating it.
TEST(RegistryTest, ConfigReferenceDocIsUpToDate) {
  const std::string path = std::string(DLBENCH_SOURCE_DIR) + "/docs/config-reference.md";
  Result<std::string> on_disk = ReadFile(path);
  ASSERT_TRUE(on_disk.ok()) << on_disk.error().message
                            << "\nGenerate it: cmake --build BUILD --target dlbench-config-reference && "
                               "BUILD/bin/dlbench-config-reference > docs/config-reference.md";
  EXPECT_TRUE(*on_disk == RenderConfigReference())
      << "docs/config-reference.md is stale. Regenerate it from the registry:\n"
      << "  cmake --build BUILD --target dlbench-config-reference && "
         "BUILD/bin/dlbench-config-reference > docs/config-reference.md";
}

// The string formats' parsers accept exactly what validation accepts, and return the parts.
TEST(RegistryTest, FormatParsersAndTheirLimits) {
  EXPECT_EQ(ParseDeviceName("cpu")->cuda, false);
  EXPECT_EQ(ParseDeviceName("cuda")->index, 0);
  EXPECT_EQ(ParseDeviceName("cuda:1023")->index, kMaxCudaIndex);
  for (const char* bad : {"cuda:1024", "cuda:", "cuda:-1", "cuda:+1", "cuda: 1", "gpu", "CPU", ""}) {
    EXPECT_FALSE(ParseDeviceName(bad)) << bad;
    EXPECT_FALSE(ValidateParamValue(*FindParam("device", ParamSection::kCell), Value(bad)).ok()) << bad;
  }
  const auto shapes = ParseShapes("B,3,224,224; B , 16");
  ASSERT_TRUE(shapes);
  EXPECT_EQ(*shapes, (std::vector<std::vector<std::int64_t>>{{kBatchDim, 3, 224, 224}, {kBatchDim, 16}}));
  EXPECT_TRUE(ParseShapes("999999999"));
  for (const char* bad : {"1000000000", "B,0", "", "B,3;", "b", "B,-1"})
    EXPECT_FALSE(ParseShapes(bad)) << bad;
  EXPECT_EQ(*ParseDtypes("float32; int64"), (std::vector<std::string>{"float32", "int64"}));
  for (const char* bad : {"float", "float32;", "", "half"}) EXPECT_FALSE(ParseDtypes(bad)) << bad;
  EXPECT_EQ(KnownDtypes().size(), 10u);
}

// memory_cap's amounts: binary and decimal units by hand, the 1 TiB bound on both sides, and what
// is not an amount (0, a sign, a fraction, a lower-case unit, no digits).
TEST(RegistryTest, ParsesByteSizes) {
  EXPECT_EQ(ParseByteSize("16GiB"), std::int64_t{16} * 1024 * 1024 * 1024);
  EXPECT_EQ(ParseByteSize("512 MiB"), std::int64_t{512} * 1024 * 1024);
  EXPECT_EQ(ParseByteSize("3KiB"), 3072);
  EXPECT_EQ(ParseByteSize("4GB"), std::int64_t{4'000'000'000});
  EXPECT_EQ(ParseByteSize("7"), 7);
  EXPECT_EQ(ParseByteSize("7B"), 7);
  EXPECT_EQ(ParseByteSize("1TiB"), kMaxByteSize);
  EXPECT_EQ(ParseByteSize("1099511627776"), kMaxByteSize);
  EXPECT_EQ(ParseByteSize("1099511627KB"), std::int64_t{1099511627000});
  for (const char* bad : {"1099511627777", "1099511628KB", "2TiB", "1025GiB", "0", "0MiB", "-1GiB", "+1GiB",
                          "1.5GiB", "16gib", "16 G", "GiB", "", "99999999999999999999"}) {
    EXPECT_FALSE(ParseByteSize(bad)) << bad;
  }
  const ParamSpec& cap = *FindParam("memory_cap", ParamSection::kCell);
  EXPECT_TRUE(ValidateParamValue(cap, Value("16GiB")).ok());
  const Status zero = ValidateParamValue(cap, Value("0"));
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("at most 1TiB"), std::string::npos) << zero.error().message;
  EXPECT_FALSE(ValidateParamValue(cap, Value(16)).ok());  // typed values come as their text
}

// Bounds that the torch runner enforces are the registry's own: lr > 0, threads 1..4096.
TEST(RegistryTest, RunnerBoundsLiveHere) {
  const ParamSpec& lr = *FindParam("lr", ParamSection::kCell);
  EXPECT_FALSE(ValidateParamValue(lr, Value(0.0)).ok());
  EXPECT_TRUE(ValidateParamValue(lr, Value(1e-9)).ok());
  const ParamSpec& threads = *FindParam("threads", ParamSection::kCell);
  EXPECT_TRUE(ValidateParamValue(threads, Value(4096)).ok());
  EXPECT_FALSE(ValidateParamValue(threads, Value(4097)).ok());
}

// cuda_alloc_conf against PyTorch's documented PYTORCH_CUDA_ALLOC_CONF grammar
// (config/cuda_alloc_conf.h): each option's values at and beyond their bounds, and the message.
TEST(RegistryTest, CudaAllocConfFollowsTheDocumentedGrammar) {
  for (const char* ok :
       {"expandable_segments:True", "expandable_segments:False", "backend:native", "backend:cudaMallocAsync",
        "max_split_size_mb:21", "max_split_size_mb:1048576", "max_non_split_rounding_mb:1024",
        "roundup_power2_divisions:4", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
        "garbage_collection_threshold:0.6",
        "pinned_use_cuda_host_register:True,pinned_num_register_threads:128",
        "pinned_use_background_threads:True",
        "expandable_segments:True,max_split_size_mb:128,garbage_collection_threshold:0.8"}) {
    EXPECT_EQ(CudaAllocConfProblem(ok), "") << ok;
  }
  const std::vector<std::pair<const char*, const char*>> bad = {
      {"", "empty"},
      {"expandable_segments:true", "expandable_segments: expected True or False (got 'true')"},
      {"expandable_segment:True", "unknown option 'expandable_segment' (options: backend, max_split_size_mb"},
      {"expandable_segments", "'expandable_segments' is not name:value"},
      {"expandable_segments:True,expandable_segments:False", "expandable_segments given twice"},
      {"expandable_segments: True", "no spaces"},
      {"max_split_size_mb:20", "max_split_size_mb: expected an integer > 20 and <= 1048576 (MB) (got '20')"},
      {"max_split_size_mb:1048577", "max_split_size_mb: expected"},
      {"max_split_size_mb:1.5", "max_split_size_mb: expected"},
      {"max_non_split_rounding_mb:0", "max_non_split_rounding_mb: expected"},
      {"roundup_power2_divisions:3", "roundup_power2_divisions: expected a power of 2"},
      {"roundup_power2_divisions:[256:3]", "roundup_power2_divisions: expected"},
      {"roundup_power2_divisions:[300:2]", "roundup_power2_divisions: expected"},
      {"roundup_power2_divisions:[256:1,256:2]", "roundup_power2_divisions: expected"},
      {"roundup_power2_divisions:[256:1", "unbalanced brackets"},
      {"garbage_collection_threshold:1", "garbage_collection_threshold: expected a number > 0 and < 1"},
      {"garbage_collection_threshold:0", "garbage_collection_threshold: expected"},
      {"pinned_num_register_threads:256", "pinned_num_register_threads: expected a power of 2 <= 128"},
      {"pinned_num_register_threads:6", "pinned_num_register_threads: expected"},
      {"backend:cuda", "backend: expected native or cudaMallocAsync (got 'cuda')"},
  };
  for (const auto& [text, problem] : bad) {
    EXPECT_NE(CudaAllocConfProblem(text).find(problem), std::string::npos)
        << text << " -> " << CudaAllocConfProblem(text);
  }
  EXPECT_NE(CudaAllocConfProblem(std::string(600, 'x')).find("longer than 512"), std::string::npos);
  // Through the registry: the parameter's error names what is wrong.
  const ParamSpec& spec = *FindParam("cuda_alloc_conf", ParamSection::kCell);
  const Status st = ValidateParamValue(spec, Value("expandable_segments:yes"));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(
      st.error().message.find("(got 'expandable_segments:yes'): expandable_segments: expected True or False"),
      std::string::npos)
      << st.error().message;
  EXPECT_TRUE(ValidateParamValue(spec, Value("expandable_segments:True")).ok());
}

// plan's estimate reads these hints instead of the null runner's parameter names.
TEST(RegistryTest, EstimateHintsAreOnNumbersOfTheNullRunner) {
  std::set<EstimateHint> hints;
  for (const ParamSpec& spec : Registry()) {
    if (spec.estimate == EstimateHint::kNone) continue;
    SCOPED_TRACE(spec.name);
    EXPECT_TRUE(hints.insert(spec.estimate).second) << "one parameter per hint and scope";
    EXPECT_EQ(spec.scope, Scope::kNull);
    EXPECT_TRUE(spec.type == ParamType::kNumber || spec.type == ParamType::kInt);
    EXPECT_TRUE(spec.default_value.has_value());
  }
  EXPECT_EQ(hints.size(), 4u);
}

std::string ReadDoc(const std::string& name) {
  Result<std::string> text = ReadFile(std::string(DLBENCH_SOURCE_DIR) + "/docs/" + name);
  EXPECT_TRUE(text.ok()) << text.error().message;
  return text.ok() ? *text : "";
}

// docs/torch-runner.md's parameter table starts every row with the registry's columns (name, type,
// unit, default, allowed) and lists every parameter of the runner, in registry order; the notes
// after them are the runner's own.
TEST(RegistryTest, RunnerDocTablesMatchTheRegistry) {
  EXPECT_EQ(CheckRunnerDocTable(ReadDoc("torch-runner.md"), "torch"), "")
      << "docs/torch-runner.md's parameter table differs from the registry (want the rows shown)";
}

TEST(RegistryTest, CheckRunnerDocTableFindsDrift) {
  std::string table =
      "<!-- registry-table: null -->\n| parameter | type | unit | default | allowed | notes |\n|---|\n";
  for (const ParamSpec* spec : CellParamsForRunner("null"))
    table += RenderParamRowPrefix(*spec) + " note |\n";
  EXPECT_EQ(CheckRunnerDocTable(table, "null"), "");
  std::string stale = table;
  const std::string row = RenderParamRowPrefix(*FindParam("step_ms", ParamSection::kCell));
  stale.replace(stale.find(row), row.size(), "| `step_ms` | number | ms | `2.0` | >= 0 |");
  EXPECT_NE(CheckRunnerDocTable(stale, "null").find("want '" + row), std::string::npos);
  EXPECT_NE(CheckRunnerDocTable(table.substr(0, table.rfind("\n| `") + 1), "null").find("missing"),
            std::string::npos);
  EXPECT_NE(CheckRunnerDocTable("no marker", "null"), "");
}

// docs/models.md names each model's size options; each is a torch parameter of the registry, and
// every size knob of the registry (default: the model's standard size) appears there.
TEST(RegistryTest, ModelDocNamesRegistryOptions) {
  const std::string doc = ReadDoc("models.md");
  std::set<std::string> named;
  std::size_t at = 0;
  while ((at = doc.find("| `", at)) != std::string::npos) {
    const std::size_t end = doc.find('`', at + 3);
    named.insert(doc.substr(at + 3, end - at - 3));
    at = end;
  }
  ASSERT_FALSE(named.empty());
  for (const std::string& name : named) {
    const ParamSpec* spec = FindParam(name, ParamSection::kCell);
    EXPECT_TRUE(spec != nullptr && (spec->scope == Scope::kTorch || spec->scope == Scope::kInputSize))
        << name << " in docs/models.md";
  }
  for (const ParamSpec* spec : CellParamsForRunner("torch")) {
    if (spec->default_text == "model's standard" && spec->name != "lr") {
      EXPECT_TRUE(named.count(spec->name)) << spec->name << " is missing from docs/models.md";
    }
  }
}

}  // namespace
}  // namespace dlbench::config
