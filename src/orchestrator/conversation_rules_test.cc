// The cell conversation frame by frame, without processes: the type rule for every field, the
// step-record rules and the limits (the state table is in conversation_test.cc).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "orchestrator/conversation.h"
#include "orchestrator/conversation_test_util.h"
#include "protocol/runner_session.h"

namespace dlbench::orchestrator::conversation_test {
namespace {

// Each field of each frame with a wrong type, and the message that names it.
TEST_F(ConversationTest, EveryFieldIsTypeCheckedAndAWrongTypeNamesFrameAndField) {
  struct Case {
    MessageType type;
    nlohmann::json body;
    const char* message;
  };
  auto hello = [](const char* key, nlohmann::json value) {
    nlohmann::json h = kHello;
    h[key] = std::move(value);
    return h;
  };
  nlohmann::json no_protocol = kHello;
  no_protocol.erase("protocol");
  const std::vector<Case> cases = {
      {MessageType::kHello, hello("protocol", "1"), "HELLO.protocol must be an integer (got a string)"},
      {MessageType::kHello, hello("protocol", 1.5), "HELLO.protocol must be an integer (got a number 1.5)"},
      {MessageType::kHello, no_protocol, "HELLO.protocol is missing"},
      {MessageType::kHello, hello("pid", -4), "HELLO.pid must be an integer >= 0 (got an integer -4)"},
      {MessageType::kHello, hello("runner", 7), "HELLO.runner must be a string (got an integer 7)"},
      {MessageType::kHello, hello("runner_version", nullptr),
       "HELLO.runner_version must be a string (got null)"},
      {MessageType::kHello, hello("framework", "none"), "HELLO.framework must be an object (got a string)"},
      {MessageType::kHello, hello("devices", {{"type", "cpu"}}),
       "HELLO.devices must be an array (got an object)"},
      {MessageType::kHello, hello("devices", {1}), "HELLO.devices[0] must be an object (got an integer 1)"},
      {MessageType::kReady, {{"effective", {1, 2}}}, "READY.effective must be an object (got an array)"},
      {MessageType::kReady,
       {{"effective", {{"samples_per_step", "8"}}}},
       "READY.effective.samples_per_step must be an integer >= 1 (got a string)"},
      {MessageType::kReady,
       {{"effective", {{"samples_per_step", 0}}}},
       "READY.effective.samples_per_step must be an integer >= 1 (got an integer 0)"},
      {MessageType::kReady,
       {{"effective", {{"virtual_time", "yes"}}}},
       "READY.effective.virtual_time must be true or false (got a string)"},
      {MessageType::kReady,
       {{"effective", {{"device_uuids", "GPU-1"}}}},
       "READY.effective.device_uuids must be an array (got a string)"},
      {MessageType::kReady,
       {{"effective", {{"device_uuids", {"GPU-1", 2}}}}},
       "READY.effective.device_uuids[1] must be a string (got an integer 2)"},
      {MessageType::kMemory, {{"label", 7}}, "MEMORY.label must be a string (got an integer 7)"},
      {MessageType::kMemory,
       {{"label", "end"}, {"host_rss_bytes", "lots"}},
       "MEMORY.host_rss_bytes must be a number >= 0 (got a string)"},
      {MessageType::kMemory,
       {{"device_allocated_bytes", -1}},
       "MEMORY.device_allocated_bytes must be a number >= 0 (got an integer -1)"},
      {MessageType::kExtras, {{"metrics", "many"}}, "EXTRAS.metrics must be an array (got a string)"},
      {MessageType::kExtras, {{"metrics", {5}}}, "EXTRAS.metrics[0] must be an object (got an integer 5)"},
      {MessageType::kExtras,
       {{"metrics", {{{"name", 7}, {"value", 1}}}}},
       "EXTRAS.metrics[0].name must be a string (got an integer 7)"},
      {MessageType::kExtras, {{"metrics", {{{"value", 1}}}}}, "EXTRAS.metrics[0].name is missing"},
      {MessageType::kExtras,
       {{"metrics", {{{"name", "x"}, {"value", "fast"}}}}},
       "EXTRAS.metrics[0].value must be a number (got a string)"},
      {MessageType::kExtras, {{"metrics", {{{"name", "x"}}}}}, "EXTRAS.metrics[0].value is missing"},
      {MessageType::kExtras,
       {{"metrics", {{{"name", "x"}, {"value", 1}, {"unit", 5}}}}},
       "EXTRAS.metrics[0].unit must be a string (got an integer 5)"},
      {MessageType::kExtras, {{"info", "x"}}, "EXTRAS.info must be an object (got a string)"},
      {MessageType::kError, {{"kind", 5}}, "ERROR.kind must be a string (got an integer 5)"},
      {MessageType::kError, {{"message", {"x"}}}, "ERROR.message must be a string (got an array)"},
      {MessageType::kError,
       {{"kind", "oom"}, {"requested_bytes", "80G"}},
       "ERROR.requested_bytes must be a number >= 0 (got a string)"},
      {MessageType::kError,
       {{"kind", "oom"}, {"process_usable", "yes"}},
       "ERROR.process_usable must be true or false (got a string)"},
      {MessageType::kDone, {{"reason", {"x"}}}, "DONE.reason must be a string (got an array)"},
      {MessageType::kDone, {{"steps", "200"}}, "DONE.steps must be an integer >= 0 (got a string)"},
      {MessageType::kDone,
       {{"steps", 18446744073709551615ULL}},
       "DONE.steps must be an integer >= 0 (got an integer 18446744073709551615)"},
  };
  for (const Case& k : cases) {
    rec_ = record::CellRecord{};
    Conversation& c =
        At(k.type == MessageType::kHello ? ConversationState::kAwaitHello : ConversationState::kReady);
    const FrameResult r = c.OnFrame(Json(k.type, k.body), 7);
    EXPECT_EQ(r.effect, Effect::kViolation) << k.body.dump();
    ASSERT_TRUE(c.violation()) << k.body.dump();
    EXPECT_EQ(*c.violation(), k.message) << k.body.dump();
    EXPECT_EQ(CheckFieldTypes(k.type, k.body), k.message);
  }
  // Fields nobody declared are free, and right types pass.
  EXPECT_FALSE(CheckFieldTypes(MessageType::kHello, hello("anything", {{"goes", 1}})));
  EXPECT_FALSE(CheckFieldTypes(MessageType::kMemory, {{"label", "x"}, {"note", "text"}, {"a_bytes", 1.5}}));
}

TEST_F(ConversationTest, NotJsonOrNotAnObjectIsAViolation) {
  Conversation& c = At(ConversationState::kReady);
  c.OnFrame(Frame{MessageType::kMemory, "{not json"}, 1);
  ASSERT_TRUE(c.violation());
  EXPECT_EQ(c.violation()->rfind("MEMORY payload is not valid JSON", 0), 0u) << *c.violation();
  Conversation& d = At(ConversationState::kReady);
  d.OnFrame(Frame{MessageType::kDone, "[1]"}, 1);
  EXPECT_EQ(*d.violation(), "DONE payload is not a JSON object");
}

TEST_F(ConversationTest, StepRecordsMustRunForwardOnEachRank) {
  Conversation& backwards = At(ConversationState::kStepping);  // 2 records of rank 0 so far
  auto bad = Consecutive(100'000'000, 3);
  bad[1].end_ns = bad[1].start_ns - 5;
  EXPECT_EQ(backwards.OnFrame(Steps(0, bad), 1).effect, Effect::kViolation);
  EXPECT_EQ(*backwards.violation(),
            "STEPS: rank 0 step 3 ends before it starts (start_ns 101000000, end_ns 100999995)");

  // At(kStepping) leaves rank 0 with steps 0 and 1, the last ending at 2001000 ns.
  Conversation& overlap = At(ConversationState::kStepping);
  EXPECT_EQ(overlap.OnFrame(Steps(0, Consecutive(2'000'500, 2, 10)), 1).effect, Effect::kViolation);
  EXPECT_EQ(*overlap.violation(),
            "STEPS: rank 0 step 2 starts at 2000500 ns, before step 1 ended at 2001000 ns");
  EXPECT_EQ(rec_.steps.size(), 2u) << "nothing of a violating frame is stored";

  Conversation& within = At(ConversationState::kStepping);
  auto inside = Consecutive(50'000'000, 3);
  inside[2].start_ns = inside[1].end_ns - 1;
  within.OnFrame(Steps(0, inside), 1);
  EXPECT_EQ(*within.violation(),
            "STEPS: rank 0 step 4 starts at 51999999 ns, before step 3 ended at 52000000 ns");

  // A record may start exactly when the previous ended, and zero-length steps (step_ms 0) are fine.
  Conversation& touching = At(ConversationState::kStepping);
  EXPECT_EQ(touching.OnFrame(Steps(0, Consecutive(2'001'000, 2, 0)), 1).effect, Effect::kRecorded);
  EXPECT_FALSE(touching.violation());
}

TEST_F(ConversationTest, RanksBeyondTheWorldSizeAreViolations) {
  Conversation& c = At(ConversationState::kReady);
  c.OnFrame(Steps(1, Consecutive(1'000, 1)), 1);
  EXPECT_EQ(*c.violation(), "STEPS of rank 1, but the cell has world_size 1");
  cell_.params["world_size"] = 2;
  Conversation& two = At(ConversationState::kReady);
  EXPECT_EQ(two.OnFrame(Steps(1, Consecutive(1'000, 1)), 1).effect, Effect::kRecorded);
  EXPECT_EQ(two.policy().steps_seen(), 0) << "only rank 0 is measured";
  // Ranks are checked separately: rank 1's steps may overlap rank 0's.
  EXPECT_EQ(two.OnFrame(Steps(0, Consecutive(500, 3)), 2).effect, Effect::kRecorded);
}

TEST_F(ConversationTest, LimitsEndTheCellWithTheCount) {
  settings_.limits.max_step_records = 10;
  Conversation& c = At(ConversationState::kStepping);  // 2 records
  EXPECT_EQ(c.OnFrame(Steps(0, Consecutive(10'000'000, 8)), 1).effect, Effect::kRecorded);
  EXPECT_EQ(c.OnFrame(Steps(0, Consecutive(100'000'000, 1)), 2).effect, Effect::kViolation);
  EXPECT_EQ(*c.violation(), "the runner sent more than 10 step records (the limit for one cell)");

  settings_.limits = ConversationLimits{};
  settings_.limits.max_records_after_stop = 4;
  Conversation& flood = At(ConversationState::kStopSent);
  EXPECT_EQ(flood.OnFrame(Steps(0, Consecutive(10'000'000, 4)), 1).effect, Effect::kRecorded);
  EXPECT_EQ(flood.OnFrame(Steps(0, Consecutive(100'000'000, 1)), 2).effect, Effect::kViolation);
  EXPECT_EQ(*flood.violation(), "the runner sent more than 4 step records after STOP: it does not stop");

  settings_.limits = ConversationLimits{};
  settings_.limits.max_json_frame_bytes = 200;
  settings_.limits.max_json_bytes = 1000;
  Conversation& big = At(ConversationState::kReady);
  const Frame large = Json(MessageType::kMemory, {{"label", std::string(300, 'x')}});
  big.OnFrame(large, 1);
  EXPECT_EQ(*big.violation(), "MEMORY frame of " + std::to_string(large.payload.size()) +
                                  " bytes exceeds the limit of 200 bytes for a JSON frame");
  Conversation& many = At(ConversationState::kReady);
  std::size_t sent = 0;
  while (!many.violation() && sent < 100) {
    many.OnFrame(Json(MessageType::kMemory, {{"label", "x"}}), 1);
    ++sent;
  }
  ASSERT_TRUE(many.violation());
  EXPECT_EQ(*many.violation(),
            "the runner's JSON messages exceed 1000 bytes in one cell (at a MEMORY frame)");
}

}  // namespace
}  // namespace dlbench::orchestrator::conversation_test
