#include "runners/null/faults.h"

namespace dlbench::nullrunner {

const std::vector<FaultInfo>& Faults() {
  static const std::vector<FaultInfo> kFaults = {
      {Fault::kNone, "none"},
      {Fault::kCrash, "crash"},
      {Fault::kHang, "hang"},
      {Fault::kExit, "exit"},
      {Fault::kGarbage, "garbage"},
      {Fault::kLeak, "leak"},
      {Fault::kOom, "oom"},
      {Fault::kSigtermSelf, "sigterm_self"},
      {Fault::kNoHello, "no_hello"},
      {Fault::kWrongProtocol, "wrong_protocol"},
      {Fault::kHelloTwice, "hello_twice"},
      {Fault::kStepsBeforeReady, "steps_before_ready"},
      {Fault::kReadyTwice, "ready_twice"},
      {Fault::kUnknownFrame, "unknown_frame"},
      {Fault::kOversizedFrame, "oversized_frame"},
      {Fault::kBadJson, "bad_json"},
      {Fault::kRunnerStop, "runner_stop"},
      {Fault::kWrongType, "wrong_type"},
      {Fault::kStepBackwards, "step_backwards"},
      {Fault::kStepOverlap, "step_overlap"},
      {Fault::kStepsAfterDone, "steps_after_done"},
      {Fault::kDoneTwice, "done_twice"},
      {Fault::kLateSteps, "late_steps_after_done"},
      {Fault::kLateAfterConfig, "late_steps_after_configure"},
      {Fault::kFrameAfterError, "frame_after_error"},
      {Fault::kExitWithoutDone, "exit_without_done"},
      {Fault::kCloseProtocol, "close_protocol"},
      {Fault::kCloseProtocolExit, "close_protocol_exit"},
      {Fault::kCloseCommands, "close_commands"},
      {Fault::kChildHoldsPipe, "child_holds_pipe"},
      {Fault::kSetsidChild, "setsid_child"},
      {Fault::kStderrFlood, "stderr_flood"},
      {Fault::kStdoutFlood, "stdout_flood"},
      {Fault::kStepFlood, "step_flood"},
      {Fault::kHangAfterStop, "hang_after_stop"},
      {Fault::kJsonFlood, "json_flood"},
      {Fault::kDropQuery, "drop_query"},
      {Fault::kDuplicateQuery, "duplicate_query"},
  };
  return kFaults;
}

std::optional<Fault> ParseFault(std::string_view name) {
  for (const FaultInfo& f : Faults()) {
    if (f.name == name) return f.fault;
  }
  return std::nullopt;
}

std::string_view FaultName(Fault fault) {
  for (const FaultInfo& f : Faults()) {
    if (f.fault == fault) return f.name;
  }
  return "none";
}

std::string FaultNames() {
  std::string names;
  for (const FaultInfo& f : Faults()) {
    if (!names.empty()) names += ", ";
    names += f.name;
  }
  return names;
}

const std::vector<std::string_view>& WrongTypeFields() {
  static const std::vector<std::string_view> kFields = {
      "HELLO.protocol",     "HELLO.pid",       "HELLO.runner",           "HELLO.framework",
      "HELLO.devices",      "READY.effective", "READY.samples_per_step", "READY.device_uuids",
      "READY.virtual_time", "MEMORY.label",    "MEMORY.bytes",           "EXTRAS.metrics",
      "EXTRAS.metric",      "EXTRAS.name",     "EXTRAS.value",           "EXTRAS.unit",
      "EXTRAS.info",        "ERROR.kind",      "ERROR.message",          "ERROR.requested_bytes",
      "DONE.reason",        "DONE.steps",      "HELLO.multi_cell",
  };
  return kFields;
}

}  // namespace dlbench::nullrunner
