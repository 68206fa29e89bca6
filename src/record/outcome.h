// The closed vocabularies of a result: how a cell ended (Outcome), whether its numbers hold
// (Verdict), where a run stands (RunStatus) and what a runner's ERROR says went wrong
// (RunnerErrorKind). Each has one name table used in both directions: by the store (the text in
// its columns), the wire (ERROR's "kind"), the exports and the console. Nothing else spells these
// names.
#pragma once

#include <iosfwd>
#include <optional>
#include <string_view>

namespace dlbench::record {

// How a cell ended (docs/architecture.md "Outcomes and verdicts"; docs/protocol.md has the table
// of what leads to which).
enum class Outcome {
  kOk,           // the runner measured and reported normally; the verdict says if the numbers hold
  kError,        // the runner failed: non-zero exit, or it reported an error
  kCrashed,      // the runner died of a signal
  kTimeout,      // timeout_s passed; the whole process group was killed
  kInvalid,      // protocol violation, or too little data to summarise
  kOom,          // the runner reported running out of (device) memory
  kUnsupported,  // the runner cannot run this combination
  kInterrupted,  // Ctrl-C stopped it; not final (--resume runs it again)
};
inline constexpr Outcome kAllOutcomes[] = {Outcome::kOk,          Outcome::kError,      Outcome::kCrashed,
                                           Outcome::kTimeout,     Outcome::kInvalid,    Outcome::kOom,
                                           Outcome::kUnsupported, Outcome::kInterrupted};

// Whether an ok cell's numbers can be used. Cells that did not end ok have kNotApplicable.
enum class Verdict {
  kValid,
  kInvalid,        // noisy, throttled, leaking, ... (the reasons say which)
  kNotApplicable,  // the cell did not end ok
};
inline constexpr Verdict kAllVerdicts[] = {Verdict::kValid, Verdict::kInvalid, Verdict::kNotApplicable};

enum class RunStatus { kRunning, kCompleted, kInterrupted, kFailed };
inline constexpr RunStatus kAllRunStatuses[] = {RunStatus::kRunning, RunStatus::kCompleted,
                                                RunStatus::kInterrupted, RunStatus::kFailed};

// The "kind" of a runner's ERROR message (docs/protocol.md).
enum class RunnerErrorKind {
  kOom,          // out of memory -> Outcome::kOom
  kInvalid,      // bad parameters -> Outcome::kError ("invalid configuration: ...")
  kUnsupported,  // this runner or device cannot do it -> Outcome::kUnsupported
  kInternal,     // anything else -> Outcome::kError
};
inline constexpr RunnerErrorKind kAllRunnerErrorKinds[] = {RunnerErrorKind::kOom, RunnerErrorKind::kInvalid,
                                                           RunnerErrorKind::kUnsupported,
                                                           RunnerErrorKind::kInternal};

// Names as stored and sent: "ok", "error", ..., "valid", "invalid", "n/a", "running", ...
std::string_view Name(Outcome outcome);
std::string_view Name(Verdict verdict);
std::string_view Name(RunStatus status);
std::string_view Name(RunnerErrorKind kind);

// The inverse of Name; nullopt for any other text.
std::optional<Outcome> ParseOutcome(std::string_view text);
std::optional<Verdict> ParseVerdict(std::string_view text);
std::optional<RunStatus> ParseRunStatus(std::string_view text);
std::optional<RunnerErrorKind> ParseRunnerErrorKind(std::string_view text);

// The names, for test failure messages and logs.
std::ostream& operator<<(std::ostream& out, Outcome outcome);
std::ostream& operator<<(std::ostream& out, Verdict verdict);
std::ostream& operator<<(std::ostream& out, RunStatus status);
std::ostream& operator<<(std::ostream& out, RunnerErrorKind kind);

// The outcome a runner's ERROR of this kind gives the cell.
Outcome OutcomeOf(RunnerErrorKind kind);

// Whether a stored cell with this outcome is done: everything but kInterrupted (--resume runs
// interrupted cells again).
inline bool IsFinal(Outcome outcome) { return outcome != Outcome::kInterrupted; }

}  // namespace dlbench::record
