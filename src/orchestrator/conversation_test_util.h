// Shared by the conversation's tests (conversation_test.cc: the state table; conversation_rules_test.cc:
// the type rule for every field, the step-record rules and the limits): frames built by hand, and the
// ConversationTest fixture that brings a conversation to any state. Not in an anonymous namespace:
// both files' TEST_Fs must share the one fixture class.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "orchestrator/conversation.h"
#include "protocol/runner_session.h"

namespace dlbench::orchestrator::conversation_test {

using protocol::Frame;
using protocol::MessageType;
using Effect = FrameResult::Effect;

inline Frame Json(MessageType type, const nlohmann::json& body) { return Frame{type, body.dump()}; }

inline Frame Steps(std::uint32_t rank, const std::vector<protocol::StepRecord>& records) {
  std::string bytes;
  protocol::AppendStepsFrame(bytes, rank, records.data(), records.size());
  return Frame{MessageType::kSteps, bytes.substr(protocol::kFrameHeaderBytes)};
}

// `n` consecutive 1 ms steps starting at `start_ns`.
inline std::vector<protocol::StepRecord> Consecutive(std::int64_t start_ns, int n,
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
inline std::vector<Frame> Decode(const std::string& bytes) {
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

inline const nlohmann::json kHello = {{"protocol", protocol::kProtocolVersion},
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

}  // namespace dlbench::orchestrator::conversation_test
