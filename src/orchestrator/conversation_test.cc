// The cell conversation frame by frame, without processes: the whole state table (every frame in
// every state), the type rule for every field, the step-record rules and the limits.
#include "orchestrator/conversation.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "protocol/runner_session.h"

namespace dlbench::orchestrator {
namespace {

using protocol::Frame;
using protocol::MessageType;
using Effect = FrameResult::Effect;

Frame Json(MessageType type, const nlohmann::json& body) { return Frame{type, body.dump()}; }

Frame Steps(std::uint32_t rank, const std::vector<protocol::StepRecord>& records) {
  std::string bytes;
  protocol::AppendStepsFrame(bytes, rank, records.data(), records.size());
  return Frame{MessageType::kSteps, bytes.substr(protocol::kFrameHeaderBytes)};
}

// `n` consecutive 1 ms steps starting at `start_ns`.
std::vector<protocol::StepRecord> Consecutive(std::int64_t start_ns, int n,
                                              std::int64_t step_ns = 1'000'000) {
  std::vector<protocol::StepRecord> out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    out[i].start_ns = start_ns + i * step_ns;
    out[i].end_ns = out[i].start_ns + step_ns;
    out[i].samples = 1;
  }
  return out;
}

// The frames a reply holds, decoded.
std::vector<Frame> Decode(const std::string& bytes) {
  protocol::FrameReader reader;
  reader.Feed(bytes.data(), bytes.size());
  std::vector<Frame> frames;
  for (;;) {
    auto f = reader.Next();
    if (!f.ok() || !f->has_value()) break;
    frames.push_back(**f);
  }
  return frames;
}

const nlohmann::json kHello = {{"protocol", protocol::kProtocolVersion},
                               {"pid", 12},
                               {"runner", "test"},
                               {"runner_version", "1"},
                               {"framework", {{"name", "none"}}},
                               {"devices", {{{"type", "cpu"}}}}};

class ConversationTest : public ::testing::Test {
 protected:
  ConversationTest() {
    cell_.index = 3;
    cell_.id = "k#r0";
    cell_.key = "k";
    cell_.seed = 99;
    cell_.params["step_ms"] = 1.0;
    settings_.measure.min_steps = 20;
    settings_.measure.min_time_s = 0.01;
    settings_.measure.max_time_s = 100;
    settings_.measure.max_steps = 100'000;
    settings_.measure.target_rel_ci = 0.05;
    settings_.timeout_s = 30;
    rec_.params = {{"step_ms", 1.0}};
  }

  Conversation& Make() {
    rec_ = record::CellRecord{};
    rec_.params = {{"step_ms", 1.0}};
    conv_ = std::make_unique<Conversation>(cell_, settings_, rec_);
    return *conv_;
  }

  // A conversation brought to `state` by a well-behaved runner.
  Conversation& At(ConversationState state) {
    Conversation& c = Make();
    if (state == ConversationState::kAwaitHello) return c;
    EXPECT_EQ(c.OnFrame(Json(MessageType::kHello, kHello), 1).effect, Effect::kAdvanced);
    if (state == ConversationState::kConfigured) return c;
    EXPECT_EQ(c.OnFrame(Json(MessageType::kReady, {{"effective", {{"samples_per_step", 1}}}}), 2).effect,
              Effect::kAdvanced);
    if (state == ConversationState::kReady) return c;
    EXPECT_EQ(c.OnFrame(Steps(0, Consecutive(1'000, 2)), 3).effect, Effect::kRecorded);
    if (state == ConversationState::kStepping) return c;
    if (state == ConversationState::kStopSent) {
      EXPECT_FALSE(c.RequestStop("interrupted", 4).empty());
      return c;
    }
    EXPECT_EQ(c.OnFrame(Json(MessageType::kDone, {{"reason", "stopped"}, {"steps", 2}}), 5).effect,
              Effect::kAdvanced);
    return c;
  }

  plan::Cell cell_;
  ConversationSettings settings_;
  record::CellRecord rec_;
  std::unique_ptr<Conversation> conv_;
};

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
}  // namespace dlbench::orchestrator
