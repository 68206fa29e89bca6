// The faults dlbench-null can inject (its `inject` parameter) and the wrong-typed protocol fields
// it can send (`fault_field` with inject: wrong_type). Each row is one way a runner can go wrong;
// docs/protocol.md's outcome table says what dlbench concludes from each, and
// src/orchestrator/fault_table_test.cc runs every row against the real orchestrator.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlbench::nullrunner {

enum class Fault {
  kNone,
  // The runner fails the way real ones do.
  kCrash,        // SIGSEGV at step inject_at_step
  kSigtermSelf,  // raises SIGTERM at step inject_at_step: a signal dlbench did not send
  kHang,         // stops stepping and answering at inject_at_step, ignores SIGTERM
  kExit,         // exits with exit_code at inject_at_step
  kOom,          // reports ERROR oom at inject_at_step
  kLeak,         // keeps leak_bytes_per_step more memory every step
  // Breaks the protocol.
  kGarbage,            // bytes that are not frames at inject_at_step
  kNoHello,            // READY as its first message
  kWrongProtocol,      // HELLO says protocol 2
  kHelloTwice,         // a second HELLO after CONFIGURE
  kStepsBeforeReady,   // STEPS before READY
  kReadyTwice,         // a second READY
  kUnknownFrame,       // a frame of type 77 at inject_at_step
  kOversizedFrame,     // a frame header claiming 64 MiB + 1 at inject_at_step
  kBadJson,            // a MEMORY frame whose payload is not JSON at inject_at_step
  kRunnerStop,         // sends STOP (an orchestrator-only message) at inject_at_step
  kWrongType,          // the field named by fault_field has the wrong JSON type
  kStepBackwards,      // step inject_at_step ends before it starts
  kStepOverlap,        // step inject_at_step starts before the previous one ended
  kStepsAfterDone,     // STEPS after DONE
  kDoneTwice,          // a second DONE
  kLateSteps,          // STEPS after DONE once dlbench has read the DONE; then serves on
  kLateAfterConfig,    // the same once the next CONFIGURE (or the pipe's end) has come
  kFrameAfterError,    // ERROR internal at inject_at_step, then more STEPS
  kExitWithoutDone,    // exits 0 after the loop without DONE
  kCloseProtocol,      // closes its protocol output at inject_at_step and waits to be killed
  kCloseProtocolExit,  // closes its protocol output at inject_at_step and exits 0
  // Tries to make dlbench die, hang or grow.
  kCloseCommands,   // closes its command input at inject_at_step, runs to its own max_steps
  kChildHoldsPipe,  // forks a child that keeps every inherited fd open and sleeps
  kSetsidChild,     // the same, the child in a new session (out of the process group)
  kStderrFlood,     // writes flood_bytes to stderr at inject_at_step
  kStdoutFlood,     // writes flood_bytes to stdout at inject_at_step
  kStepFlood,       // ignores STOP and sends step records as fast as it can
  kHangAfterStop,   // on STOP stops answering, ignores SIGTERM
  kJsonFlood,       // sends 1 MiB MEMORY snapshots without end at inject_at_step
  // Breaks the QUERIES stream of a load cell (runners/null/virtual_load.h).
  kDropQuery,       // leaves query inject_at_step out of its QUERIES frame
  kDuplicateQuery,  // sends query inject_at_step's record twice
};

struct FaultInfo {
  Fault fault;
  std::string_view name;  // the `inject` value
};

// Every fault, in the order docs/config-reference.md lists the `inject` values (the registry's
// allowed values; runners/null/null_runner_test.cc checks they agree).
const std::vector<FaultInfo>& Faults();
std::optional<Fault> ParseFault(std::string_view name);
std::string_view FaultName(Fault fault);
// "none, crash, hang, ..." for messages.
std::string FaultNames();

// The fields inject: wrong_type can break, "FRAME.field" (the `fault_field` values).
const std::vector<std::string_view>& WrongTypeFields();

}  // namespace dlbench::nullrunner
