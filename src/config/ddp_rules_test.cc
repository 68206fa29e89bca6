// The ddp cross-key rules at plan time (config/ddp_rules.h): each is an error at the key that
// breaks it, and a cell that keeps them has none.
#include "config/ddp_rules.h"

#include <gtest/gtest.h>

namespace dlbench::config {
namespace {

std::vector<std::string> Keys(const std::vector<LoadRuleViolation>& v) {
  std::vector<std::string> keys;
  keys.reserve(v.size());
  for (const auto& x : v) keys.push_back(x.key);
  return keys;
}

TEST(DdpRulesTest, GoodCellsBreakNothing) {
  EXPECT_TRUE(CheckDdpCell({{"model", "resnet50"}}).empty());
  EXPECT_TRUE(CheckDdpCell({{"model", "resnet50"}, {"world_size", 1}}).empty());
  EXPECT_TRUE(CheckDdpCell({{"model", "resnet50"},
                            {"strategy", "ddp"},
                            {"world_size", 4},
                            {"scenario", "train"},
                            {"ddp_mode", "compute_only"},
                            {"backend", "nccl"},
                            {"device", "cuda:0"}})
                  .empty());
  EXPECT_TRUE(
      CheckDdpCell(
          {{"model", "allreduce"}, {"strategy", "ddp"}, {"scenario", "infer"}, {"allreduce_bytes", 1024}})
          .empty())
      << "an allreduce cell has no scenario to speak of";
}

TEST(DdpRulesTest, DdpKeysNeedStrategyDdp) {
  EXPECT_EQ(Keys(CheckDdpCell({{"model", "resnet50"},
                               {"ddp_mode", "serial"},
                               {"backend", "gloo"},
                               {"bucket_cap_bytes", 4096},
                               {"world_size", 2}})),
            (std::vector<std::string>{"ddp_mode", "backend", "bucket_cap_bytes", "world_size"}));
  const auto v = CheckDdpCell({{"model", "resnet50"}, {"strategy", "none"}, {"world_size", 2}});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].message, "is 2 but strategy is not ddp; a single process has world_size 1");
}

TEST(DdpRulesTest, DdpTrainsNcclNeedsCudaAndAllreduceIsADdpModel) {
  const auto infer = CheckDdpCell({{"model", "resnet50"}, {"strategy", "ddp"}, {"scenario", "infer"}});
  ASSERT_EQ(Keys(infer), std::vector<std::string>{"scenario"});
  EXPECT_NE(infer[0].message.find("needs scenario train"), std::string::npos);
  const auto nccl = CheckDdpCell({{"model", "resnet50"}, {"strategy", "ddp"}, {"backend", "nccl"}});
  ASSERT_EQ(Keys(nccl), std::vector<std::string>{"backend"});
  EXPECT_NE(nccl[0].message.find("device is cpu"), std::string::npos) << "the default device";
  EXPECT_EQ(Keys(CheckDdpCell({{"model", "allreduce"}})), std::vector<std::string>{"model"});
  EXPECT_EQ(Keys(CheckDdpCell({{"model", "resnet50"}, {"strategy", "ddp"}, {"allreduce_bytes", 64}})),
            std::vector<std::string>{"allreduce_bytes"});
}

TEST(DdpRulesTest, AreReportedAtTheKeysPosition) {
  Result<Matrix> m = ParseMatrix(
      "runner: torch\nmatrix:\n  model: resnet50\n  strategy: ddp\n  scenario: [train, infer]\n", "m.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const Status st = CheckDdpRules(*m, {{{"model", "resnet50"}, {"strategy", "ddp"}, {"scenario", "train"}},
                                       {{"model", "resnet50"}, {"strategy", "ddp"}, {"scenario", "infer"}}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message.rfind("m.yaml:5:3: error: scenario: strategy ddp trains data-parallel", 0), 0u)
      << st.error().message;
}

}  // namespace
}  // namespace dlbench::config
