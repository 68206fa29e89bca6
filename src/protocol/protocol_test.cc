#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/subprocess.h"
#include "protocol/runner_session.h"
#include "protocol/wire.h"

namespace dlbench::protocol {
namespace {

const StepRecord& StepRecordZero() {
  static const StepRecord zero{};
  return zero;
}

std::vector<Frame> DecodeAll(const std::string& bytes, std::size_t piece) {
  FrameReader reader;
  std::vector<Frame> frames;
  for (std::size_t i = 0; i < bytes.size(); i += piece) {
    reader.Feed(bytes.data() + i, std::min(piece, bytes.size() - i));
    for (;;) {
      auto f = reader.Next();
      EXPECT_TRUE(f.ok());
      if (!f.ok() || !f->has_value()) break;
      frames.push_back(std::move(**f));
    }
  }
  return frames;
}

TEST(WireTest, JsonAndStepFramesRoundTripWhateverTheChunking) {
  std::string bytes;
  AppendJsonFrame(bytes, MessageType::kHello, {{"runner", "null"}, {"protocol", 1}});
  StepRecord records[3];
  for (int i = 0; i < 3; ++i) {
    records[i].start_ns = 12'000'000'000LL + i * 1000;
    records[i].end_ns = records[i].start_ns + 700 + i;
    records[i].samples = 32;
    records[i].comm_ns = 5;
    records[i].present = kHasComm;
  }
  AppendStepsFrame(bytes, 1, records, 3);
  AppendJsonFrame(bytes, MessageType::kDone, {{"reason", "stopped"}});
  for (std::size_t piece : {std::size_t{1}, std::size_t{7}, bytes.size()}) {
    auto frames = DecodeAll(bytes, piece);
    ASSERT_EQ(frames.size(), 3u) << "piece " << piece;
    EXPECT_EQ(frames[0].type, MessageType::kHello);
    EXPECT_EQ((*DecodeJson(frames[0]))["runner"], "null");
    auto batch = DecodeSteps(frames[1]);
    ASSERT_TRUE(batch.ok());
    EXPECT_EQ(batch->rank, 1u);
    ASSERT_EQ(batch->records.size(), 3u);
    EXPECT_EQ(batch->records[2].end_ns, 12'000'002'702LL);
    EXPECT_EQ(batch->records[2].present, kHasComm);
    EXPECT_EQ(frames[2].type, MessageType::kDone);
  }
}

TEST(WireTest, GarbageIsAProtocolError) {
  FrameReader reader;
  const char junk[] = "this is not a frame at all";
  reader.Feed(junk, sizeof junk);
  auto f = reader.Next();
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().kind, ErrorKind::kProtocol);
}

TEST(WireTest, OversizedFrameIsRejectedBeforeBuffering) {
  std::string bytes;
  std::uint32_t len = kMaxPayloadBytes + 1;
  std::uint16_t type = 1, reserved = 0;
  bytes.append(reinterpret_cast<char*>(&len), 4);
  bytes.append(reinterpret_cast<char*>(&type), 2);
  bytes.append(reinterpret_cast<char*>(&reserved), 2);
  FrameReader reader;
  reader.Feed(bytes.data(), bytes.size());
  EXPECT_FALSE(reader.Next().ok());
}

TEST(WireTest, StepsFrameWithWrongLengthOrBackwardsTimeIsRejected) {
  Frame f{MessageType::kSteps, std::string(12, '\0')};
  EXPECT_FALSE(DecodeSteps(f).ok());
  std::string bytes;
  StepRecord r;
  r.start_ns = 10;
  r.end_ns = 5;
  AppendStepsFrame(bytes, 0, &r, 1);
  auto frames = DecodeAll(bytes, bytes.size());
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_FALSE(DecodeSteps(frames[0]).ok());
}

TEST(WireTest, NonObjectJsonIsRejected) {
  Frame f{MessageType::kHello, "[1,2]"};
  EXPECT_FALSE(DecodeJson(f).ok());
  Frame g{MessageType::kHello, "{not json"};
  EXPECT_FALSE(DecodeJson(g).ok());
}

TEST(ConfigureTest, RoundTrips) {
  CellConfig c;
  c.params = {{"model", "resnet50"}, {"batch_size", 32}};
  c.seed = 1234567890123ULL;
  c.rank = 1;
  c.world_size = 2;
  c.limits.max_steps = 77;
  c.limits.max_time_s = 1.5;
  c.cell_key = "k";
  auto back = ParseConfigure(ConfigureToJson(c));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->params, c.params);
  EXPECT_EQ(back->seed, c.seed);
  EXPECT_EQ(back->rank, 1);
  EXPECT_EQ(back->world_size, 2);
  EXPECT_EQ(back->limits.max_steps, 77);
  EXPECT_DOUBLE_EQ(back->limits.max_time_s, 1.5);
  EXPECT_FALSE(back->rendezvous.has_value()) << "a single-process cell has no rendezvous";
}

TEST(ConfigureTest, RendezvousRoundTripsAndABadPortIsRefused) {
  CellConfig c;
  c.rank = 1;
  c.world_size = 2;
  c.rendezvous = Rendezvous{"", "127.0.0.1", 29517, 1, 2};
  auto back = ParseConfigure(ConfigureToJson(c));
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(back->rendezvous.has_value());
  EXPECT_EQ(back->rendezvous->addr, "127.0.0.1");
  EXPECT_EQ(back->rendezvous->port, 29517);
  EXPECT_EQ(back->rendezvous->local_rank, 1);
  EXPECT_EQ(back->rendezvous->local_world_size, 2);
  nlohmann::json bad = ConfigureToJson(c);
  bad["rendezvous"]["port"] = 70000;
  EXPECT_FALSE(ParseConfigure(bad).ok());
  bad["rendezvous"].erase("addr");
  EXPECT_FALSE(ParseConfigure(bad).ok());
}

// The rendezvous `dlbench run` gives the ranks it starts: a file, no address or port.
TEST(ConfigureTest, AFileRendezvousRoundTripsAndMustBeAnAbsolutePath) {
  CellConfig c;
  c.rank = 0;
  c.world_size = 2;
  c.rendezvous = Rendezvous{"/run/x/cell-0004.rendezvous", "", 0, 0, 2};
  const nlohmann::json sent = ConfigureToJson(c);
  EXPECT_FALSE(sent["rendezvous"].contains("port")) << sent.dump();
  auto back = ParseConfigure(sent);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_TRUE(back->rendezvous.has_value());
  EXPECT_EQ(back->rendezvous->file, "/run/x/cell-0004.rendezvous");
  EXPECT_EQ(back->rendezvous->port, 0);
  EXPECT_EQ(back->rendezvous->local_world_size, 2);
  nlohmann::json relative = sent;
  relative["rendezvous"]["file"] = "cell-0004.rendezvous";
  auto refused = ParseConfigure(relative);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("absolute path"), std::string::npos) << refused.error().message;
  relative["rendezvous"]["file"] = "";
  EXPECT_FALSE(ParseConfigure(relative).ok());
}

// Runner side against a hand-driven orchestrator over real pipes.
TEST(RunnerSessionTest, LoopStreamsStepsAndStopsOnStop) {
  auto to_runner = MakePipe();
  auto to_orch = MakePipe();
  ASSERT_TRUE(to_runner.ok() && to_orch.ok());
  auto session = RunnerSession::FromFds(to_runner->first, to_orch->second);

  std::string cfg;
  CellConfig c;
  c.limits.max_steps = 1'000'000;
  c.limits.max_time_s = 30;
  AppendJsonFrame(cfg, MessageType::kConfigure, ConfigureToJson(c));
  // STOP is already waiting: the loop must notice it at its first flush.
  AppendJsonFrame(cfg, MessageType::kStop, nlohmann::json::object());
  ASSERT_TRUE(WriteAll(to_runner->second, cfg).ok());
  ASSERT_TRUE(session->SendHello({{"runner", "test"}}).ok());
  auto got = session->ReceiveConfigure();
  ASSERT_TRUE(got.ok()) << got.error().message;

  auto result = RunStepLoop(*session, got->limits, [](StepRecord& r) {
    r.samples = 4;
    return true;
  });
  EXPECT_EQ(result.end, LoopEnd::kStopped);
  EXPECT_GE(result.steps, 1);
  EXPECT_LE(result.steps, static_cast<std::int64_t>(RunnerSession::kBatchRecords));
  ASSERT_TRUE(session->SendDone(LoopEndName(result.end), result.steps).ok());
  close(to_orch->second);

  FrameReader reader;
  std::int64_t steps = 0;
  bool hello = false, done = false;
  for (;;) {
    auto n = ReadInto(to_orch->first, reader);
    ASSERT_TRUE(n.ok());
    if (*n == 0) break;
  }
  for (;;) {
    auto f = reader.Next();
    ASSERT_TRUE(f.ok());
    if (!f->has_value()) break;
    if ((*f)->type == MessageType::kHello) hello = true;
    if ((*f)->type == MessageType::kDone) done = true;
    if ((*f)->type == MessageType::kSteps) {
      auto b = DecodeSteps(**f);
      ASSERT_TRUE(b.ok());
      for (const auto& r : b->records) {
        EXPECT_EQ(r.samples, 4u);
        EXPECT_GE(r.end_ns, r.start_ns);
      }
      steps += static_cast<std::int64_t>(b->records.size());
    }
  }
  EXPECT_TRUE(hello);
  EXPECT_TRUE(done);
  EXPECT_EQ(steps, result.steps);
  for (int fd : {to_runner->first, to_runner->second, to_orch->first}) close(fd);
}

// measure.retry_disturbed's attempt: absent from a first attempt's CONFIGURE (old runners see
// nothing new), round-trips from the second on, and an attempt below 1 is a protocol error.
TEST(RunnerSessionTest, TheAttemptIsSentFromTheSecondOnAndRoundTrips) {
  CellConfig first;
  EXPECT_FALSE(ConfigureToJson(first).contains("attempt"));
  EXPECT_EQ(ParseConfigure(ConfigureToJson(first))->attempt, 1);
  CellConfig again;
  again.attempt = 3;
  EXPECT_EQ(ConfigureToJson(again)["attempt"], 3);
  EXPECT_EQ(ParseConfigure(ConfigureToJson(again))->attempt, 3);
  nlohmann::json bad = ConfigureToJson(first);
  bad["attempt"] = 0;
  EXPECT_FALSE(ParseConfigure(bad).ok());
  bad["attempt"] = "2";
  EXPECT_FALSE(ParseConfigure(bad).ok());
}

// A runner serving several cells (docs/adr/0011-runner-reuse.md): serve_more round-trips and is
// absent from a plain CONFIGURE; a STOP that crossed the first cell's DONE is skipped before the
// next CONFIGURE; BeginNextCell forgets the first cell's STOP; the end of the pipe then ends it.
TEST(RunnerSessionTest, ASecondCellFollowsDoneAfterAStaleStop) {
  CellConfig plain;
  EXPECT_FALSE(ConfigureToJson(plain).contains("serve_more"));
  CellConfig more;
  more.serve_more = true;
  more.limits.max_steps = 5;
  EXPECT_TRUE(ParseConfigure(ConfigureToJson(more))->serve_more);
  EXPECT_FALSE(ParseConfigure(ConfigureToJson(plain))->serve_more);

  auto to_runner = MakePipe();
  auto to_orch = MakePipe();
  ASSERT_TRUE(to_runner.ok() && to_orch.ok());
  auto session = RunnerSession::FromFds(to_runner->first, to_orch->second);
  std::string first;
  AppendJsonFrame(first, MessageType::kConfigure, ConfigureToJson(more));
  AppendJsonFrame(first, MessageType::kStop, nlohmann::json::object());
  ASSERT_TRUE(WriteAll(to_runner->second, first).ok());
  ASSERT_TRUE(session->ReceiveConfigure().ok());
  auto loop = [](StepRecord& r) {
    r.samples = 1;
    return true;
  };
  // Five steps end the loop at its ceiling before a flush looks for STOP; its last flush reads it.
  EXPECT_EQ(RunStepLoop(*session, more.limits, loop).end, LoopEnd::kMaxSteps);
  EXPECT_TRUE(session->stop_requested());
  ASSERT_TRUE(session->SendDone("max_steps", 5).ok());

  // The orchestrator's STOP for the first cell arrives after it ended, then the second CONFIGURE.
  std::string second;
  AppendJsonFrame(second, MessageType::kStop, nlohmann::json::object());
  AppendJsonFrame(second, MessageType::kConfigure, ConfigureToJson(more));
  ASSERT_TRUE(WriteAll(to_runner->second, second).ok());
  session->BeginNextCell();
  auto next = session->ReceiveConfigure();
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_FALSE(session->stop_requested());
  const LoopResult r = RunStepLoop(*session, next->limits, loop);
  EXPECT_EQ(r.end, LoopEnd::kMaxSteps) << "the first cell's STOP does not stop the second";
  EXPECT_EQ(r.steps, 5);

  close(to_runner->second);
  session->BeginNextCell();
  auto end = session->ReceiveConfigure();
  ASSERT_FALSE(end.ok());
  EXPECT_EQ(end.error().kind, ErrorKind::kIo);
  for (int fd : {to_runner->first, to_orch->first, to_orch->second}) close(fd);
}

TEST(RunnerSessionTest, CeilingEndsTheLoopWithoutAnOrchestrator) {
  auto to_runner = MakePipe();
  auto to_orch = MakePipe();
  ASSERT_TRUE(to_runner.ok() && to_orch.ok());
  auto session = RunnerSession::FromFds(to_runner->first, to_orch->second);
  RunnerLimits limits;
  limits.max_steps = 10;
  auto result = RunStepLoop(*session, limits, [](StepRecord&) { return true; });
  EXPECT_EQ(result.end, LoopEnd::kMaxSteps);
  EXPECT_EQ(result.steps, 10);
  for (int fd : {to_runner->first, to_runner->second, to_orch->first, to_orch->second}) close(fd);
}

// The session fills its STEPS frame in place (RunnerSession::Record copies a record into it,
// NextRecord/CommitRecord let the loop write the slot directly): what reaches the pipe must be
// exactly what AppendStepsFrame makes of the same records, split after kBatchRecords, and a slot
// reused after a flush must start zeroed.
TEST(RunnerSessionTest, InPlaceStepsFramesMatchAppendStepsFrameByteForByte) {
  auto to_runner = MakePipe();
  auto to_orch = MakePipe();
  ASSERT_TRUE(to_runner.ok() && to_orch.ok());
  auto session = RunnerSession::FromFds(to_runner->first, to_orch->second);
  session->set_rank(3);
  constexpr std::size_t kRecords = RunnerSession::kBatchRecords + 3;
  std::vector<StepRecord> sent;
  // All records end within one flush interval of the session's creation: only the count flushes.
  const std::int64_t base = MonotonicNowNs();
  for (std::size_t i = 0; i < kRecords; ++i) {
    const auto n = static_cast<std::int64_t>(i);
    StepRecord r;
    r.start_ns = base + 2 * n;
    r.end_ns = base + 2 * n + 1;
    r.samples = static_cast<std::uint32_t>(i + 1);
    if (i % 2 == 0) {
      r.compute_ns = 7 * n + 1;
      r.data_wait_ns = n;
      r.comm_ns = 3;
      r.present = kHasCompute | kHasDataWait | kHasComm;
      session->Record(r);
    } else {
      StepRecord& slot = session->NextRecord();
      EXPECT_EQ(std::memcmp(&slot, &StepRecordZero(), sizeof slot), 0) << "slot " << i << " is not zeroed";
      slot.start_ns = r.start_ns;
      slot.end_ns = r.end_ns;
      slot.samples = r.samples;
      session->CommitRecord();
    }
    sent.push_back(r);
  }
  session->FlushSteps(base + 2 * static_cast<std::int64_t>(kRecords));
  ::close(to_orch->second);
  std::string got;
  for (;;) {
    char buf[1 << 16];
    const ssize_t n = ::read(to_orch->first, buf, sizeof buf);
    ASSERT_GE(n, 0);
    if (n == 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  std::string want;
  AppendStepsFrame(want, 3, sent.data(), RunnerSession::kBatchRecords);
  AppendStepsFrame(want, 3, sent.data() + RunnerSession::kBatchRecords, 3);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "the STEPS frames differ from AppendStepsFrame's";
  for (int fd : {to_runner->first, to_runner->second, to_orch->first}) close(fd);
}

// Full STEPS frames through a session, each record unique, so that a frame's pages written again
// before the pipe handed them on would show as wrong bytes. Returns the records sent.
std::vector<StepRecord> SendFullFrames(RunnerSession& session, std::size_t frames) {
  std::vector<StepRecord> sent;
  const std::int64_t base = MonotonicNowNs();
  for (std::size_t i = 0; i < frames * RunnerSession::kBatchRecords; ++i) {
    StepRecord r;
    r.start_ns = base + static_cast<std::int64_t>(i);
    r.end_ns = r.start_ns;  // within one flush interval: only the count flushes
    r.samples = static_cast<std::uint32_t>(i + 1);
    r.compute_ns = static_cast<std::int64_t>(i) * 3;
    r.present = kHasCompute;
    session.Record(r);
    sent.push_back(r);
  }
  return sent;
}

std::string ReadToEnd(int fd) {
  std::string got;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

std::string FramesOf(const std::vector<StepRecord>& sent, std::uint32_t rank) {
  std::string want;
  for (std::size_t at = 0; at < sent.size(); at += RunnerSession::kBatchRecords) {
    AppendStepsFrame(want, rank, sent.data() + at, std::min(RunnerSession::kBatchRecords, sent.size() - at));
  }
  return want;
}

// Into a pipe, STEPS frames go by reference (vmsplice) from a ring of buffers, and a buffer is
// filled again only once the pipe has handed its frame on. With a reader beside it every frame is
// spliced and the bytes are AppendStepsFrame's. With a 1 MiB pipe nobody reads until the end, the
// ring's four buffers sit unread in the pipe: the frames after them must go by copy, and the first
// four must still read as they were sent (a buffer reused too early would carry a later frame).
TEST(RunnerSessionTest, FramesSplicedIntoAPipeAreNeverOverwrittenBeforeTheyAreRead) {
  {
    auto to_runner = MakePipe();
    auto to_orch = MakePipe();
    ASSERT_TRUE(to_runner.ok() && to_orch.ok());
    auto session = RunnerSession::FromFds(to_runner->first, to_orch->second);
    ASSERT_TRUE(session->splicing());
    std::string got;
    std::thread reader([&] { got = ReadToEnd(to_orch->first); });
    const auto sent = SendFullFrames(*session, 40);
    session.reset();  // the ring is unmapped: pages still in the pipe stay readable
    ::close(to_orch->second);
    reader.join();
    EXPECT_TRUE(got == FramesOf(sent, 0)) << "got " << got.size() << " bytes";
    for (int fd : {to_runner->first, to_runner->second, to_orch->first}) ::close(fd);
  }
  {
    auto to_runner = MakePipe();
    auto to_orch = MakePipe();
    ASSERT_TRUE(to_runner.ok() && to_orch.ok());
    if (::fcntl(to_orch->second, F_SETPIPE_SZ, 1 << 20) < (1 << 20)) GTEST_SKIP() << "no 1 MiB pipe here";
    auto session = RunnerSession::FromFds(to_runner->first, to_orch->second);
    ASSERT_TRUE(session->splicing());
    const auto sent = SendFullFrames(*session, 20);  // 20 frames of 49,184 bytes fit in 1 MiB
    EXPECT_EQ(session->frame_counts().spliced, 4u);
    EXPECT_EQ(session->frame_counts().copied, 16u);
    session.reset();
    ::close(to_orch->second);
    EXPECT_TRUE(ReadToEnd(to_orch->first) == FramesOf(sent, 0));
    for (int fd : {to_runner->first, to_runner->second, to_orch->first}) ::close(fd);
  }
}

// Where the output is no pipe, or DLBENCH_NO_VMSPLICE=1, frames are written by copy, the same bytes.
TEST(RunnerSessionTest, FramesGoByCopyToAFileOrWhenSplicingIsTurnedOff) {
  char path[] = "/tmp/dlbench-steps-XXXXXX";
  const int file = ::mkstemp(path);
  ASSERT_GE(file, 0);
  ::unlink(path);
  auto to_runner = MakePipe();
  ASSERT_TRUE(to_runner.ok());
  {
    auto session = RunnerSession::FromFds(to_runner->first, file);
    EXPECT_FALSE(session->splicing());
    const auto sent = SendFullFrames(*session, 3);
    EXPECT_EQ(session->frame_counts().copied, 3u);
    EXPECT_EQ(session->frame_counts().spliced, 0u);
    ASSERT_EQ(::lseek(file, 0, SEEK_SET), 0);
    EXPECT_TRUE(ReadToEnd(file) == FramesOf(sent, 0));
  }
  ::close(file);
  auto to_orch = MakePipe();
  ASSERT_TRUE(to_orch.ok());
  ASSERT_EQ(::setenv("DLBENCH_NO_VMSPLICE", "1", 1), 0);
  auto session = RunnerSession::FromFds(to_runner->first, to_orch->second);
  ::unsetenv("DLBENCH_NO_VMSPLICE");
  EXPECT_FALSE(session->splicing());
  std::string got;
  std::thread reader([&] { got = ReadToEnd(to_orch->first); });
  const auto sent = SendFullFrames(*session, 5);
  EXPECT_EQ(session->frame_counts().copied, 5u);
  session.reset();
  ::close(to_orch->second);
  reader.join();
  EXPECT_TRUE(got == FramesOf(sent, 0));
  for (int fd : {to_runner->first, to_runner->second, to_orch->first}) ::close(fd);
}

}  // namespace
}  // namespace dlbench::protocol
