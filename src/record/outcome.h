// The closed vocabularies of a result: how a cell ended (Outcome), whether its numbers hold
// (Verdict), where a run stands (RunStatus) and what a runner's ERROR says went wrong
// (RunnerErrorKind). Each has one name table used in both directions: by the store (the text in
// its columns), the wire (ERROR's "kind"), the exports and the console. Nothing else spells these
// names.
#pragma once

#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// Whether an ok cell's numbers can be used, and if not, the main reason why (docs/verdicts.md).
// Every verdict reason stored with a cell starts with the name of the verdict it stands for
// ("drifting: +0.8 %/s ..."); the cell's verdict is the reason that ranks first in
// kVerdictPrecedence. Cells that did not end ok have kNotApplicable. The names are distinct from
// the outcomes': an outcome says how the runner ended, a verdict whether its numbers hold.
enum class Verdict {
  kValid,
  kNoisy,          // the confidence interval did not reach its target
  kTooShort,       // too few measured steps for a confidence interval
  kDrifting,       // step times trend across the window
  kShifted,        // step times changed level within the window
  kThrottled,      // the GPU slowed its clocks (thermal, hardware slowdown, power brake)
  kLeaking,        // memory grows step after step
  kContended,      // something else used the host or the cell's GPU during the window
  kFellBehind,     // a load cell did not issue its queries as fast as its schedule asked
  kOverBound,      // a load cell's latency percentile exceeded latency_bound_ms
  kUnreliable,     // any other reason (and stores from before these names: "invalid")
  kNotReached,     // scenario converge: the target quality was not reached (docs/convergence.md)
  kNotApplicable,  // the cell did not end ok
};
inline constexpr Verdict kAllVerdicts[] = {Verdict::kValid,        Verdict::kNoisy,      Verdict::kTooShort,
                                           Verdict::kDrifting,     Verdict::kShifted,    Verdict::kThrottled,
                                           Verdict::kLeaking,      Verdict::kContended,  Verdict::kFellBehind,
                                           Verdict::kOverBound,    Verdict::kUnreliable, Verdict::kNotReached,
                                           Verdict::kNotApplicable};
// Which reason names a cell's verdict when it has several: the cause that explains the others
// first (contention and throttling make steps noisy and drifting), then the shape of the movement.
// A converge cell that missed its target says so first: its time to target does not exist.
// A load cell that fell behind its schedule explains its latency; either explains too few queries.
inline constexpr Verdict kVerdictPrecedence[] = {
    Verdict::kNotReached, Verdict::kContended, Verdict::kThrottled, Verdict::kFellBehind,
    Verdict::kOverBound,  Verdict::kShifted,   Verdict::kDrifting,  Verdict::kLeaking,
    Verdict::kTooShort,   Verdict::kNoisy,     Verdict::kUnreliable};

// Whether the numbers of a cell with this verdict may be used (only kValid).
inline bool IsUsable(Verdict verdict) { return verdict == Verdict::kValid; }
// Whether an ok cell was judged and failed: any verdict but kValid and kNotApplicable.
inline bool IsUnreliable(Verdict verdict) {
  return verdict != Verdict::kValid && verdict != Verdict::kNotApplicable;
}

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

// JSON holds the names, never the enumerators' numbers: any json value assigned one of these
// enums gets its Name (nlohmann's default would silently write an integer).
void to_json(nlohmann::json& j, Outcome v);
void to_json(nlohmann::json& j, Verdict v);
void to_json(nlohmann::json& j, RunStatus v);
void to_json(nlohmann::json& j, RunnerErrorKind v);

// The names, for test failure messages and logs.
std::ostream& operator<<(std::ostream& out, Outcome outcome);
std::ostream& operator<<(std::ostream& out, Verdict verdict);
std::ostream& operator<<(std::ostream& out, RunStatus status);
std::ostream& operator<<(std::ostream& out, RunnerErrorKind kind);

// The verdict a stored reason stands for: the name before its first ':' ("drifting: ..." ->
// kDrifting); kUnreliable for text that starts with no verdict name.
Verdict VerdictOfReason(std::string_view reason);
// The verdict of a cell with these reasons (strings, in any order): kValid for none, else the
// reason that ranks first in kVerdictPrecedence.
Verdict HeadlineVerdict(const std::vector<std::string>& reasons);

// The outcome a runner's ERROR of this kind gives the cell.
Outcome OutcomeOf(RunnerErrorKind kind);

// Whether a stored cell with this outcome is done: everything but kInterrupted (--resume runs
// interrupted cells again).
inline bool IsFinal(Outcome outcome) { return outcome != Outcome::kInterrupted; }

}  // namespace dlbench::record
