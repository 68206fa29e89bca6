// A ddp cell's ranks as the orchestrator launches and supervises them on one host (rank_group.h),
// with dlbench-null ranks in virtual time: every rank's records are stored with their rank, the
// ranks stop together, a rank that crashes or hangs ends the cell naming it, and nothing is left
// running. The launcher variables never reach a runner. Ranks whose task is on another host:
// rank_group_remote_test.cc.
#include "orchestrator/rank_group.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/files.h"
#include "monitor/fake_nvml.h"
#include "monitor/fake_procfs.h"
#include "monitor/nvml_sampler.h"
#include "orchestrator/cell_runner.h"
#include "orchestrator/process_tree.h"
#include "orchestrator/rank_group_test_support.h"
#include "orchestrator/rank_link.h"

namespace dlbench::orchestrator {
namespace {

using rank_group_testing::RankGroupTest;
using rank_group_testing::StepsPerRank;

TEST(RankGroupSizeTest, IsTheWorldSizeOfADdpCellOnly) {
  plan::Cell cell;
  EXPECT_EQ(RankGroupSize(cell), 1);
  cell.params["world_size"] = 4;
  EXPECT_EQ(RankGroupSize(cell), 1) << "strategy none";
  cell.params["strategy"] = "ddp";
  EXPECT_EQ(RankGroupSize(cell), 4);
}

TEST(FreshRendezvousFileTest, IsAbsoluteRemovesAStaleFileAndRefusesAnythingElse) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dlbench_rendezvous_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string base = (dir / "cell-0004").string();
  auto fresh = FreshRendezvousFile(base);
  ASSERT_TRUE(fresh.ok()) << fresh.error().message;
  EXPECT_EQ(*fresh, base + ".rendezvous");
  EXPECT_EQ(fresh->front(), '/');
  { std::ofstream(*fresh) << "stale"; }
  auto again = FreshRendezvousFile(base);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_FALSE(std::filesystem::exists(*again)) << "a stale store is removed";
  std::filesystem::create_directory(*again);
  auto refused = FreshRendezvousFile(base);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("is not a regular file"), std::string::npos)
      << refused.error().message;
  EXPECT_TRUE(std::filesystem::is_directory(*again)) << "never removed";
  std::filesystem::remove(*again);
  std::filesystem::create_symlink(dir / "elsewhere", *again);
  EXPECT_FALSE(FreshRendezvousFile(base).ok()) << "a symlink is not followed or removed";
  std::filesystem::remove_all(dir);
}

TEST_F(RankGroupTest, TwoRanksStoreEveryRanksStepsAndStopTogether) {
  // SlowOptions: with Options' 20 steps rank 0 can finish (2 ms of real time) before a slow rank 1
  // records its first step; once, in an ASan build on a loaded machine, rank 1 stored none.
  const record::CellRecord rec = Run({{"strategy", "ddp"}, {"world_size", 2}}, SlowOptions());
  ASSERT_EQ(rec.outcome, record::Outcome::kOk) << rec.message;
  const auto per_rank = StepsPerRank(rec);
  ASSERT_EQ(per_rank.size(), 2u) << "rank 0's and rank 1's records";
  EXPECT_GE(per_rank.at(0), 20u);
  EXPECT_GE(per_rank.at(1), 1u);
  ASSERT_TRUE(rec.extras.contains("ddp")) << rec.extras.dump();
  const auto& ranks = rec.extras["ddp"]["ranks"];
  ASSERT_EQ(ranks.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks[r]["rank"], r);
    EXPECT_EQ(ranks[r]["outcome"], std::string(record::Name(record::Outcome::kOk)));
    EXPECT_FALSE(ranks[r].contains("killed"));
  }
  // A FileStore beside the cell's logs, not a TCP port; gone once the group has ended.
  const std::string rendezvous = rec.extras["ddp"]["rendezvous"].get<std::string>();
  EXPECT_EQ(rendezvous.rfind("file:///", 0), 0u) << rendezvous;
  EXPECT_EQ(rendezvous.substr(std::string("file://").size()),
            std::filesystem::absolute(rec.stdout_path.substr(0, rec.stdout_path.size() - 11) + ".rendezvous")
                .string());
  EXPECT_FALSE(std::filesystem::exists(rendezvous.substr(std::string("file://").size())));
  EXPECT_TRUE(std::filesystem::exists(ranks[1]["stderr"].get<std::string>())) << "rank 1 has its own logs";
  EXPECT_TRUE(Descendants(::getpid()).empty()) << "nothing is left running";
}

TEST(RankGroupEffectiveTest, NamesEveryRanksGpusOnce) {
  const nlohmann::json r0 = {{"device", "cuda:0"}, {"device_uuids", {"GPU-a"}}};
  const nlohmann::json r1 = {{"device", "cuda:1"}, {"device_uuids", {"GPU-b"}}};
  const nlohmann::json r2 = {{"device", "cuda:0"}, {"device_uuids", {"GPU-a"}}};
  const nlohmann::json group = RankGroupEffective({&r0, &r1, &r2});
  EXPECT_EQ(group["device"], "cuda:0") << "rank 0's otherwise";
  EXPECT_EQ(group["device_uuids"], nlohmann::json({"GPU-a", "GPU-b"}));
  const nlohmann::json cpu = {{"device", "cpu"}, {"device_uuids", nlohmann::json::array()}};
  EXPECT_EQ(RankGroupEffective({&cpu, &cpu})["device_uuids"], nlohmann::json::array());
  const nlohmann::json unnamed = {{"device", "cuda:0"}};
  EXPECT_EQ(RankGroupEffective({&unnamed, &unnamed}), unnamed) << "no rank named a GPU: nothing is made up";
  EXPECT_EQ(RankGroupEffective({&unnamed, &r1})["device_uuids"], nlohmann::json({"GPU-b"}));
  EXPECT_EQ(RankGroupEffective({}), nlohmann::json::object());
}

// The other-process check for a ddp cell (docs/memory.md): NVML's list (the fake's) is taken before
// the ranks start, and every GPU of the group that another process held is a warning of the cell.
// dlbench-null names no GPU, so a cuda cell's group is every sampled GPU: gpu0 and gpu2 hold a
// process, gpu1 none.
TEST_F(RankGroupTest, EveryGpuOfTheGroupThatAnotherProcessHeldIsAWarning) {
  monitor::FakeNvml fake;
  fake.gpus.resize(3);
  fake.gpus[0].uuid = "GPU-aaaaaaaa-0000-0000-0000-000000000000";
  fake.gpus[1].uuid = "GPU-bbbbbbbb-1111-1111-1111-111111111111";
  fake.gpus[2].uuid = "GPU-cccccccc-2222-2222-2222-222222222222";
  fake.gpus[0].processes = std::vector<monitor::NvmlProcessInfo>{{4242, 3ull << 30, 0, 0}};
  fake.gpus[2].processes = std::vector<monitor::NvmlProcessInfo>{{5151, 512ull << 20, 0, 0}};
  auto fs = std::make_shared<monitor::FakeProcFs>();
  fs->Set("/proc/4242/comm", "python3\n");
  fs->Set("/proc/5151/comm", "trainer\n");
  std::vector<std::unique_ptr<monitor::Sampler>> samplers;
  samplers.push_back(
      std::make_unique<monitor::NvmlSampler>(fake.Api(), nullptr, fs, monitor::SamplerOptions{}));
  MonotonicClock clock;
  monitor::Monitor mon(std::move(samplers), clock, 50);
  CellRunOptions o = Options();
  o.monitor = &mon;
  const record::CellRecord rec = Run({{"strategy", "ddp"}, {"world_size", 2}, {"device", "cuda:0"}}, o);
  ASSERT_EQ(rec.outcome, record::Outcome::kOk) << rec.message;
  ASSERT_TRUE(rec.extras.contains("warnings")) << rec.extras.dump();
  std::vector<std::string> gpu_warnings;
  for (const auto& w : rec.extras["warnings"]) {
    if (w.get<std::string>().find("was in use just before the cell's runner started") != std::string::npos)
      gpu_warnings.push_back(w.get<std::string>());
  }
  ASSERT_EQ(gpu_warnings.size(), 2U) << rec.extras["warnings"].dump();
  EXPECT_EQ(gpu_warnings[0].rfind("gpu0 (GPU-aaaaaaaa", 0), 0U) << gpu_warnings[0];
  EXPECT_NE(gpu_warnings[0].find("pid 4242 python3 holding 3072.0 MiB"), std::string::npos)
      << gpu_warnings[0];
  EXPECT_EQ(gpu_warnings[1].rfind("gpu2 (GPU-cccccccc", 0), 0U) << gpu_warnings[1];
  EXPECT_NE(gpu_warnings[1].find("pid 5151 trainer"), std::string::npos) << gpu_warnings[1];
  EXPECT_TRUE(Descendants(::getpid()).empty()) << "nothing is left running";
}

TEST_F(RankGroupTest, ARankThatCrashesEndsTheCellNamingItAndTheOthersAreStopped) {
  const record::CellRecord rec = Run({{"strategy", "ddp"},
                                      {"world_size", 3},
                                      {"inject", "crash"},
                                      {"inject_rank", 2},
                                      {"inject_at_step", 1}},
                                     SlowOptions());
  EXPECT_EQ(rec.outcome, record::Outcome::kCrashed) << rec.message;
  EXPECT_EQ(rec.message.rfind("rank 2 of 3: ", 0), 0u) << rec.message;
  EXPECT_EQ(rec.verdict, record::Verdict::kNotApplicable);
  const auto& ranks = rec.extras["ddp"]["ranks"];
  ASSERT_EQ(ranks.size(), 3u);
  EXPECT_EQ(ranks[2]["outcome"], std::string(record::Name(record::Outcome::kCrashed)));
  EXPECT_TRUE(Descendants(::getpid()).empty()) << "nothing is left running";
}

TEST_F(RankGroupTest, ARankThatHangsEndsTheCellAsATimeoutNamingIt) {
  const record::CellRecord rec = Run(
      {{"strategy", "ddp"}, {"world_size", 2}, {"inject", "hang"}, {"inject_rank", 1}, {"inject_at_step", 1}},
      SlowOptions());
  EXPECT_EQ(rec.outcome, record::Outcome::kTimeout) << rec.message;
  EXPECT_EQ(rec.message.rfind("rank 1 of 2: ", 0), 0u) << rec.message;
  EXPECT_TRUE(Descendants(::getpid()).empty()) << "nothing is left running";
}

TEST_F(RankGroupTest, LauncherVariablesNeverReachARunner) {
  // A command runner that prints its environment (and then fails the cell: it speaks no protocol).
  ASSERT_EQ(setenv("RANK", "3", 1), 0);
  ASSERT_EQ(setenv("MASTER_PORT", "29500", 1), 0);
  ASSERT_EQ(setenv("SLURM_PROCID", "3", 1), 0);
  CellRunOptions o = Options();
  o.runner = RunnerCommand{{"/usr/bin/env"}, "env"};
  const record::CellRecord rec = Run(nlohmann::json::object(), o);
  unsetenv("RANK");
  unsetenv("MASTER_PORT");
  unsetenv("SLURM_PROCID");
  auto out = ReadFile(rec.stdout_path);
  ASSERT_TRUE(out.ok()) << rec.stdout_path;
  const std::string env = "\n" + *out;
  EXPECT_NE(env.find("\nDLBENCH_PROTOCOL_FD_IN="), std::string::npos) << *out;
  for (const char* name : {"\nRANK=", "\nMASTER_PORT=", "\nSLURM_PROCID="})
    EXPECT_EQ(env.find(name), std::string::npos) << name << " reached the runner:\n" << *out;
}

}  // namespace
}  // namespace dlbench::orchestrator
