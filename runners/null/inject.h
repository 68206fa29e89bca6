// dlbench-null's fault injection once a cell is configured (inject: runners/null/faults.h names
// them): the frames a well-behaved session would never write (raw JSON and STEPS frames, a field
// of the wrong type), what a fault does after the step it fires at (OnStep), how a fault that ended
// the step loop ends the cell or the process (ConcludeFault), and the flood after STOP. The
// serving loop (main.cc) calls these at fixed points; faults of HELLO itself are injected there,
// from the command line, before any cell arrives.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "protocol/runner_session.h"
#include "runners/null/cell_params.h"

namespace dlbench::nullrunner {

// Writes a frame straight to the protocol's output fd, past RunnerSession's checks.
void SendRawJson(protocol::MessageType type, const nlohmann::json& body);
void SendRawSteps(const protocol::StepRecord* records, std::size_t count);

// Waits (at most 10 s) until dlbench has read everything written to the protocol's output: the
// pipe holds nothing (FIONREAD). late_steps_after_done writes its frame only then, so the frame
// reaches dlbench after it read the DONE, never in the same read.
void WaitUntilProtocolRead();

// Waits (at most 10 s) until the command input has bytes to read or has ended: the next cell's
// CONFIGURE has arrived (under --runner-reuse) or dlbench closed the pipe. late_steps_after_configure
// writes its frame only then, so dlbench reads it after it sent the next cell's CONFIGURE.
void WaitUntilCommandArrives();

// "dlbench-null: WHAT on purpose at step N" on stderr.
void Say(const char* what, std::int64_t step);

[[noreturn]] void HangForever(bool ignore_sigterm);

// The fields a wrong_type fault breaks, frame by frame: `body` is the frame that would be sent.
void BreakField(const std::string& field, nlohmann::json& body);

// Whether the cell injects wrong_type into a field of `frame` ("HELLO", "READY", ...).
bool BreaksFrame(const Params& p, const char* frame);

// Starts a process that keeps every fd it inherited (the protocol pipes, stdout, stderr) open
// for an hour, as a data-loader worker left behind would; in a new session with `setsid`.
pid_t ForkLingeringChild(bool new_session);

enum class StepAction { kContinue, kEndLoop };

// What inject: leak holds: the blocks kept so far, and whether the allocator refused the next one
// (under memory_cap's RLIMIT_DATA, docs/memory.md).
struct Leak {
  std::vector<std::vector<char>> blocks;
  bool refused = false;
};

// What a fault does at step `step` (1-based, after that step was recorded). `last` is the record
// just made. Faults that end the loop are concluded after it (ConcludeFault).
StepAction OnStep(const Params& p, protocol::RunnerSession& session, std::int64_t step,
                  const protocol::StepRecord& last, Leak& leak);

// After a loop that a fault ended (LoopEnd::kStepFailed) at step `step`, whose last record ended
// at `last_end`: reports the refused leak as out of memory, or does what the fault does (raises a
// signal, hangs, exits, writes garbage or a broken frame, reports an error). True when the cell
// is over (the caller returns 0); false when the fault ends nothing here and the cell goes on to
// its EXTRAS and DONE. Faults that end the process do not return.
bool ConcludeFault(const Params& p, protocol::RunnerSession& session, std::int64_t step,
                   std::int64_t last_end, Leak& leak);

// After STOP, a step_flood runner goes on sending full STEPS frames as fast as it can.
[[noreturn]] void FloodSteps(std::int64_t start_ns, std::uint32_t samples);

}  // namespace dlbench::nullrunner
