// Ranks whose task runs on another host (rank_group.h, rank_link.h), the task stood in for by the
// test: rank 0 drops a late report of a cell it gave up on, fails a rank whose task falls silent
// and takes that task for lost, keeps a task that beats while idle (storing both hosts' figures),
// tells a silent idle task apart before its next cell starts, and refuses a host report over the
// limit. One host's ranks: rank_group_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "monitor/fake_procfs.h"
#include "orchestrator/cell_runner.h"
#include "orchestrator/process_tree.h"
#include "orchestrator/rank_group.h"
#include "orchestrator/rank_group_test_support.h"
#include "orchestrator/rank_link.h"

namespace dlbench::orchestrator {
namespace {

using rank_group_testing::DdpCell;
using rank_group_testing::RankGroupTest;
using rank_group_testing::StepsPerRank;

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

// Rank 1's task that joins and then sends nothing of its own, not even a beat: it only answers task
// 0's clock pings, until `done` or until rank 0 closes the link.
void SilentTask(const GroupSettings& s, const std::atomic<bool>& done) {
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
}

// A task that joins and then says nothing, not even a beat, while its rank should run: rank 0 fails
// that rank once the silence limit passes (long before the cell's report deadline) and takes the
// task for lost, so the next cell that needs it ends without starting.
TEST_F(RankGroupTest, ARemoteRankWhoseTaskFallsSilentFailsAndTheTaskIsLostForTheRun) {
  GroupSettings s;
  ASSERT_TRUE(TwoRankGroup(s));
  s.silence_s = 1;
  std::atomic<bool> done{false};
  std::thread task([&] { SilentTask(s, done); });
  auto group = RankGroupLinks::Form(s);
  ASSERT_TRUE(group.ok()) << group.error().message;
  CellRunOptions o = SlowOptions();
  o.group = group->get();
  plan::Cell cell = DdpCell("a", 0);
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
  std::thread task([&] { SilentTask(s, done); });
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
