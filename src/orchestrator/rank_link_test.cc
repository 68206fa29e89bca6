// The group of a group run's tasks (rank_link.h) within one process: task 0 forms it on the
// loopback address while the other tasks join from threads; a task with another plan is refused
// on both sides; one process's clock relates to itself with an offset within the round trip.
#include "orchestrator/rank_link.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "orchestrator/cell_runner.h"

namespace dlbench::orchestrator {
namespace {

GroupSettings Settings(int rank, int world, int port, const std::string& hash) {
  GroupSettings s;
  s.addr = "127.0.0.1";
  s.port = port;
  s.rank = rank;
  s.world_size = world;
  s.plan_hash = hash;
  s.join_timeout_s = 10;
  return s;
}

// A task's side in a thread: joins, serves (answers pings) until task 0 ends the run.
struct Task {
  Status joined = Status::Ok();
  Status served = Status::Ok();
  std::thread thread;
  void Start(const GroupSettings& s) {
    thread = std::thread([this, s] {
      auto link = JoinGroup(s);
      if (!link.ok()) {
        joined = link.error();
        return;
      }
      std::vector<plan::Cell> none;
      TaskRequest request;
      request.cells = &none;
      request.rank = s.rank;
      served = ServeRankGroup(**link, request);
    });
  }
};

TEST(RankLinkTest, ThreeTasksFormAGroupAndTheirClocksAgreeWithinTheRoundTrip) {
  auto port = FreeTcpPort();
  ASSERT_TRUE(port.ok()) << port.error().message;
  Task tasks[2];
  tasks[1].Start(Settings(2, 3, *port, "abc"));  // any order: a task retries until task 0 listens
  tasks[0].Start(Settings(1, 3, *port, "abc"));
  auto group = RankGroupLinks::Form(Settings(0, 3, *port, "abc"));
  ASSERT_TRUE(group.ok()) << group.error().message;
  EXPECT_EQ((*group)->world_size(), 3);
  EXPECT_EQ((*group)->bind_addr(), "127.0.0.1");
  for (int r = 1; r <= 2; ++r) {
    const GroupMember& m = (*group)->member(r);
    EXPECT_EQ(m.rank, r);
    EXPECT_GT(m.clock_rtt_ns, 0);
    // One process, one clock: the offset is 0 up to half the round trip.
    EXPECT_LE(std::llabs(m.clock_offset_ns), m.clock_rtt_ns / 2 + 1) << "rtt " << m.clock_rtt_ns;
    EXPECT_EQ(m.link->peer_addr(), "127.0.0.1");
  }
  (*group)->End(true, "done");
  for (Task& t : tasks) {
    t.thread.join();
    EXPECT_TRUE(t.joined.ok()) << t.joined.error().message;
    EXPECT_TRUE(t.served.ok()) << t.served.error().message;
  }
}

// A ddp cell of more ranks than the group has tasks ends unsupported, naming both numbers, and
// starts no rank.
TEST(RankLinkTest, ACellOfMoreRanksThanTasksIsUnsupported) {
  auto port = FreeTcpPort();
  ASSERT_TRUE(port.ok());
  Task task;
  task.Start(Settings(1, 2, *port, "p"));
  auto group = RankGroupLinks::Form(Settings(0, 2, *port, "p"));
  ASSERT_TRUE(group.ok()) << group.error().message;
  plan::Cell cell;
  cell.id = "c#r0";
  cell.params["strategy"] = "ddp";
  cell.params["world_size"] = 3;
  CellRunOptions o;
  o.log_dir = "/nonexistent";  // nothing is written: no rank starts
  o.group = group->get();
  const record::CellRecord rec = RunCell(cell, o);
  EXPECT_EQ(rec.outcome, record::Outcome::kUnsupported);
  EXPECT_EQ(rec.message.rfind(
                "world_size 3 needs 3 ranks, one per launcher task, and the launcher started 2 tasks", 0),
            0u)
      << rec.message;
  (*group)->End(true, "done");
  task.thread.join();
  EXPECT_TRUE(task.served.ok()) << task.served.error().message;
}

TEST(RankLinkTest, ATaskWithAnotherPlanIsRefusedOnBothSidesAndAnEndNotOkIsAnError) {
  auto port = FreeTcpPort();
  ASSERT_TRUE(port.ok());
  Task other;
  other.Start(Settings(1, 2, *port, "other-plan"));
  auto group = RankGroupLinks::Form(Settings(0, 2, *port, "our-plan"));
  other.thread.join();
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(group.error().message.find("different plan (hash other-plan) from rank 0's (our-plan)"),
            std::string::npos)
      << group.error().message;
  ASSERT_FALSE(other.joined.ok());
  EXPECT_EQ(other.joined.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(other.joined.error().message.find("refused: task 1 on "), std::string::npos)
      << other.joined.error().message;

  // A run that ended badly ends its tasks with task 0's message.
  auto port2 = FreeTcpPort();
  ASSERT_TRUE(port2.ok());
  Task task;
  task.Start(Settings(1, 2, *port2, "p"));
  auto formed = RankGroupLinks::Form(Settings(0, 2, *port2, "p"));
  ASSERT_TRUE(formed.ok()) << formed.error().message;
  formed->reset();  // destroyed without End: the run ended early
  task.thread.join();
  ASSERT_FALSE(task.served.ok());
  EXPECT_NE(task.served.error().message.find("rank 0 ended early"), std::string::npos)
      << task.served.error().message;
}

TEST(RankLinkTest, ATaskGivesUpWhenNoTaskZeroListensAndPlanHashesDifferByCell) {
  auto port = FreeTcpPort();
  ASSERT_TRUE(port.ok());
  GroupSettings s = Settings(1, 2, *port, "p");
  s.join_timeout_s = 0.3;
  const std::int64_t t0 = MonotonicNowNs();
  auto link = JoinGroup(s);
  ASSERT_FALSE(link.ok());
  EXPECT_LT(MonotonicNowNs() - t0, 5'000'000'000);
  EXPECT_NE(link.error().message.find("could not reach rank 0 at 127.0.0.1:"), std::string::npos)
      << link.error().message;

  plan::Cell a;
  a.id = "a#r0";
  plan::Cell b;
  b.id = "b#r0";
  EXPECT_EQ(PlanHash("m", "", {a, b}), PlanHash("m", "", {a, b}));
  EXPECT_NE(PlanHash("m", "", {a, b}), PlanHash("m", "", {b, a})) << "the order is part of the plan";
  EXPECT_NE(PlanHash("m", "", {a}), PlanHash("m", "--only x", {a}));
  EXPECT_NE(PlanHash("m", "", {a}), PlanHash("n", "", {a}));
  // A resumed plan's finished cells are part of it; a new run's (none) leave the hash as it was.
  EXPECT_EQ(PlanHash("m", "", {a, b}), PlanHash("m", "", {a, b}, {}));
  EXPECT_NE(PlanHash("m", "", {a, b}), PlanHash("m", "", {a, b}, {"a#r0"}));
  EXPECT_NE(PlanHash("m", "", {a, b}, {"a#r0"}), PlanHash("m", "", {a, b}, {"b#r0"}));
}

// A socket bound to the group port and not listening: it holds the port as a client connection's
// local port does (a TIME_WAIT lasts 60 s), and a task's connect to it is refused, so the task
// retries.
int HoldPort(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

// Rank 0 tries a port in use again until it is free (session 30's CI: torchrun's MASTER_PORT + 1
// was some connection's port): here it is held for 700 ms, and the group forms.
TEST(RankLinkTest, APortInUseForAWhileIsTriedAgainUntilItIsFree) {
  auto port = FreeTcpPort();
  ASSERT_TRUE(port.ok());
  const int held = HoldPort(*port);
  ASSERT_GE(held, 0) << std::strerror(errno);
  std::thread release([held] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    ::close(held);
  });
  Task task;
  task.Start(Settings(1, 2, *port, "p"));
  auto group = RankGroupLinks::Form(Settings(0, 2, *port, "p"));
  release.join();
  ASSERT_TRUE(group.ok()) << group.error().message;
  (*group)->End(true, "done");
  task.thread.join();
  EXPECT_TRUE(task.joined.ok()) << task.joined.error().message;
}

// Held through the join timeout (1 s), the port is an error that says how long it was tried.
TEST(RankLinkTest, APortInUseThroughTheJoinTimeoutIsAnErrorThatSaysHowLong) {
  auto port = FreeTcpPort();
  ASSERT_TRUE(port.ok());
  const int held = HoldPort(*port);
  ASSERT_GE(held, 0) << std::strerror(errno);
  GroupSettings s = Settings(0, 2, *port, "p");
  s.join_timeout_s = 1;
  auto group = RankGroupLinks::Form(s);
  ::close(held);
  ASSERT_FALSE(group.ok());
  EXPECT_NE(group.error().message.find(
                "cannot listen for the group's other 1 task(s) on 127.0.0.1:" + std::to_string(*port) +
                " (127.0.0.1 resolves to 127.0.0.1): Address already in use through "),
            std::string::npos)
      << group.error().message;
  EXPECT_NE(group.error().message.find(" s of tries; set DLBENCH_GROUP_PORT to a free port"),
            std::string::npos)
      << group.error().message;
}

}  // namespace
}  // namespace dlbench::orchestrator
