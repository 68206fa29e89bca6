#include "record/outcome.h"

#include <ostream>
#include <utility>

namespace dlbench::record {
namespace {

// One table per vocabulary, used by both Name and Parse* so the two directions cannot drift.
template <typename E, std::size_t N>
using Table = std::pair<E, std::string_view>[N];

constexpr Table<Outcome, 8> kOutcomeNames = {
    {Outcome::kOk, "ok"},
    {Outcome::kError, "error"},
    {Outcome::kCrashed, "crashed"},
    {Outcome::kTimeout, "timeout"},
    {Outcome::kInvalid, "invalid"},
    {Outcome::kOom, "oom"},
    {Outcome::kUnsupported, "unsupported"},
    {Outcome::kInterrupted, "interrupted"},
};
constexpr Table<Verdict, 3> kVerdictNames = {
    {Verdict::kValid, "valid"}, {Verdict::kInvalid, "invalid"}, {Verdict::kNotApplicable, "n/a"}};
constexpr Table<RunStatus, 4> kRunStatusNames = {{RunStatus::kRunning, "running"},
                                                 {RunStatus::kCompleted, "completed"},
                                                 {RunStatus::kInterrupted, "interrupted"},
                                                 {RunStatus::kFailed, "failed"}};
constexpr Table<RunnerErrorKind, 4> kErrorKindNames = {{RunnerErrorKind::kOom, "oom"},
                                                       {RunnerErrorKind::kInvalid, "invalid"},
                                                       {RunnerErrorKind::kUnsupported, "unsupported"},
                                                       {RunnerErrorKind::kInternal, "internal"}};

template <typename E, std::size_t N>
std::string_view NameIn(const Table<E, N>& table, E value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "?";
}

template <typename E, std::size_t N>
std::optional<E> ParseIn(const Table<E, N>& table, std::string_view text) {
  for (const auto& [v, name] : table) {
    if (name == text) return v;
  }
  return std::nullopt;
}

}  // namespace

std::string_view Name(Outcome outcome) { return NameIn(kOutcomeNames, outcome); }
std::string_view Name(Verdict verdict) { return NameIn(kVerdictNames, verdict); }
std::string_view Name(RunStatus status) { return NameIn(kRunStatusNames, status); }
std::string_view Name(RunnerErrorKind kind) { return NameIn(kErrorKindNames, kind); }

std::optional<Outcome> ParseOutcome(std::string_view text) { return ParseIn(kOutcomeNames, text); }
std::optional<Verdict> ParseVerdict(std::string_view text) { return ParseIn(kVerdictNames, text); }
std::optional<RunStatus> ParseRunStatus(std::string_view text) { return ParseIn(kRunStatusNames, text); }
std::optional<RunnerErrorKind> ParseRunnerErrorKind(std::string_view text) {
  return ParseIn(kErrorKindNames, text);
}

std::ostream& operator<<(std::ostream& out, Outcome outcome) { return out << Name(outcome); }
std::ostream& operator<<(std::ostream& out, Verdict verdict) { return out << Name(verdict); }
std::ostream& operator<<(std::ostream& out, RunStatus status) { return out << Name(status); }
std::ostream& operator<<(std::ostream& out, RunnerErrorKind kind) { return out << Name(kind); }

Outcome OutcomeOf(RunnerErrorKind kind) {
  switch (kind) {
    case RunnerErrorKind::kOom:
      return Outcome::kOom;
    case RunnerErrorKind::kUnsupported:
      return Outcome::kUnsupported;
    case RunnerErrorKind::kInvalid:
    case RunnerErrorKind::kInternal:
      return Outcome::kError;
  }
  return Outcome::kError;
}

}  // namespace dlbench::record
