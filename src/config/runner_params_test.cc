// RunnerParams: a runner's view of CONFIGURE's params, validated by the registry.
#include "config/runner_params.h"

#include <gtest/gtest.h>

#include <string>

#include "config/registry.h"

namespace dlbench::config {
namespace {

using nlohmann::json;

std::string ErrorOf(const json& params, const std::string& runner) {
  Result<RunnerParams> p = RunnerParams::Parse(params, runner);
  return p.ok() ? "" : p.error().message;
}

TEST(RunnerParamsTest, GivenValuesThenRegistryDefaults) {
  Result<RunnerParams> p = RunnerParams::Parse({{"step_ms", 2}, {"batch_size", 8}}, "null");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->Number("step_ms"), 2.0);  // an integer is a number
  EXPECT_TRUE(p->Given("step_ms"));
  EXPECT_EQ(p->Number("warmup_factor"), 3.0);  // the registry's default
  EXPECT_FALSE(p->Given("warmup_factor"));
  EXPECT_EQ(p->Text("inject"), "none");
  EXPECT_EQ(p->Int("exit_code"), 3);
  EXPECT_EQ(p->Int("samples_per_step"), 8);  // default_from batch_size
  EXPECT_EQ(p->Runner(), "null");

  p = RunnerParams::Parse(json::object(), "null");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->Int("samples_per_step"), 1);  // from batch_size's own default
  EXPECT_EQ(p->Int("batch_size"), 1);

  p = RunnerParams::Parse({{"model", "resnet50"}}, "torch");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->Text("model"), "resnet50");
  EXPECT_EQ(p->Bool("cudnn_benchmark"), true);
  EXPECT_EQ(p->Int("threads"), std::nullopt);  // no default: the library's
  EXPECT_EQ(p->Number("lr"), std::nullopt);
  EXPECT_EQ(p->Text("device"), "cpu");
}

TEST(RunnerParamsTest, MessagesNameTheParameterAndWhatItAccepts) {
  EXPECT_EQ(ErrorOf({{"model", "m"}, {"lr", 0}}, "torch"),
            "parameter 'lr': expected a number > 0 and <= 1000 (got '0')");
  EXPECT_EQ(ErrorOf({{"model", "m"}, {"threads", 4097}}, "torch"),
            "parameter 'threads': expected an integer between 1 and 4096 (got '4097')");
  EXPECT_EQ(ErrorOf({{"model", "m"}, {"device", "cuda:1024"}}, "torch"),
            "parameter 'device': expected cpu, cuda or cuda:N (got 'cuda:1024')");
  EXPECT_EQ(ErrorOf({{"model", "m"}, {"batch_size", "8"}}, "torch"),
            "parameter 'batch_size': expected an integer between 1 and 1048576 or max (got '8')");
  // The search is the orchestrator's: a runner never takes batch_size: max.
  EXPECT_EQ(ErrorOf({{"batch_size", "max"}}, "null"),
            "parameter 'batch_size': 'max' is a search dlbench runs over runner processes; a runner "
            "receives a batch size");
  EXPECT_EQ(ErrorOf({{"seq_len", "max"}}, "null"),
            "parameter 'seq_len': 'max' is a search dlbench runs over runner processes; a runner "
            "receives a sequence length");
  EXPECT_EQ(ErrorOf({{"model", "m"}, {"deterministic", nullptr}}, "torch"),
            "parameter 'deterministic': expected true or false (got 'null')");
  EXPECT_EQ(ErrorOf({{"stepms", 1}}, "null"),
            "unknown parameter 'stepms' for runner null (did you mean 'step_ms'?)");
  EXPECT_EQ(ErrorOf({{"zzz", 1}}, "null"), "unknown parameter 'zzz' for runner null");
  EXPECT_EQ(ErrorOf({{"lr", 0.1}}, "null"), "parameter 'lr' belongs to runner torch, not to runner null");
  EXPECT_EQ(ErrorOf(json::object(), "torch"), "parameter 'model' is required with runner torch");
  EXPECT_EQ(ErrorOf(json::array(), "null"), "CONFIGURE params must be an object, got []");
  EXPECT_EQ(ErrorOf({{"exit_code", 255}}, "null"), "");
  EXPECT_EQ(ErrorOf({{"exit_code", 256}}, "null"),
            "parameter 'exit_code': expected an integer between 1 and 255 (got '256')");
}

TEST(RunnerParamsTest, ACommandRunnerHasOnlyTheCoreParameters) {
  EXPECT_EQ(ErrorOf({{"batch_size", 2}}, "command"), "");
  EXPECT_EQ(ErrorOf({{"step_ms", 2}}, "command"),
            "parameter 'step_ms' belongs to runner null, not to runner command");
}

TEST(RunnerParamsDeathTest, ReadingAnUndeclaredParameterIsABug) {
  Result<RunnerParams> p = RunnerParams::Parse(json::object(), "null");
  ASSERT_TRUE(p.ok());
  EXPECT_DEATH((void)p->Number("lr"), "does not declare");
  EXPECT_DEATH((void)p->Text("step_ms"), "wrong type");
}

}  // namespace
}  // namespace dlbench::config
