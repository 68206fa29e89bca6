// The pool's check of a kept runner (runner_pool.h): what it wrote after its DONE, named for the
// warning, and a process that died while kept; both are ended, not handed on.
#include "orchestrator/runner_pool.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>

#include <string>

#include "protocol/runner_session.h"
#include "protocol/wire.h"

namespace dlbench::orchestrator {
namespace {

using protocol::MessageType;

std::string StepsFrame() {
  std::string out;
  protocol::StepRecord r;
  r.start_ns = 1;
  r.end_ns = 2;
  protocol::AppendStepsFrame(out, 0, &r, 1);
  return out;
}

TEST(LateBytesTest, OneStepsFrameIsNamedWithItsSize) {
  // 8 bytes of frame header, 8 of rank and count, one 48-byte record.
  EXPECT_EQ(DescribeLateBytes({}, StepsFrame()), "1 frame (STEPS), 64 bytes");
}

TEST(LateBytesTest, BytesTheReaderHeldAlreadyStartTheStream) {
  std::string done;
  protocol::AppendJsonFrame(done, MessageType::kDone, {{"reason", "stopped"}, {"steps", 3}});
  ASSERT_EQ(done.size(), 38u);  // 8 + {"reason":"stopped","steps":3}
  protocol::FrameReader before;
  before.Feed(done.data(), 5);  // the driver had read part of the DONE's header when it released
  const std::string after = done.substr(5) + StepsFrame() + StepsFrame().substr(0, 3);
  EXPECT_EQ(DescribeLateBytes(before, after), "2 frames (DONE, STEPS), then part of a frame, 105 bytes");
}

TEST(LateBytesTest, BytesThatAreNoFrameAreSaidSo) {
  // Bytes 4-5 are the type: "ag" little-endian is 0x6761.
  EXPECT_EQ(DescribeLateBytes({}, "garbage!"), "bytes that are no frame (unknown frame type 26465), 8 bytes");
  EXPECT_EQ(DescribeLateBytes({}, "x"), "part of a frame, 1 byte");
}

TEST(LateBytesTest, FramesPastEightAreCounted) {
  std::string ten;
  for (int i = 0; i < 10; ++i) ten += StepsFrame();
  EXPECT_EQ(DescribeLateBytes({}, ten),
            "10 frames (STEPS, STEPS, STEPS, STEPS, STEPS, STEPS, STEPS, STEPS, ... 2 more), 640 bytes");
}

KeptRunner Start(const std::string& script) {
  auto spawned = SpawnRunner(RunnerCommand{{"/bin/sh", "-c", script}, "sh", {}}, /*with_logs=*/true);
  EXPECT_TRUE(spawned.ok());
  KeptRunner k{std::move(spawned).value(), "key", 3, 4, "c", "", 0, nullptr};
  k.spawned.cells_served = 1;
  // As a cell's driver leaves them: the pool's reads never block.
  for (int fd : {k.spawned.from_runner, k.spawned.stdout_fd, k.spawned.stderr_fd})
    (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return k;
}

TEST(RunnerPoolTest, AKeptProcessThatWroteAfterItsDoneIsEndedAndNamed) {
  RunnerPool pool(0.2);
  KeptRunner k = Start(std::string("printf 'garbage!' >&$") + protocol::kFdOutEnv + "; exec sleep 30");
  const pid_t pid = k.spawned.process.pid();
  pollfd p{k.spawned.from_runner, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10'000), 1) << "the script wrote nothing in 10 s";
  pool.Keep(std::move(k));
  std::string why;
  EXPECT_FALSE(pool.Take("key", &why).has_value());
  EXPECT_FALSE(pool.holds());
  EXPECT_EQ(why, "the runner process kept after cell 4 \"c\" (pid " + std::to_string(pid) +
                     ") sent bytes that are no frame (unknown frame type 26465), 8 bytes after that cell's "
                     "DONE: it was ended, not reused");
}

TEST(RunnerPoolTest, AKeptProcessThatDiedIsNotHandedOn) {
  RunnerPool pool(0.2);
  KeptRunner k = Start("exit 3");
  const pid_t pid = k.spawned.process.pid();
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);  // exited, not reaped
  pool.Keep(std::move(k));
  std::string why;
  EXPECT_FALSE(pool.Take("key", &why).has_value());
  EXPECT_EQ(why, "the runner process kept after cell 4 \"c\" (pid " + std::to_string(pid) +
                     ") ended while it was kept (exit code 3): it was ended, not reused");
}

TEST(RunnerPoolTest, ACleanKeptProcessIsHandedOnAndAnotherKeyEndsItWithoutAWarning) {
  RunnerPool pool(0.2);
  pool.Keep(Start("exec sleep 30"));
  std::string why;
  auto taken = pool.Take("key", &why);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(why, "");
  EXPECT_FALSE(pool.holds());
  pool.Keep(std::move(*taken));
  EXPECT_FALSE(pool.Take("another key", &why).has_value());
  EXPECT_EQ(why, "");
  EXPECT_FALSE(pool.holds());
}

}  // namespace
}  // namespace dlbench::orchestrator
