// A ddp cell's ranks as the orchestrator launches and supervises them (rank_group.h), with
// dlbench-null ranks in virtual time: every rank's records are stored with their rank, the ranks
// stop together, a rank that crashes or hangs ends the cell naming it, and nothing is left running.
// The launcher variables never reach a runner.
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
#include "orchestrator/rank_link.h"

namespace dlbench::orchestrator {
namespace {

class RankGroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("dlbench_rank_group_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  CellRunOptions Options() const {
    CellRunOptions o;
    auto runner = ResolveRunner(config::RunnerSpec{"null", {}}, DLBENCH_BIN_DIR);
    EXPECT_TRUE(runner.ok());
    o.runner = *runner;
    o.log_dir = dir_.string();
    o.timeout_s = 20;
    o.measure.min_steps = 20;
    o.measure.min_time_s = 0.05;
    o.measure.max_time_s = 2.0;
    o.measure.target_rel_ci = 0.05;
    o.stop_grace_s = 0.5;
    o.exit_grace_s = 0.5;
    return o;
  }

  // Rank 0 measures long enough (500 steps at 10x real time: 50 ms) for a fault at another rank's
  // first step to happen before rank 0's STOP reaches it.
  CellRunOptions SlowOptions() const {
    CellRunOptions o = Options();
    o.measure.min_steps = 500;
    return o;
  }

  record::CellRecord Run(nlohmann::json params, const CellRunOptions& o) const {
    plan::Cell cell;
    cell.id = "c#r0";
    cell.key = "c";
    cell.seed = 7;
    params["virtual_time"] = true;
    params["virtual_speedup"] = 10.0;
    params["step_ms"] = 1.0;
    for (auto& [k, v] : params.items()) cell.params[k] = v;
    return RunCell(cell, o);
  }

  // Rank 0's settings of a group of two on the loopback at a free port, which a fake task joins as
  // rank 1; false (with the reason) when no port was free.
  static ::testing::AssertionResult TwoRankGroup(GroupSettings& s) {
    auto port = FreeTcpPort();
    if (!port.ok()) return ::testing::AssertionFailure() << port.error().message;
    s.addr = "127.0.0.1";
    s.port = *port;
    s.world_size = 2;
    s.plan_hash = "p";
    s.join_timeout_s = 10;
    return ::testing::AssertionSuccess();
  }

  std::filesystem::path dir_;
};

std::map<std::uint32_t, std::size_t> StepsPerRank(const record::CellRecord& rec) {
  std::map<std::uint32_t, std::size_t> n;
  for (const auto& row : rec.steps) ++n[row.rank];
  return n;
}

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

// A ddp cell of two ranks of the null runner in virtual time (10x), `key` at plan position `index`.
plan::Cell DdpCell(const std::string& key, int index) {
  plan::Cell c;
  c.id = key + "#r0";
  c.key = key;
  c.label = key;
  c.index = index;
  c.seed = 7;
  const nlohmann::json params = {{"strategy", "ddp"},
                                 {"world_size", 2},
                                 {"virtual_time", true},
                                 {"virtual_speedup", 10.0},
                                 {"step_ms", 1.0}};
  for (const auto& [k, v] : params.items()) c.params[k] = v;
  return c;
}

// Rank 0 gives up on a task that reports nothing (here a fake task that stays silent through cell
// 1), and the task's report of cell 1 comes late, after cell 1 ended and before cell 2's order:
// cell 2 must end with its own report (rank 1 crashed), the late one dropped with a warning, and
// the task told to abort cell 1 when rank 0 gave up on it.
TEST_F(RankGroupTest, ALateReportOfACellRankZeroGaveUpOnIsDroppedNotTakenForTheNextCells) {
  GroupSettings s;
  ASSERT_TRUE(TwoRankGroup(s));
  s.report_slack_s = 0.2;
  std::atomic<bool> first_ended{false}, late_sent{false};
  std::int64_t first_seq = -1, second_seq = -1;
  bool first_aborted = false;
  std::thread task([&] {
    GroupSettings t = s;
    t.rank = 1;
    auto link = JoinGroup(t);
    ASSERT_TRUE(link.ok()) << link.error().message;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      auto m = (*link)->Receive(50);
      ASSERT_TRUE(m.ok()) << m.error().message;
      if (first_ended && !late_sent) {
        // Cell 1 ended without this task's report: it comes now, of cell 1's order.
        record::StepRecord step{};
        step.start_ns = 1;
        step.end_ns = 2;
        ASSERT_TRUE((*link)->SendSteps({step, step}, first_seq).ok());
        ASSERT_TRUE((*link)
                        ->Send({{"type", "rank_done"},
                                {"cell_seq", first_seq},
                                {"outcome", "ok"},
                                {"message", "the late report of cell 1"}})
                        .ok());
        late_sent = true;
      }
      if (!m->has_value()) continue;
      const nlohmann::json& msg = (*m)->json;
      const std::string type = msg["type"];
      if (type == "ping") {
        ASSERT_TRUE((*link)->Send({{"type", "pong"}, {"t_ns", MonotonicNowNs()}}).ok());
      } else if (type == "abort" && msg.value("cell_seq", -1) == first_seq) {
        first_aborted = true;
      } else if (type == "cell" && first_seq < 0) {
        first_seq = msg["cell_seq"];  // and nothing is said
      } else if (type == "cell") {
        second_seq = msg["cell_seq"];
        ASSERT_TRUE((*link)
                        ->Send({{"type", "rank_done"},
                                {"cell_seq", second_seq},
                                {"outcome", "crashed"},
                                {"message", "cell 2's own report"}})
                        .ok());
      } else if (type == "end") {
        return;
      }
    }
    ADD_FAILURE() << "rank 0 never ended the run";
  });
  auto group = RankGroupLinks::Form(s);
  ASSERT_TRUE(group.ok()) << group.error().message;
  CellRunOptions o = SlowOptions();
  o.timeout_s = 1;  // rank 0 gives up on the task 2.2 s after cell 1 starts
  o.group = group->get();
  const record::CellRecord first = RunCell(DdpCell("a", 0), o);
  first_ended = true;
  const auto wait_until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!late_sent && std::chrono::steady_clock::now() < wait_until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(late_sent);
  const record::CellRecord second = RunCell(DdpCell("b", 1), o);
  (*group)->End(true, "done");
  task.join();

  EXPECT_EQ(first.outcome, record::Outcome::kError) << first.message;
  EXPECT_NE(first.message.find("rank 1 of 2: its task on "), std::string::npos) << first.message;
  EXPECT_NE(first.message.find("did not report the rank's end in time"), std::string::npos) << first.message;
  EXPECT_TRUE(first_aborted) << "the task was told to abort the cell rank 0 gave up on";
  EXPECT_EQ(first_seq, 1);
  EXPECT_EQ(second_seq, 2);
  EXPECT_EQ(second.outcome, record::Outcome::kCrashed) << second.message;
  EXPECT_EQ(second.message, "rank 1 of 2: cell 2's own report");
  EXPECT_EQ(StepsPerRank(second).count(1), 0u) << "cell 1's late steps are not cell 2's";
  ASSERT_TRUE(second.extras.contains("warnings")) << second.extras.dump();
  std::string warnings = second.extras["warnings"].dump();
  EXPECT_NE(warnings.find("sent 2 step records of cell order 1 while this cell is order 2"),
            std::string::npos)
      << warnings;
  EXPECT_NE(
      warnings.find("sent rank_done of cell order 1 while this cell is order 2: a late report of a cell "
                    "rank 0 gave up on; dropped"),
      std::string::npos)
      << warnings;
  EXPECT_TRUE(Descendants(::getpid()).empty()) << "nothing is left running";
}

// A task that joins and then says nothing, not even a beat, while its rank should run: rank 0 fails
// that rank once the silence limit passes (long before the cell's report deadline) and takes the
// task for lost, so the next cell that needs it ends without starting.
TEST_F(RankGroupTest, ARemoteRankWhoseTaskFallsSilentFailsAndTheTaskIsLostForTheRun) {
  GroupSettings s;
  ASSERT_TRUE(TwoRankGroup(s));
  s.silence_s = 1;
  std::atomic<bool> done{false};
  std::thread task([&] {
    GroupSettings t = s;
    t.rank = 1;
    auto link = JoinGroup(t);
    ASSERT_TRUE(link.ok()) << link.error().message;
    while (!done) {
      auto m = (*link)->Receive(50);
      if (!m.ok()) return;  // rank 0 closed it
      if (m->has_value() && (*m)->json.value("type", "") == "ping") {
        ASSERT_TRUE((*link)->Send({{"type", "pong"}, {"t_ns", MonotonicNowNs()}}).ok());
      }
    }
  });
  auto group = RankGroupLinks::Form(s);
  ASSERT_TRUE(group.ok()) << group.error().message;
  CellRunOptions o = SlowOptions();
  o.group = group->get();
  plan::Cell cell;
  cell.id = "a#r0";
  cell.key = "a";
  cell.label = "a";
  cell.seed = 7;
  const nlohmann::json params = {{"strategy", "ddp"},
                                 {"world_size", 2},
                                 {"virtual_time", true},
                                 {"virtual_speedup", 10.0},
                                 {"step_ms", 1.0}};
  for (const auto& [k, v] : params.items()) cell.params[k] = v;
  const std::int64_t t0 = MonotonicNowNs();
  const record::CellRecord first = RunCell(cell, o);
  const double took_s = static_cast<double>(MonotonicNowNs() - t0) * 1e-9;
  cell.id = "b#r0";
  cell.index = 1;
  const record::CellRecord second = RunCell(cell, o);
  done = true;
  (*group)->End(true, "done");
  task.join();
  EXPECT_EQ(first.outcome, record::Outcome::kError) << first.message;
  EXPECT_NE(first.message.find("rank 1 of 2: its task on "), std::string::npos) << first.message;
  EXPECT_NE(first.message.find(" sent nothing for 1 s (a task sends a beat every 1 s)"), std::string::npos)
      << first.message;
  EXPECT_LT(took_s, 15.0) << "the silence, not the cell's report deadline (20 s + graces + 30 s)";
  EXPECT_EQ(second.outcome, record::Outcome::kError) << second.message;
  EXPECT_NE(second.message.find("in an earlier cell; no cell that needs it can run"), std::string::npos)
      << second.message;
  EXPECT_TRUE(Descendants(::getpid()).empty()) << "nothing is left running";
}

}  // namespace
}  // namespace dlbench::orchestrator

namespace dlbench::orchestrator {
namespace {

// The settings of a two-task group on this host at a free port.
GroupSettings TwoTasks(double silence_s) {
  auto port = FreeTcpPort();
  EXPECT_TRUE(port.ok()) << port.error().message;
  GroupSettings s;
  s.addr = "127.0.0.1";
  s.port = port.ok() ? *port : 0;
  s.world_size = 2;
  s.plan_hash = "p";
  s.join_timeout_s = 10;
  s.silence_s = silence_s;
  return s;
}

// Rank 1's task stood in for by the test (a real ServeRankGroup in this process would reap rank 0's
// runner with its leftovers): joins, answers task 0's clock pings and, for each cell order until
// `end`, calls `on_cell` with the order's cell_seq to send its reports; beats the whole time when
// `beats`, as ServeRankGroup's tasks do.
void StandInTask(const GroupSettings& s, bool beats,
                 const std::function<void(RankLink&, std::int64_t)>& on_cell) {
  GroupSettings t = s;
  t.rank = 1;
  auto link = JoinGroup(t);
  ASSERT_TRUE(link.ok()) << link.error().message;
  std::unique_ptr<LinkBeat> beat;
  if (beats) beat = std::make_unique<LinkBeat>(std::vector<RankLink*>{link->get()});
  for (;;) {
    auto m = (*link)->Receive(50);
    if (!m.ok()) return;
    if (!m->has_value()) continue;
    const std::string type = (*m)->json.value("type", "");
    if (type == "ping") {
      ASSERT_TRUE((*link)->Send({{"type", "pong"}, {"t_ns", MonotonicNowNs()}}).ok());
    }
    if (type == "end") return;
    if (type == "cell") on_cell(**link, (*m)->json["cell_seq"].get<std::int64_t>());
  }
}

// A task idle for longer than the silence limit between two cells, beating as ServeRankGroup's
// tasks do (LinkBeat, for the whole run): rank 0's beat thread drains its beats, so the task is not
// taken for lost and its next rank runs; and each cell stores both hosts' figures, rank 0's from its
// own monitor and rank 1's as its task's `host` report said. (The task here is a stand-in: a real
// ServeRankGroup in this process would kill rank 0's runner with its leftovers, since KillLeftovers
// takes every descendant of the process; GroupHostsE2E runs real tasks.)
// The limit is the smallest DLBENCH_GROUP_SILENCE_S allows: at 1 s, one beat interval, a live task
// could be heard 1-2 s apart and was taken for gone (session 22's fresh clone, under load).
TEST_F(RankGroupTest, AnIdleTaskThatBeatsOutlastsTheSilenceLimitAndBothHostsAreStored) {
  const GroupSettings s = TwoTasks(kMinGroupSilenceS);
  const nlohmann::json figures = {{"rounds", 3}, {"span_s", 0.2}, {"host_mem_peak_bytes", 1e9}};
  std::thread task([&] {
    StandInTask(s, /*beats=*/true, [&](RankLink& link, std::int64_t seq) {
      ASSERT_TRUE(link.Send({{"type", "host"}, {"cell_seq", seq}, {"figures", figures}}).ok());
      ASSERT_TRUE(link.Send({{"type", "rank_done"}, {"cell_seq", seq}, {"outcome", "ok"}}).ok());
    });
  });
  auto group = RankGroupLinks::Form(s);
  ASSERT_TRUE(group.ok()) << group.error().message;
  MonotonicClock clock;
  monitor::Monitor monitor(monitor::DefaultSamplers(), clock, 50);
  CellRunOptions o = SlowOptions();
  o.group = group->get();
  o.monitor = &monitor;
  const record::CellRecord first = RunCell(DdpCell("a", 0), o);
  std::this_thread::sleep_for(std::chrono::milliseconds(5000));  // 2.5x the silence limit, idle
  const record::CellRecord second = RunCell(DdpCell("b", 1), o);
  (*group)->End(true, "done");
  task.join();
  EXPECT_EQ(first.outcome, record::Outcome::kOk) << first.message;
  EXPECT_EQ(second.outcome, record::Outcome::kOk) << second.message;
  for (const record::CellRecord* rec : {&first, &second}) {
    ASSERT_TRUE(rec->extras.contains("hosts")) << rec->extras.dump();
    const nlohmann::json& hosts = rec->extras["hosts"];
    ASSERT_EQ(hosts.size(), 2u) << hosts.dump();
    EXPECT_EQ(hosts[0]["rank"], 0);
    EXPECT_EQ(hosts[0]["addr"], "127.0.0.1");
    ASSERT_TRUE(hosts[0].contains("figures")) << hosts.dump();
    EXPECT_GE(hosts[0]["figures"]["rounds"].get<int>(), 2) << hosts.dump();
    EXPECT_GT(hosts[0]["figures"].value("runner_rss_peak_bytes", 0.0), 0.0) << hosts.dump();
    EXPECT_EQ(hosts[1]["rank"], 1);
    EXPECT_EQ(hosts[1]["addr"], "127.0.0.1");
    EXPECT_EQ(hosts[1]["figures"], figures) << hosts.dump();
  }
  EXPECT_TRUE(Descendants(::getpid()).empty()) << "nothing is left running";
}

// A task that joined and then sends nothing while idle (no beats, as a stopped process): rank 0
// tells it apart at the next cell that needs it, before that cell starts anything, instead of
// starting rank 0 and waiting out the silence limit again.
TEST_F(RankGroupTest, AnIdleTaskThatFallsSilentIsToldApartBeforeItsNextCellStarts) {
  const GroupSettings s = TwoTasks(1);
  std::atomic<bool> done{false};
  std::thread task([&] {
    GroupSettings t = s;
    t.rank = 1;
    auto link = JoinGroup(t);
    ASSERT_TRUE(link.ok()) << link.error().message;
    while (!done) {
      auto m = (*link)->Receive(50);
      if (!m.ok()) return;
      if (m->has_value() && (*m)->json.value("type", "") == "ping") {
        ASSERT_TRUE((*link)->Send({{"type", "pong"}, {"t_ns", MonotonicNowNs()}}).ok());
      }
    }
  });
  auto group = RankGroupLinks::Form(s);
  ASSERT_TRUE(group.ok()) << group.error().message;
  CellRunOptions o = SlowOptions();
  o.group = group->get();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const std::int64_t t0 = MonotonicNowNs();
  const record::CellRecord rec = RunCell(DdpCell("a", 0), o);
  const double took_s = static_cast<double>(MonotonicNowNs() - t0) * 1e-9;
  done = true;
  (*group)->End(true, "done");
  task.join();
  EXPECT_EQ(rec.outcome, record::Outcome::kError) << rec.message;
  EXPECT_NE(rec.message.find("rank 1 of 2: its task on "), std::string::npos) << rec.message;
  EXPECT_NE(rec.message.find(" sent nothing for over 1 s while it waited idle for this cell (an idle task "
                             "sends a beat every 1 s)"),
            std::string::npos)
      << rec.message;
  EXPECT_TRUE(rec.steps.empty()) << "rank 0 never started";
  EXPECT_LT(took_s, 0.9) << "told apart at once, not after another silence limit";
}

// A task's host report over monitor::kMaxHostReportBytes is refused with a warning in the cell, and
// so is a task's word that its report would have been that large (it then sends only the size); the
// cells themselves are unaffected.
TEST_F(RankGroupTest, AHostReportOverTheLimitIsRefusedWithAWarning) {
  const GroupSettings s = TwoTasks(10);
  std::thread task([&] {
    StandInTask(s, /*beats=*/false, [&](RankLink& link, std::int64_t seq) {
      const nlohmann::json big = {
          {"type", "host"},
          {"cell_seq", seq},
          {"figures", {{"rounds", 1}, {"pad", std::string(std::size_t{70} * 1024, 'x')}}}};
      const nlohmann::json said = {{"type", "host"}, {"cell_seq", seq}, {"too_large_bytes", 123456}};
      ASSERT_TRUE(link.Send(seq == 1 ? big : said).ok());
      ASSERT_TRUE(link.Send({{"type", "rank_done"}, {"cell_seq", seq}, {"outcome", "ok"}}).ok());
    });
  });
  auto group = RankGroupLinks::Form(s);
  ASSERT_TRUE(group.ok()) << group.error().message;
  CellRunOptions o = SlowOptions();
  o.group = group->get();
  const record::CellRecord rec = RunCell(DdpCell("a", 0), o);
  const record::CellRecord said = RunCell(DdpCell("b", 1), o);
  (*group)->End(true, "done");
  task.join();
  EXPECT_EQ(rec.outcome, record::Outcome::kOk) << rec.message;
  EXPECT_EQ(said.outcome, record::Outcome::kOk) << said.message;
  EXPECT_NE(said.extras.value("warnings", nlohmann::json::array())
                .dump()
                .find("had a host report of 123456 bytes, over the limit of 65536: refused"),
            std::string::npos)
      << said.extras.dump();
  const std::string warnings = rec.extras.value("warnings", nlohmann::json::array()).dump();
  EXPECT_NE(warnings.find("rank 1's task on "), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("bytes, over the limit of 65536: refused, its host's figures are not stored"),
            std::string::npos)
      << warnings;
  ASSERT_EQ(rec.extras["hosts"].size(), 2u) << rec.extras.dump();
  EXPECT_FALSE(rec.extras["hosts"][1].contains("figures"));
  EXPECT_TRUE(rec.extras["hosts"][1].contains("missing"));
  EXPECT_EQ(rec.extras["hosts"][0]["missing"], "rank 0 ran with --no-monitor");
}

}  // namespace
}  // namespace dlbench::orchestrator
