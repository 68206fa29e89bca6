#include "record/outcome.h"

#include <nlohmann/json.hpp>
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
constexpr Table<Verdict, 13> kVerdictNames = {{Verdict::kValid, "valid"},
                                              {Verdict::kNoisy, "noisy"},
                                              {Verdict::kTooShort, "too_short"},
                                              {Verdict::kDrifting, "drifting"},
                                              {Verdict::kShifted, "shifted"},
                                              {Verdict::kThrottled, "throttled"},
                                              {Verdict::kLeaking, "leaking"},
                                              {Verdict::kContended, "contended"},
                                              {Verdict::kFellBehind, "fell_behind"},
                                              {Verdict::kOverBound, "over_bound"},
                                              {Verdict::kUnreliable, "unreliable"},
                                              {Verdict::kNotReached, "not_reached"},
                                              {Verdict::kNotApplicable, "n/a"}};
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
std::optional<Verdict> ParseVerdict(std::string_view text) {
  // Stores written before the verdict names split (schema <= 3) hold "invalid" for any of them.
  if (text == "invalid") return Verdict::kUnreliable;
  return ParseIn(kVerdictNames, text);
}

Verdict VerdictOfReason(std::string_view reason) {
  const std::size_t colon = reason.find(':');
  if (colon == std::string_view::npos) return Verdict::kUnreliable;
  const auto v = ParseIn(kVerdictNames, reason.substr(0, colon));
  if (!v || *v == Verdict::kValid || *v == Verdict::kNotApplicable) return Verdict::kUnreliable;
  return *v;
}
std::optional<RunStatus> ParseRunStatus(std::string_view text) { return ParseIn(kRunStatusNames, text); }
std::optional<RunnerErrorKind> ParseRunnerErrorKind(std::string_view text) {
  return ParseIn(kErrorKindNames, text);
}

void to_json(nlohmann::json& j, Outcome v) { j = std::string(Name(v)); }
void to_json(nlohmann::json& j, Verdict v) { j = std::string(Name(v)); }
void to_json(nlohmann::json& j, RunStatus v) { j = std::string(Name(v)); }
void to_json(nlohmann::json& j, RunnerErrorKind v) { j = std::string(Name(v)); }

std::ostream& operator<<(std::ostream& out, Outcome outcome) { return out << Name(outcome); }
std::ostream& operator<<(std::ostream& out, Verdict verdict) { return out << Name(verdict); }
std::ostream& operator<<(std::ostream& out, RunStatus status) { return out << Name(status); }
std::ostream& operator<<(std::ostream& out, RunnerErrorKind kind) { return out << Name(kind); }

Verdict HeadlineVerdict(const std::vector<std::string>& reasons) {
  constexpr std::size_t kRanks = sizeof(kVerdictPrecedence) / sizeof(kVerdictPrecedence[0]);
  std::size_t best = kRanks;
  for (const std::string& reason : reasons) {
    const Verdict v = VerdictOfReason(reason);
    for (std::size_t rank = 0; rank < best; ++rank) {
      if (kVerdictPrecedence[rank] == v) {
        best = rank;
        break;
      }
    }
  }
  return best < kRanks ? kVerdictPrecedence[best] : Verdict::kValid;
}

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
