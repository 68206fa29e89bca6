#pragma once
// Whether a run may be resumed on this machine (docs/measurement.md "Resuming on another
// machine"): a run's cells are stored under one fingerprint, the one it started with, so a resume
// whose machine differs in what decides comparability would store numbers under a fingerprint that
// did not produce them. Such a resume is refused, naming the differences, unless the user says
// --resume-elsewhere; then every resumed cell records them in extras.resume.
#include <nlohmann/json.hpp>
#include <string>

#include "common/error.h"
#include "record/records.h"

namespace dlbench::orchestrator {

// NOLINTNEXTLINE(bugprone-exception-escape): the implicit moves are nlohmann::json's and string's, noexcept
struct ResumeEnvironment {
  // What each resumed cell stores in extras.resume; null when nothing differs.
  nlohmann::json record;
  std::string warning;  // for the console; empty when nothing differs
};

// `started` is the stored run, `here` this machine's fingerprint (CollectFingerprint, with the
// launcher). `elsewhere`: --resume-elsewhere was given.
Result<ResumeEnvironment> CheckResumeEnvironment(const record::RunRecord& started, const nlohmann::json& here,
                                                 bool elsewhere);

}  // namespace dlbench::orchestrator
