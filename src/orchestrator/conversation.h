// The protocol conversation of one cell, as a state machine over the runner's frames
// (docs/protocol.md "Conversation"). No process, pipe or clock of its own: the cell runner
// (cell_runner.cc) feeds it each frame with the time it arrived and writes what it returns to the
// runner; tests drive it frame by frame.
//
// States and what each frame does in each (anything not listed is a violation):
//   kAwaitHello   HELLO -> kConfigured, answered with CONFIGURE.
//   kConfigured   READY -> kReady. MEMORY, EXTRAS recorded. ERROR, DONE -> kDone.
//   kReady        STEPS recorded -> kStepping (the policy may send STOP -> kStopSent). QUERIES
//                 (a load cell's) likewise, through its LoadRecorder and load policy.
//                 MEMORY, EXTRAS recorded. ERROR, DONE -> kDone.
//   kStepping     as kReady.
//   kStopSent     STEPS, MEMORY, EXTRAS recorded (steps are stored, no longer measured).
//                 ERROR, DONE -> kDone.
//   kDone         nothing may follow (a frame is a violation: "STEPS after DONE").
// In every state: a frame whose fields have the wrong JSON type, a step record that ends before it
// starts or starts before its rank's previous one ended, CONFIGURE or STOP from the runner, and a
// frame beyond a limit (ConversationLimits) are violations. A violation is final: the conversation
// is over (kDone, ending kViolation) and every later frame is ignored.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "config/matrix.h"
#include "measure/policy.h"
#include "orchestrator/cell_metrics.h"
#include "orchestrator/load_cell.h"
#include "plan/plan.h"
#include "protocol/runner_session.h"
#include "protocol/wire.h"
#include "record/outcome.h"
#include "record/records.h"

namespace dlbench::orchestrator {

enum class ConversationState { kAwaitHello, kConfigured, kReady, kStepping, kStopSent, kDone };
std::string_view StateName(ConversationState state);  // "HELLO-wait", "CONFIGURED", ...

// How the conversation ended, once state() is kDone.
enum class Ending { kNone, kDone, kError, kViolation };

// What a runner may send one cell (docs/limits.md). Beyond a limit the cell ends `invalid`
// naming the limit and the count; the driver's memory stays bounded whatever a runner sends.
struct ConversationLimits {
  // Step records of all ranks a cell may hold: ~56 bytes each stored, ~48 more for rank 0 in
  // the measurement policy, so the limit bounds a cell at about 1 GB.
  std::int64_t max_step_records = 10'000'000;
  // Step records of all ranks that may still arrive after STOP: a runner stops within a flush
  // (at most 1,024 records or 50 ms per rank), so more means it ignores STOP.
  std::int64_t max_records_after_stop = 1'000'000;
  std::size_t max_json_frame_bytes = std::size_t{1} << 20;  // one HELLO, READY, MEMORY, ... frame
  std::size_t max_json_bytes = std::size_t{16} << 20;       // all of a cell's JSON frames together
};

struct ConversationSettings {
  config::MeasureSettings measure;
  double timeout_s = 600;  // the cell's timeout, for the runner's own time ceiling
  ConversationLimits limits;
  // The runner's rank in its cell (CONFIGURE's rank) and, for a rank of a group the orchestrator
  // launched (rank_group.h), the rendezvous CONFIGURE carries; its STEPS must then be its own rank's.
  int rank = 0;
  std::optional<protocol::Rendezvous> rendezvous;
  // `dlbench run --runner-reuse` (docs/adr/0011-runner-reuse.md): CONFIGURE says serve_more when
  // the runner's HELLO says "multi_cell": true, so that it waits for another cell after DONE.
  bool offer_reuse = false;
  // Which measurement of the cell this is (CONFIGURE's attempt; measure.retry_disturbed).
  int attempt = 1;
};

// The runner's ERROR, once received.
struct RunnerError {
  record::RunnerErrorKind kind = record::RunnerErrorKind::kInternal;
  std::string message;
  nlohmann::json details = nlohmann::json::object();  // the whole ERROR body
};

// What one frame did. `reply` holds frames to write to the runner (CONFIGURE after HELLO, STOP
// when the policy decides), empty otherwise.
struct FrameResult {
  enum class Effect { kAdvanced, kRecorded, kViolation, kIgnored } effect = Effect::kRecorded;
  std::string reply;
};

class Conversation {
 public:
  // `rec` receives what the runner says (hello, effective, steps, extras, memory); it must outlive
  // the conversation. `cell` gives CONFIGURE's parameters, seed, key and world_size.
  Conversation(const plan::Cell& cell, const ConversationSettings& settings, record::CellRecord& rec);

  // A runner process that served an earlier cell and waits for the next CONFIGURE: `hello` is the
  // HELLO it sent when it started (recorded as this cell's), and the reply is this cell's CONFIGURE,
  // as if HELLO had just arrived. Only in HELLO-wait.
  FrameResult Resume(const nlohmann::json& hello, std::int64_t now_ns);
  // One frame from the runner, received at `now_ns` (CLOCK_MONOTONIC).
  FrameResult OnFrame(const protocol::Frame& frame, std::int64_t now_ns);
  // A stream the FrameReader could not split into frames (unknown type, oversized frame): a
  // violation with its message.
  void OnStreamError(const std::string& message);
  // The driver asks the runner to stop (Ctrl-C): STOP with `reason`, unless STOP was sent already
  // or the conversation is over ("" then). State -> kStopSent.
  std::string RequestStop(const std::string& reason, std::int64_t now_ns);

  ConversationState state() const { return state_; }
  Ending ending() const { return ending_; }
  bool hello_seen() const { return state_ != ConversationState::kAwaitHello || ending_ != Ending::kNone; }
  bool ready_seen() const { return ready_seen_; }
  // CONFIGURE said serve_more: after DONE the runner waits for another cell instead of exiting.
  bool serve_more() const { return serve_more_; }
  bool stop_sent() const { return stop_sent_ns_ > 0; }
  std::int64_t stop_sent_ns() const { return stop_sent_ns_; }
  bool done_seen() const { return ending_ == Ending::kDone; }
  const std::string& done_reason() const { return done_reason_; }
  const std::optional<std::string>& violation() const { return violation_; }
  const std::optional<RunnerError>& error() const { return error_; }
  // The policy's reason when it sent STOP ("ci_reached", "max_time", ...).
  const std::optional<std::string>& stop_decision() const { return stop_decision_; }
  // Whether READY said the step times are on a virtual clock (effective.virtual_time).
  bool virtual_time() const { return virtual_time_; }
  std::int64_t max_step_ns() const { return max_step_ns_; }
  std::int64_t step_records() const { return step_records_; }
  const CellTimeline& timeline() const { return timeline_; }
  CellTimeline& timeline() { return timeline_; }
  // Fed rank 0's records until STOP went out: the records that arrive after STOP are stored with
  // the cell but not measured (record::MeasuredWindow).
  const measure::MeasurePolicy& policy() const { return policy_; }
  // A load cell's query records and load policy (load_cell.h); nullptr for a cell without `load`.
  const LoadRecorder* load() const { return load_ ? &*load_ : nullptr; }
  // DONE's `steps` (a load cell: the queries the runner issued), once DONE arrived.
  const std::optional<std::int64_t>& done_steps() const { return done_steps_; }
  // In a conversation that Resume started (a kept process's next cell), the first frame that came
  // before READY and was neither READY nor ERROR ("STEPS", ...): written by the process after the
  // previous cell's DONE, not an answer to this cell's CONFIGURE. The conversation ended in a
  // violation; the cell is run again in a fresh process (cell_runner.cc).
  const std::optional<std::string>& late_frame() const { return late_frame_; }

 private:
  FrameResult Violate(std::string message);
  FrameResult OnHello(const nlohmann::json& body, std::int64_t now_ns);
  FrameResult Configure(const nlohmann::json& hello, std::int64_t now_ns);
  FrameResult OnReady(const nlohmann::json& body, std::int64_t now_ns);
  FrameResult OnSteps(const protocol::Frame& frame, std::int64_t now_ns);
  FrameResult OnQueries(const protocol::Frame& frame, std::int64_t now_ns);
  FrameResult OnMemory(const nlohmann::json& body);
  FrameResult OnExtras(const nlohmann::json& body);
  FrameResult OnError(const nlohmann::json& body);
  FrameResult OnDone(const nlohmann::json& body);
  std::string StopFrame(const std::string& reason, std::int64_t now_ns);

  const plan::Cell& cell_;
  ConversationSettings settings_;
  record::CellRecord& rec_;
  measure::MeasurePolicy policy_;
  ConversationState state_ = ConversationState::kAwaitHello;
  Ending ending_ = Ending::kNone;
  bool ready_seen_ = false;
  bool virtual_time_ = false;
  bool serve_more_ = false;
  bool resumed_ = false;
  std::optional<std::string> late_frame_;
  int world_size_ = 1;
  std::int64_t stop_sent_ns_ = 0;
  std::string done_reason_;
  std::optional<std::string> violation_;
  std::optional<RunnerError> error_;
  std::optional<std::string> stop_decision_;
  std::int64_t max_step_ns_ = 0;
  std::int64_t step_records_ = 0;
  std::int64_t records_at_stop_ = 0;
  std::optional<LoadRecorder> load_;
  std::optional<std::string> load_settings_error_;  // why a cell with `load` has no recorder
  std::int64_t query_records_ = 0;                  // QUERIES records received, kept or not
  std::int64_t queries_at_stop_ = 0;
  std::optional<std::int64_t> done_steps_;
  std::size_t json_bytes_ = 0;
  std::map<std::uint32_t, std::int64_t> rank_steps_;     // records received per rank
  std::map<std::uint32_t, std::int64_t> rank_last_end_;  // end_ns of each rank's last record
  CellTimeline timeline_;
};

// The type rules of docs/protocol.md "Field types", for one JSON frame (HELLO, READY, MEMORY,
// EXTRAS, ERROR, DONE): nullopt when `body` keeps them, else the violation naming the frame and the
// field ("HELLO.protocol must be an integer (got a string)"). Also used by ProbeRunner.
std::optional<std::string> CheckFieldTypes(protocol::MessageType type, const nlohmann::json& body);

}  // namespace dlbench::orchestrator
