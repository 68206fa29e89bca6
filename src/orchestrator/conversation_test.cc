// The cell conversation frame by frame, without processes: the whole state table (every frame in
// every state), reuse's RESUME, a load cell's stop, ERROR and the protocol version. The type rule
// for every field, the step-record rules and the limits are in conversation_rules_test.cc.
#include "orchestrator/conversation.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "orchestrator/conversation_test_util.h"
#include "protocol/runner_session.h"

namespace dlbench::orchestrator::conversation_test {
namespace {

// --runner-reuse (docs/adr/0011-runner-reuse.md): CONFIGURE offers serve_more only when dlbench
// offers reuse and the runner's HELLO says multi_cell; a kept process's next cell starts with
// Resume, which records the process's HELLO and answers with the cell's CONFIGURE.
TEST_F(ConversationTest, ServeMoreIsOfferedOnlyToAMultiCellRunnerAndResumeConfiguresTheNextCell) {
  nlohmann::json multi = kHello;
  multi["multi_cell"] = true;
  auto configure_of = [](const FrameResult& r) {
    const auto frames = Decode(r.reply);
    EXPECT_EQ(frames.size(), 1u);
    return frames.empty() ? nlohmann::json() : *protocol::DecodeJson(frames[0]);
  };
  settings_.offer_reuse = false;
  EXPECT_FALSE(configure_of(Make().OnFrame(Json(MessageType::kHello, multi), 1)).contains("serve_more"));
  EXPECT_FALSE(conv_->serve_more());
  settings_.offer_reuse = true;
  EXPECT_FALSE(configure_of(Make().OnFrame(Json(MessageType::kHello, kHello), 1)).contains("serve_more"));
  EXPECT_EQ(configure_of(Make().OnFrame(Json(MessageType::kHello, multi), 1)).value("serve_more", false),
            true);
  EXPECT_TRUE(conv_->serve_more());

  Conversation& next = Make();
  const FrameResult resumed = next.Resume(multi, 7);
  EXPECT_EQ(resumed.effect, Effect::kAdvanced);
  EXPECT_EQ(configure_of(resumed)["seed"], 99);
  EXPECT_EQ(next.state(), ConversationState::kConfigured);
  EXPECT_EQ(rec_.hello, multi);
  EXPECT_EQ(next.timeline().hello_ns, 7);
  EXPECT_EQ(next.Resume(multi, 8).effect, Effect::kIgnored) << "only once, before anything else";
  EXPECT_EQ(next.OnFrame(Json(MessageType::kHello, multi), 9).effect, Effect::kViolation)
      << "a kept process does not introduce itself again";
  settings_.offer_reuse = false;

  nlohmann::json bad = kHello;
  bad["multi_cell"] = "yes";
  Make().OnFrame(Json(MessageType::kHello, bad), 1);
  ASSERT_TRUE(conv_->violation());
  EXPECT_EQ(*conv_->violation(), "HELLO.multi_cell must be true or false (got a string)");
}

// A kept process's next cell (Resume) hears READY or ERROR first; any other frame before READY was
// written after the previous cell's DONE: the cell is not blamed for it (late_frame() names the
// frame, and cell_runner.cc runs the cell again in a fresh process). A fresh process's conversation
// keeps the state table's rules: MEMORY and EXTRAS before READY are recorded there.
TEST_F(ConversationTest, AFrameBeforeReadyInAResumedConversationIsNamedAsThePreviousCellsLateFrame) {
  nlohmann::json multi = kHello;
  multi["multi_cell"] = true;
  settings_.offer_reuse = true;
  const std::vector<std::pair<Frame, std::string>> late = {
      {Steps(0, Consecutive(1'000, 1)), "STEPS"},
      {Json(MessageType::kDone, {{"reason", "stopped"}, {"steps", 1}}), "DONE"},
      {Json(MessageType::kExtras, {{"info", nlohmann::json::object()}}), "EXTRAS"},
      {Json(MessageType::kMemory, {{"label", "end"}}), "MEMORY"}};
  for (const auto& [frame, name] : late) {
    Conversation& c = Make();
    ASSERT_EQ(c.Resume(multi, 1).effect, Effect::kAdvanced);
    EXPECT_EQ(c.OnFrame(frame, 2).effect, Effect::kViolation) << name;
    ASSERT_TRUE(c.late_frame()) << name;
    EXPECT_EQ(*c.late_frame(), name);
    ASSERT_TRUE(c.violation());
    EXPECT_EQ(*c.violation(),
              name +
                  " before this cell's READY, from the runner process kept after the previous "
                  "cell: it wrote that frame after that cell's DONE");
    EXPECT_TRUE(rec_.steps.empty()) << name;
  }
  for (const MessageType answer : {MessageType::kReady, MessageType::kError}) {
    Conversation& c = Make();
    ASSERT_EQ(c.Resume(multi, 1).effect, Effect::kAdvanced);
    const nlohmann::json body = answer == MessageType::kReady
                                    ? nlohmann::json{{"effective", nlohmann::json::object()}}
                                    : nlohmann::json{{"kind", "invalid"}, {"message", "bad batch"}};
    EXPECT_EQ(c.OnFrame(Json(answer, body), 2).effect, Effect::kAdvanced);
    EXPECT_FALSE(c.late_frame());
    EXPECT_FALSE(c.violation());
  }
  Conversation& fresh = Make();
  ASSERT_EQ(fresh.OnFrame(Json(MessageType::kHello, multi), 1).effect, Effect::kAdvanced);
  EXPECT_EQ(fresh.OnFrame(Json(MessageType::kMemory, {{"label", "end"}}), 2).effect, Effect::kRecorded);
  EXPECT_EQ(fresh.OnFrame(Steps(0, Consecutive(1'000, 1)), 3).effect, Effect::kViolation);
  EXPECT_FALSE(fresh.late_frame()) << "a fresh process has no previous cell";
  settings_.offer_reuse = false;
}

TEST_F(ConversationTest, AHealthyRunnerGoesThroughEveryState) {
  Conversation& c = Make();
  EXPECT_EQ(c.state(), ConversationState::kAwaitHello);
  EXPECT_EQ(StateName(c.state()), "HELLO-wait");

  const FrameResult hello = c.OnFrame(Json(MessageType::kHello, kHello), 100);
  EXPECT_EQ(hello.effect, Effect::kAdvanced);
  EXPECT_EQ(c.state(), ConversationState::kConfigured);
  EXPECT_EQ(c.timeline().hello_ns, 100);
  EXPECT_EQ(rec_.hello["runner"], "test");
  const auto configure = Decode(hello.reply);
  ASSERT_EQ(configure.size(), 1u);
  EXPECT_EQ(configure[0].type, MessageType::kConfigure);
  auto cfg = protocol::ParseConfigure(nlohmann::json::parse(configure[0].payload));
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->seed, 99u);
  EXPECT_EQ(cfg->cell_key, "k");
  EXPECT_EQ(cfg->params["step_ms"], 1.0);
  EXPECT_EQ(cfg->world_size, 1);
  // The runner's ceilings sit past the policy's: 100000 + 10000 steps, max(2 x 100 + 10, 30) s.
  EXPECT_EQ(cfg->limits.max_steps, 110'000);
  EXPECT_DOUBLE_EQ(cfg->limits.max_time_s, 210);

  EXPECT_EQ(c.OnFrame(Json(MessageType::kReady, {{"effective", {{"samples_per_step", 4}}}}), 200).effect,
            Effect::kAdvanced);
  EXPECT_EQ(c.state(), ConversationState::kReady);
  EXPECT_EQ(rec_.effective["samples_per_step"], 4);
  EXPECT_FALSE(c.virtual_time());
  EXPECT_EQ(
      c.OnFrame(Json(MessageType::kMemory, {{"label", "after_warmup"}, {"host_rss_bytes", 5}}), 201).effect,
      Effect::kRecorded);

  // Identical 1 ms steps: the interval is zero wide, so the policy stops at min_steps.
  std::int64_t t = 1'000'000'000;
  std::string stop;
  int frames = 0;
  while (stop.empty() && frames < 100) {
    const FrameResult r = c.OnFrame(Steps(0, Consecutive(t, 5)), 300 + frames);
    EXPECT_EQ(r.effect, Effect::kRecorded);
    stop = r.reply;
    t += 5'000'000;
    ++frames;
  }
  ASSERT_FALSE(stop.empty()) << "the policy never stopped";
  EXPECT_EQ(c.state(), ConversationState::kStopSent);
  ASSERT_EQ(Decode(stop).size(), 1u);
  EXPECT_EQ(Decode(stop)[0].type, MessageType::kStop);
  EXPECT_EQ(c.stop_decision(), "ci_reached");
  EXPECT_GT(c.stop_sent_ns(), 0);
  const std::int64_t measured = c.policy().steps_seen();

  // The rest: stored, not measured; no second STOP.
  const FrameResult rest = c.OnFrame(Steps(0, Consecutive(t, 3)), 900);
  EXPECT_EQ(rest.effect, Effect::kRecorded);
  EXPECT_TRUE(rest.reply.empty());
  EXPECT_EQ(c.policy().steps_seen(), measured);
  EXPECT_EQ(static_cast<std::int64_t>(rec_.steps.size()), measured + 3);
  EXPECT_TRUE(c.RequestStop("interrupted", 901).empty());

  EXPECT_EQ(
      c.OnFrame(Json(MessageType::kExtras, {{"metrics", nlohmann::json::array()}, {"info", {{"a", 1}}}}), 902)
          .effect,
      Effect::kRecorded);
  EXPECT_EQ(rec_.extras["info"]["a"], 1);
  EXPECT_EQ(c.OnFrame(Json(MessageType::kDone, {{"reason", "stopped"}, {"steps", 30}}), 903).effect,
            Effect::kAdvanced);
  EXPECT_EQ(c.state(), ConversationState::kDone);
  EXPECT_EQ(c.ending(), Ending::kDone);
  EXPECT_TRUE(c.done_seen());
  EXPECT_EQ(c.done_reason(), "stopped");
  EXPECT_FALSE(c.violation());
  ASSERT_EQ(rec_.extras["memory"].size(), 1u);
}

// What each frame does in each state. "" for the message: no violation.
TEST_F(ConversationTest, EveryFrameInEveryStateHasADefinedResult) {
  const std::vector<ConversationState> states = {
      ConversationState::kAwaitHello, ConversationState::kConfigured, ConversationState::kReady,
      ConversationState::kStepping,   ConversationState::kStopSent,   ConversationState::kDone};
  struct Row {
    MessageType type;
    std::function<Frame()> frame;
    // Per state, in the order above: the effect and, for a violation, its message.
    std::vector<std::pair<Effect, std::string>> results;
  };
  const auto v = [](const char* m) { return std::make_pair(Effect::kViolation, std::string(m)); };
  // This cell has no `load`: its QUERIES are refused by name (load_cell_test.cc has a load cell's).
  constexpr const char* kQueriesRefused = "QUERIES for a cell without load";
  const auto a = std::make_pair(Effect::kAdvanced, std::string());
  const auto r = std::make_pair(Effect::kRecorded, std::string());
  const std::vector<Row> rows = {
      {MessageType::kHello,
       [] { return Json(MessageType::kHello, kHello); },
       {a, v("HELLO sent twice"), v("HELLO sent twice"), v("HELLO sent twice"), v("HELLO sent twice"),
        v("HELLO after DONE")}},
      {MessageType::kConfigure,
       [] { return Json(MessageType::kConfigure, nlohmann::json::object()); },
       {v("runner sent CONFIGURE, which only the orchestrator sends"),
        v("runner sent CONFIGURE, which only the orchestrator sends"),
        v("runner sent CONFIGURE, which only the orchestrator sends"),
        v("runner sent CONFIGURE, which only the orchestrator sends"),
        v("runner sent CONFIGURE, which only the orchestrator sends"),
        v("runner sent CONFIGURE, which only the orchestrator sends")}},
      {MessageType::kReady,
       [] {
         return Json(MessageType::kReady, {{"effective", nlohmann::json::object()}});
       },
       {v("first message was READY, not HELLO"), a, v("READY sent twice"), v("READY sent twice"),
        v("READY sent twice"), v("READY after DONE")}},
      {MessageType::kSteps,
       [] { return Steps(0, Consecutive(10'000'000, 1)); },
       {v("first message was STEPS, not HELLO"), v("STEPS before READY"), r, r, r, v("STEPS after DONE")}},
      {MessageType::kQueries,
       [] {
         record::QueryRecord q;
         q.samples = 1;
         std::string bytes;
         protocol::AppendQueriesFrame(bytes, 0, &q, 1);
         return Frame{MessageType::kQueries, bytes.substr(protocol::kFrameHeaderBytes)};
       },
       {v("first message was QUERIES, not HELLO"), v("QUERIES before READY"), v(kQueriesRefused),
        v(kQueriesRefused), v(kQueriesRefused), v("QUERIES after DONE")}},
      {MessageType::kMemory,
       [] {
         return Json(MessageType::kMemory, {{"label", "end"}});
       },
       {v("first message was MEMORY, not HELLO"), r, r, r, r, v("MEMORY after DONE")}},
      {MessageType::kExtras,
       [] {
         return Json(MessageType::kExtras, {{"info", nlohmann::json::object()}});
       },
       {v("first message was EXTRAS, not HELLO"), r, r, r, r, v("EXTRAS after DONE")}},
      {MessageType::kError,
       [] {
         return Json(MessageType::kError, {{"kind", "oom"}, {"message", "m"}});
       },
       {v("first message was ERROR, not HELLO"), a, a, a, a, v("ERROR after DONE")}},
      {MessageType::kDone,
       [] {
         return Json(MessageType::kDone, {{"reason", "stopped"}, {"steps", 1}});
       },
       {v("first message was DONE, not HELLO"), a, a, a, a, v("DONE after DONE")}},
      {MessageType::kStop,
       [] {
         return Json(MessageType::kStop, {{"reason", "x"}});
       },
       {v("runner sent STOP, which only the orchestrator sends"),
        v("runner sent STOP, which only the orchestrator sends"),
        v("runner sent STOP, which only the orchestrator sends"),
        v("runner sent STOP, which only the orchestrator sends"),
        v("runner sent STOP, which only the orchestrator sends"),
        v("runner sent STOP, which only the orchestrator sends")}},
  };
  for (const Row& row : rows) {
    ASSERT_EQ(row.results.size(), states.size());
    for (std::size_t s = 0; s < states.size(); ++s) {
      const std::string what =
          std::string(protocol::MessageTypeName(row.type)) + " in " + std::string(StateName(states[s]));
      rec_ = record::CellRecord{};
      Conversation& c = At(states[s]);
      ASSERT_EQ(c.state(), states[s]) << what;
      const FrameResult result = c.OnFrame(row.frame(), 1'000);
      EXPECT_EQ(result.effect, row.results[s].first) << what;
      if (row.results[s].first == Effect::kViolation) {
        ASSERT_TRUE(c.violation()) << what;
        EXPECT_EQ(*c.violation(), row.results[s].second) << what;
        EXPECT_EQ(c.state(), ConversationState::kDone) << what;
        EXPECT_EQ(c.ending(), Ending::kViolation) << what;
      } else {
        EXPECT_FALSE(c.violation()) << what << ": " << c.violation().value_or("");
      }
    }
  }
}

// A load cell: QUERIES go to its LoadRecorder; STOP goes out in the frame in which the load policy
// decided (459 queries under a p99 bound: h(0)); the records after it are kept, not measured; DONE's
// count is kept for the id check.
TEST_F(ConversationTest, ALoadCellStopsAtTheLoadPolicysDecision) {
  cell_.params = {{"scenario", "infer"}, {"load", "server"}, {"target_qps", 1000}, {"latency_bound_ms", 10}};
  rec_ = record::CellRecord{};
  Conversation c(cell_, settings_, rec_);
  ASSERT_NE(c.load(), nullptr);
  ASSERT_EQ(c.OnFrame(Json(MessageType::kHello, kHello), 1).effect, Effect::kAdvanced);
  ASSERT_EQ(c.OnFrame(Json(MessageType::kReady, {{"effective", nlohmann::json::object()}}), 2).effect,
            Effect::kAdvanced);
  auto frame = [](std::uint64_t first, std::size_t n) {
    std::vector<record::QueryRecord> records(n);
    for (std::size_t i = 0; i < n; ++i) {
      records[i].query_id = first + i;
      records[i].scheduled_ns = 1'000'000'000 + static_cast<std::int64_t>(first + i) * 1'000'000;
      records[i].issued_ns = records[i].scheduled_ns;
      records[i].completed_ns = records[i].scheduled_ns + 2'000'000;
      records[i].samples = 1;
    }
    std::string bytes;
    protocol::AppendQueriesFrame(bytes, 0, records.data(), records.size());
    return Frame{MessageType::kQueries, bytes.substr(protocol::kFrameHeaderBytes)};
  };
  EXPECT_TRUE(c.OnFrame(frame(0, 400), 3).reply.empty());
  EXPECT_EQ(c.state(), ConversationState::kStepping);
  const FrameResult stop = c.OnFrame(frame(400, 100), 4);
  ASSERT_EQ(Decode(stop.reply).size(), 1u);
  EXPECT_EQ(Decode(stop.reply)[0].type, MessageType::kStop);
  EXPECT_EQ(c.stop_decision(), "early_stopping");
  EXPECT_EQ(c.OnFrame(frame(500, 50), 5).effect, Effect::kRecorded);
  EXPECT_EQ(c.load()->record_count(), 550);
  EXPECT_EQ(c.load()->policy().MeasuredQueries(), 459);
  EXPECT_EQ(c.OnFrame(Json(MessageType::kDone, {{"reason", "stopped"}, {"steps", 552}}), 6).effect,
            Effect::kAdvanced);
  EXPECT_EQ(c.done_steps(), 552);
  EXPECT_EQ(c.load()->IdProblems(c.done_steps()), "2 issued queries never arrived (query id 550, 551)");
}

TEST_F(ConversationTest, ErrorEndsTheConversationWithItsKind) {
  Conversation& c = At(ConversationState::kStepping);
  EXPECT_EQ(
      c.OnFrame(
           Json(MessageType::kError, {{"kind", "oom"}, {"message", "no memory"}, {"requested_bytes", 8}}), 9)
          .effect,
      Effect::kAdvanced);
  EXPECT_EQ(c.ending(), Ending::kError);
  ASSERT_TRUE(c.error());
  EXPECT_EQ(c.error()->kind, record::RunnerErrorKind::kOom);
  EXPECT_EQ(c.error()->message, "no memory");
  EXPECT_EQ(c.error()->details["requested_bytes"], 8);
  c.OnFrame(Steps(0, Consecutive(50'000'000, 1)), 10);
  ASSERT_TRUE(c.violation());
  EXPECT_EQ(*c.violation(), "STEPS after ERROR");

  Conversation& unknown = At(ConversationState::kReady);
  unknown.OnFrame(Json(MessageType::kError, {{"kind", "cosmic_ray"}, {"message", "m"}}), 9);
  ASSERT_TRUE(unknown.error());
  EXPECT_EQ(unknown.error()->kind, record::RunnerErrorKind::kInternal);
  EXPECT_EQ(unknown.error()->message, "m (ERROR of unknown kind 'cosmic_ray')");
  Conversation& bare = At(ConversationState::kReady);
  bare.OnFrame(Json(MessageType::kError, nlohmann::json::object()), 9);
  EXPECT_EQ(bare.error()->message, "(no message)");
}

TEST_F(ConversationTest, AnotherProtocolVersionIsRefused) {
  Conversation& c = Make();
  nlohmann::json hello = kHello;
  hello["protocol"] = 2;
  const FrameResult r = c.OnFrame(Json(MessageType::kHello, hello), 1);
  EXPECT_EQ(r.effect, Effect::kViolation);
  EXPECT_TRUE(r.reply.empty()) << "no CONFIGURE for a runner we cannot talk to";
  EXPECT_EQ(*c.violation(), "runner speaks protocol 2, dlbench speaks 1");
}

TEST_F(ConversationTest, AViolationIsFinalAndLaterFramesAreIgnored) {
  Conversation& c = At(ConversationState::kReady);
  c.OnStreamError("unknown frame type 77");
  EXPECT_EQ(*c.violation(), "unknown frame type 77");
  EXPECT_EQ(c.OnFrame(Json(MessageType::kDone, {{"reason", "stopped"}}), 1).effect, Effect::kIgnored);
  EXPECT_EQ(*c.violation(), "unknown frame type 77");
  EXPECT_FALSE(c.done_seen());
  c.OnStreamError("another");
  EXPECT_EQ(*c.violation(), "unknown frame type 77");
}

TEST_F(ConversationTest, RequestStopSendsOneStopOnceTheRunnerIsConfigured) {
  EXPECT_TRUE(At(ConversationState::kAwaitHello).RequestStop("interrupted", 1).empty());
  Conversation& configured = At(ConversationState::kConfigured);
  const std::string stop = configured.RequestStop("interrupted", 5);
  ASSERT_EQ(Decode(stop).size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(Decode(stop)[0].payload)["reason"], "interrupted");
  EXPECT_EQ(configured.stop_sent_ns(), 5);
  EXPECT_TRUE(configured.RequestStop("interrupted", 6).empty());
  // READY may still come after an early STOP; its steps are stored, not measured.
  EXPECT_EQ(configured.OnFrame(Json(MessageType::kReady, nlohmann::json::object()), 7).effect,
            Effect::kAdvanced);
  EXPECT_EQ(configured.OnFrame(Steps(0, Consecutive(1'000, 2)), 8).effect, Effect::kRecorded);
  EXPECT_EQ(configured.policy().steps_seen(), 0);
  EXPECT_TRUE(At(ConversationState::kDone).RequestStop("interrupted", 1).empty());
}

TEST_F(ConversationTest, ReadySaysWhetherTheStepTimesAreVirtual) {
  Conversation& c = At(ConversationState::kConfigured);
  c.OnFrame(Json(MessageType::kReady, {{"effective", {{"virtual_time", true}}}}), 1);
  EXPECT_TRUE(c.virtual_time());
}

}  // namespace
}  // namespace dlbench::orchestrator::conversation_test
