#include "orchestrator/conversation.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "protocol/runner_session.h"
#include "record/metrics.h"

namespace dlbench::orchestrator {
namespace {

using protocol::MessageType;

enum class Want {
  kInteger,
  kNonNegativeInteger,
  kPositiveInteger,
  kString,
  kObject,
  kArray,
  kBool,
  kNonNegativeNumber
};

const char* WantText(Want want) {
  switch (want) {
    case Want::kInteger:
      return "an integer";
    case Want::kNonNegativeInteger:
      return "an integer >= 0";
    case Want::kPositiveInteger:
      return "an integer >= 1";
    case Want::kString:
      return "a string";
    case Want::kObject:
      return "an object";
    case Want::kArray:
      return "an array";
    case Want::kBool:
      return "true or false";
    case Want::kNonNegativeNumber:
      return "a number >= 0";
  }
  return "?";
}

const char* JsonTypeText(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return "an integer";
    case nlohmann::json::value_t::number_float:
      return "a number";
    default:
      return "a value of another kind";
  }
}

// Integers must fit int64: a uint64 beyond it would be converted wrongly by every reader.
bool FitsInt64(const nlohmann::json& j) {
  if (j.is_number_unsigned())
    return j.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  return j.is_number_integer();
}

bool Has(Want want, const nlohmann::json& j) {
  switch (want) {
    case Want::kInteger:
      return FitsInt64(j);
    case Want::kNonNegativeInteger:
      return FitsInt64(j) && j.get<std::int64_t>() >= 0;
    case Want::kPositiveInteger:
      return FitsInt64(j) && j.get<std::int64_t>() >= 1;
    case Want::kString:
      return j.is_string();
    case Want::kObject:
      return j.is_object();
    case Want::kArray:
      return j.is_array();
    case Want::kBool:
      return j.is_boolean();
    case Want::kNonNegativeNumber:
      return j.is_number() && j.get<double>() >= 0;
  }
  return false;
}

// The message for `value` at `path` when it is not what `want` says; nullopt when it is.
std::optional<std::string> Mismatch(const std::string& path, const nlohmann::json& value, Want want) {
  if (Has(want, value)) return std::nullopt;
  std::string got = JsonTypeText(value);
  if (value.is_number()) got += " " + value.dump();
  return fmt::format("{} must be {} (got {})", path, WantText(want), got);
}

// Checks an optional field of an object (`required`: it must be present).
std::optional<std::string> Field(const nlohmann::json& object, const std::string& frame, const char* key,
                                 Want want, bool required = false) {
  auto it = object.find(key);
  const std::string path = frame + "." + key;
  if (it == object.end()) return required ? std::optional<std::string>(path + " is missing") : std::nullopt;
  return Mismatch(path, *it, want);
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::int64_t SaturatingAdd(std::int64_t a, std::int64_t b) {
  if (b > 0 && a > std::numeric_limits<std::int64_t>::max() - b)
    return std::numeric_limits<std::int64_t>::max();
  return a + b;
}

}  // namespace

std::string_view StateName(ConversationState state) {
  switch (state) {
    case ConversationState::kAwaitHello:
      return "HELLO-wait";
    case ConversationState::kConfigured:
      return "CONFIGURED";
    case ConversationState::kReady:
      return "READY";
    case ConversationState::kStepping:
      return "STEPPING";
    case ConversationState::kStopSent:
      return "STOP-sent";
    case ConversationState::kDone:
      return "DONE";
  }
  return "?";
}

std::optional<std::string> CheckFieldTypes(MessageType type, const nlohmann::json& body) {
  const std::string frame = protocol::MessageTypeName(type);
  std::optional<std::string> bad;
  auto check = [&](std::optional<std::string> m) {
    if (!bad && m) bad = std::move(m);
  };
  switch (type) {
    case MessageType::kHello: {
      check(Field(body, frame, "protocol", Want::kInteger, /*required=*/true));
      check(Field(body, frame, "pid", Want::kNonNegativeInteger));
      check(Field(body, frame, "runner", Want::kString));
      check(Field(body, frame, "runner_version", Want::kString));
      check(Field(body, frame, "framework", Want::kObject));
      check(Field(body, frame, "devices", Want::kArray));
      check(Field(body, frame, "multi_cell", Want::kBool));
      if (!bad && body.contains("devices")) {
        const auto& devices = body["devices"];
        for (std::size_t i = 0; i < devices.size() && !bad; ++i) {
          check(Mismatch(fmt::format("{}.devices[{}]", frame, i), devices[i], Want::kObject));
        }
      }
      break;
    }
    case MessageType::kReady: {
      check(Field(body, frame, "effective", Want::kObject));
      if (!bad && body.contains("effective")) {
        const auto& effective = body["effective"];
        const std::string eff = frame + ".effective";
        check(Field(effective, eff, "samples_per_step", Want::kPositiveInteger));
        check(Field(effective, eff, "virtual_time", Want::kBool));
        check(Field(effective, eff, "device_uuids", Want::kArray));
        if (!bad && effective.contains("device_uuids")) {
          const auto& uuids = effective["device_uuids"];
          for (std::size_t i = 0; i < uuids.size() && !bad; ++i) {
            check(Mismatch(fmt::format("{}.device_uuids[{}]", eff, i), uuids[i], Want::kString));
          }
        }
      }
      break;
    }
    case MessageType::kMemory: {
      check(Field(body, frame, std::string(record::memory::kLabel).c_str(), Want::kString));
      for (auto it = body.begin(); it != body.end() && !bad; ++it) {
        if (EndsWith(it.key(), "_bytes"))
          check(Mismatch(frame + "." + it.key(), it.value(), Want::kNonNegativeNumber));
      }
      break;
    }
    case MessageType::kExtras: {
      check(Field(body, frame, "metrics", Want::kArray));
      check(Field(body, frame, "info", Want::kObject));
      if (!bad && body.contains("metrics")) {
        const auto& metrics = body["metrics"];
        for (std::size_t i = 0; i < metrics.size() && !bad; ++i) {
          const std::string path = fmt::format("{}.metrics[{}]", frame, i);
          check(Mismatch(path, metrics[i], Want::kObject));
          if (bad) break;
          check(Field(metrics[i], path, "name", Want::kString, /*required=*/true));
          auto value = metrics[i].find("value");
          if (!bad && value == metrics[i].end()) bad = path + ".value is missing";
          if (!bad && !value->is_number()) {
            bad = fmt::format("{}.value must be a number (got {})", path, JsonTypeText(*value));
          }
          check(Field(metrics[i], path, "unit", Want::kString));
        }
      }
      break;
    }
    case MessageType::kError:
      check(Field(body, frame, "kind", Want::kString));
      check(Field(body, frame, "message", Want::kString));
      check(Field(body, frame, "requested_bytes", Want::kNonNegativeNumber));
      check(Field(body, frame, "process_usable", Want::kBool));
      break;
    case MessageType::kDone:
      check(Field(body, frame, "reason", Want::kString));
      check(Field(body, frame, "steps", Want::kNonNegativeInteger));
      break;
    default:
      break;
  }
  return bad;
}

Conversation::Conversation(const plan::Cell& cell, const ConversationSettings& settings,
                           record::CellRecord& rec)
    : cell_(cell), settings_(settings), rec_(rec), policy_(settings.measure) {
  auto ws = cell.params.find("world_size");
  if (ws != cell.params.end() && FitsInt64(ws->second)) {
    world_size_ = static_cast<int>(std::clamp<std::int64_t>(ws->second.get<std::int64_t>(), 1, 1 << 20));
  }
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [k, v] : cell.params) params[k] = v;
  if (IsLoadCell(params)) {
    auto load = LoadCellSettingsOf(params, cell.seed);
    if (load.ok()) {
      load_.emplace(settings.measure, *load);
    } else {
      load_settings_error_ = load.error().message;
    }
  }
}

FrameResult Conversation::Violate(std::string message) {
  violation_ = std::move(message);
  state_ = ConversationState::kDone;
  ending_ = Ending::kViolation;
  return {FrameResult::Effect::kViolation, ""};
}

void Conversation::OnStreamError(const std::string& message) {
  if (ending_ == Ending::kViolation) return;
  (void)Violate(message);
}

std::string Conversation::StopFrame(const std::string& reason, std::int64_t now_ns) {
  std::string bytes;
  protocol::AppendJsonFrame(bytes, MessageType::kStop, {{"reason", reason}});
  stop_sent_ns_ = std::max<std::int64_t>(now_ns, 1);
  records_at_stop_ = step_records_;
  queries_at_stop_ = query_records_;
  state_ = ConversationState::kStopSent;
  return bytes;
}

std::string Conversation::RequestStop(const std::string& reason, std::int64_t now_ns) {
  if (stop_sent() || state_ == ConversationState::kDone || state_ == ConversationState::kAwaitHello)
    return "";
  return StopFrame(reason, now_ns);
}

FrameResult Conversation::OnFrame(const protocol::Frame& frame, std::int64_t now_ns) {
  if (ending_ == Ending::kViolation) return {FrameResult::Effect::kIgnored, ""};
  const char* name = protocol::MessageTypeName(frame.type);
  if (frame.type == MessageType::kConfigure || frame.type == MessageType::kStop) {
    return Violate(fmt::format("runner sent {}, which only the orchestrator sends", name));
  }
  if (state_ == ConversationState::kAwaitHello && frame.type != MessageType::kHello) {
    return Violate(fmt::format("first message was {}, not HELLO", name));
  }
  if (state_ == ConversationState::kDone) {
    return Violate(fmt::format("{} after {}", name, ending_ == Ending::kError ? "ERROR" : "DONE"));
  }
  // A kept process answers this cell's CONFIGURE with READY or ERROR; anything before that it wrote
  // after the previous cell's DONE (docs/protocol.md "Several cells in one process").
  if (resumed_ && !ready_seen_ && frame.type != MessageType::kReady && frame.type != MessageType::kError) {
    late_frame_ = name;
    return Violate(
        fmt::format("{} before this cell's READY, from the runner process kept after the "
                    "previous cell: it wrote that frame after that cell's DONE",
                    name));
  }
  if (frame.type == MessageType::kSteps) return OnSteps(frame, now_ns);
  if (frame.type == MessageType::kQueries) return OnQueries(frame, now_ns);

  if (frame.payload.size() > settings_.limits.max_json_frame_bytes) {
    return Violate(fmt::format("{} frame of {} bytes exceeds the limit of {} bytes for a JSON frame", name,
                               frame.payload.size(), settings_.limits.max_json_frame_bytes));
  }
  json_bytes_ += frame.payload.size();
  if (json_bytes_ > settings_.limits.max_json_bytes) {
    return Violate(fmt::format("the runner's JSON messages exceed {} bytes in one cell (at a {} frame)",
                               settings_.limits.max_json_bytes, name));
  }
  auto body = protocol::DecodeJson(frame);
  if (!body.ok()) return Violate(body.error().message);
  if (auto bad = CheckFieldTypes(frame.type, *body)) return Violate(*bad);
  switch (frame.type) {
    case MessageType::kHello:
      return OnHello(*body, now_ns);
    case MessageType::kReady:
      return OnReady(*body, now_ns);
    case MessageType::kMemory:
      return OnMemory(*body);
    case MessageType::kExtras:
      return OnExtras(*body);
    case MessageType::kError:
      return OnError(*body);
    case MessageType::kDone:
      return OnDone(*body);
    default:
      return Violate(fmt::format("unexpected {} frame", name));
  }
}

FrameResult Conversation::OnHello(const nlohmann::json& body, std::int64_t now_ns) {
  if (state_ != ConversationState::kAwaitHello) return Violate("HELLO sent twice");
  const std::int64_t version = body["protocol"].get<std::int64_t>();
  if (version != protocol::kProtocolVersion) {
    timeline_.hello_ns = now_ns;
    rec_.hello = body;
    return Violate(
        fmt::format("runner speaks protocol {}, dlbench speaks {}", version, protocol::kProtocolVersion));
  }
  return Configure(body, now_ns);
}

FrameResult Conversation::Resume(const nlohmann::json& hello, std::int64_t now_ns) {
  if (state_ != ConversationState::kAwaitHello || ending_ != Ending::kNone)
    return {FrameResult::Effect::kIgnored, ""};
  resumed_ = true;
  return Configure(hello, now_ns);
}

FrameResult Conversation::Configure(const nlohmann::json& hello, std::int64_t now_ns) {
  timeline_.hello_ns = now_ns;
  rec_.hello = hello;
  protocol::CellConfig cfg;
  cfg.params = rec_.params;
  cfg.seed = cell_.seed;
  cfg.cell_key = cell_.key;
  cfg.world_size = world_size_;
  cfg.rank = settings_.rank;
  cfg.rendezvous = settings_.rendezvous;
  // The runner's own ceilings sit past ours so that our STOP, not its ceiling, ends a healthy
  // cell; they only matter when we are gone.
  const config::MeasureSettings& m = settings_.measure;
  cfg.limits.max_steps = SaturatingAdd(m.max_steps, std::max<std::int64_t>(1000, m.max_steps / 10));
  cfg.limits.max_time_s = std::max(m.max_time_s * 2 + 10, settings_.timeout_s);
  serve_more_ = cfg.serve_more = settings_.offer_reuse && hello.value("multi_cell", false);
  cfg.attempt = settings_.attempt;
  FrameResult result{FrameResult::Effect::kAdvanced, ""};
  protocol::AppendJsonFrame(result.reply, MessageType::kConfigure, protocol::ConfigureToJson(cfg));
  state_ = ConversationState::kConfigured;
  return result;
}

FrameResult Conversation::OnReady(const nlohmann::json& body, std::int64_t now_ns) {
  if (ready_seen_) return Violate("READY sent twice");
  ready_seen_ = true;
  timeline_.ready_ns = now_ns;
  rec_.effective = body.value("effective", nlohmann::json::object());
  virtual_time_ = rec_.effective.value("virtual_time", false);
  if (state_ == ConversationState::kConfigured) state_ = ConversationState::kReady;
  return {FrameResult::Effect::kAdvanced, ""};
}

FrameResult Conversation::OnSteps(const protocol::Frame& frame, std::int64_t now_ns) {
  if (!ready_seen_) return Violate("STEPS before READY");
  auto batch = protocol::DecodeSteps(frame);
  if (!batch.ok()) {
    // Name the step when it is a record that runs backwards (the frame itself is well formed).
    std::uint32_t rank = 0, count = 0;
    if (frame.payload.size() >= 8) {
      std::memcpy(&rank, frame.payload.data(), 4);
      std::memcpy(&count, frame.payload.data() + 4, 4);
    }
    if (frame.payload.size() >= 8 &&
        frame.payload.size() == 8 + std::size_t{count} * sizeof(protocol::StepRecord)) {
      for (std::uint32_t i = 0; i < count; ++i) {
        protocol::StepRecord r;
        std::memcpy(&r, frame.payload.data() + 8 + std::size_t{i} * sizeof r, sizeof r);
        if (r.end_ns < r.start_ns) {
          return Violate(fmt::format("STEPS: rank {} step {} ends before it starts (start_ns {}, end_ns {})",
                                     rank, rank_steps_[rank] + i, r.start_ns, r.end_ns));
        }
      }
    }
    return Violate("STEPS: " + batch.error().message);
  }
  const std::uint32_t rank = batch->rank;
  if (rank >= static_cast<std::uint32_t>(world_size_)) {
    return Violate(fmt::format("STEPS of rank {}, but the cell has world_size {}", rank, world_size_));
  }
  if (settings_.rendezvous && rank != static_cast<std::uint32_t>(settings_.rank)) {
    return Violate(fmt::format("STEPS of rank {} from the runner of rank {}", rank, settings_.rank));
  }
  const auto count = static_cast<std::int64_t>(batch->records.size());
  if (step_records_ + count > settings_.limits.max_step_records) {
    return Violate(fmt::format("the runner sent more than {} step records (the limit for one cell)",
                               settings_.limits.max_step_records));
  }
  if (stop_sent() && step_records_ + count - records_at_stop_ > settings_.limits.max_records_after_stop) {
    return Violate(fmt::format("the runner sent more than {} step records after STOP: it does not stop",
                               settings_.limits.max_records_after_stop));
  }
  std::int64_t& seen = rank_steps_[rank];
  auto last_end = rank_last_end_.find(rank);
  for (std::size_t i = 0; i < batch->records.size(); ++i) {
    const protocol::StepRecord& r = batch->records[i];
    if (last_end != rank_last_end_.end() && r.start_ns < last_end->second) {
      return Violate(fmt::format("STEPS: rank {} step {} starts at {} ns, before step {} ended at {} ns",
                                 rank, seen + static_cast<std::int64_t>(i), r.start_ns,
                                 seen + static_cast<std::int64_t>(i) - 1, last_end->second));
    }
    last_end = rank_last_end_.insert_or_assign(rank, r.end_ns).first;
  }
  seen += count;
  step_records_ += count;
  for (const auto& r : batch->records) {
    rec_.steps.push_back({rank, r});
    max_step_ns_ = std::max(max_step_ns_, r.end_ns - r.start_ns);
  }
  if (state_ == ConversationState::kReady) state_ = ConversationState::kStepping;
  FrameResult result{FrameResult::Effect::kRecorded, ""};
  if (rank == 0 && !stop_sent()) {
    policy_.Add(batch->records.data(), batch->records.size());
    const measure::Decision decision = policy_.Evaluate();
    if (decision.stop) {
      stop_decision_ = decision.reason;
      result.reply = StopFrame(decision.reason, now_ns);
    }
  }
  return result;
}

// A load cell's records (docs/load.md): decoded (DecodeQueries refuses a record that cannot be
// true), bounded like step records, kept and measured by the cell's LoadRecorder.
FrameResult Conversation::OnQueries(const protocol::Frame& frame, std::int64_t now_ns) {
  if (!ready_seen_) return Violate("QUERIES before READY");
  if (!load_) {
    return Violate(load_settings_error_
                       ? "QUERIES for a cell whose load settings are invalid: " + *load_settings_error_
                       : std::string("QUERIES for a cell without load"));
  }
  auto batch = protocol::DecodeQueries(frame);
  if (!batch.ok()) return Violate("QUERIES: " + batch.error().message);
  const auto count = static_cast<std::int64_t>(batch->records.size());
  if (query_records_ + count > settings_.limits.max_step_records) {
    return Violate(fmt::format("the runner sent more than {} query records (the limit for one cell)",
                               settings_.limits.max_step_records));
  }
  if (stop_sent() && query_records_ + count - queries_at_stop_ > settings_.limits.max_records_after_stop) {
    return Violate(fmt::format("the runner sent more than {} query records after STOP: it does not stop",
                               settings_.limits.max_records_after_stop));
  }
  query_records_ += count;
  if (auto bad = load_->Add(*batch, !stop_sent())) return Violate(*bad);
  if (state_ == ConversationState::kReady) state_ = ConversationState::kStepping;
  FrameResult result{FrameResult::Effect::kRecorded, ""};
  if (!stop_sent()) {
    const measure::Decision decision = load_->policy().Evaluate();
    if (decision.stop) {
      stop_decision_ = decision.reason;
      result.reply = StopFrame(decision.reason, now_ns);
    }
  }
  return result;
}

FrameResult Conversation::OnMemory(const nlohmann::json& body) {
  rec_.extras["memory"].push_back(body);
  return {FrameResult::Effect::kRecorded, ""};
}

FrameResult Conversation::OnExtras(const nlohmann::json& body) {
  AbsorbExtras(body, rec_);
  return {FrameResult::Effect::kRecorded, ""};
}

FrameResult Conversation::OnError(const nlohmann::json& body) {
  RunnerError e;
  const std::string kind = body.value("kind", std::string(record::Name(record::RunnerErrorKind::kInternal)));
  e.kind = record::ParseRunnerErrorKind(kind).value_or(record::RunnerErrorKind::kInternal);
  e.message = body.value("message", std::string("(no message)"));
  if (!record::ParseRunnerErrorKind(kind)) e.message += " (ERROR of unknown kind '" + kind + "')";
  e.details = body;
  error_ = std::move(e);
  state_ = ConversationState::kDone;
  ending_ = Ending::kError;
  return {FrameResult::Effect::kAdvanced, ""};
}

FrameResult Conversation::OnDone(const nlohmann::json& body) {
  done_reason_ = body.value("reason", std::string());
  if (body.contains("steps")) done_steps_ = body["steps"].get<std::int64_t>();
  state_ = ConversationState::kDone;
  ending_ = Ending::kDone;
  return {FrameResult::Effect::kAdvanced, ""};
}

}  // namespace dlbench::orchestrator
