#include "orchestrator/resume_check.h"

#include <fmt/format.h>

#include <cstddef>
#include <vector>

#include "monitor/fingerprint.h"

namespace dlbench::orchestrator {
namespace {

// Enough to name what differs without copying a whole fingerprint into every cell.
constexpr std::size_t kMaxListed = 16;

std::string Text(const nlohmann::json& value) {
  if (value.is_null()) return "(absent)";
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

std::string Describe(const monitor::FieldChange& c) {
  return c.path + ": " + Text(c.before) + " -> " + Text(c.after);
}

// A launcher's per-task and per-job fields differ on every resume under a launcher, as a pid does.
bool Ignored(const std::string& path) {
  if (path.rfind("/launcher/", 0) == 0) return path != "/launcher/launcher";
  const auto slash = path.rfind('/');
  return path.substr(slash == std::string::npos ? 0 : slash + 1) == "pid";
}

}  // namespace

Result<ResumeEnvironment> CheckResumeEnvironment(const record::RunRecord& started, const nlohmann::json& here,
                                                 bool elsewhere) {
  std::vector<std::string> decisive;
  std::vector<std::string> other;
  std::size_t other_count = 0;
  for (const monitor::FieldChange& c : monitor::DiffFingerprints(started.environment, here)) {
    if (c.decides_comparability) {
      decisive.push_back(Describe(c));
    } else if (!Ignored(c.path)) {
      ++other_count;
      if (other.size() < kMaxListed) other.push_back(Describe(c));
    }
  }
  ResumeEnvironment out;
  if (decisive.empty() && other_count == 0) return out;
  if (!decisive.empty() && !elsewhere) {
    std::string listed;
    for (std::size_t i = 0; i < decisive.size() && i < 4; ++i) listed += (i ? "; " : "") + decisive[i];
    if (decisive.size() > 4) listed += fmt::format("; and {} more", decisive.size() - 4);
    return MakeError(
        ErrorKind::kInvalidInput,
        fmt::format("run {} started on a machine that differs from this one in what decides "
                    "comparability ({}): its cells would be stored under a fingerprint that did "
                    "not measure them. Resume it where it started, or pass --resume-elsewhere to "
                    "store the rest anyway, each resumed cell recording these differences in "
                    "extras.resume",
                    started.id, listed));
  }
  std::vector<std::string> decisive_listed(
      decisive.begin(),
      decisive.begin() + static_cast<std::ptrdiff_t>(std::min(decisive.size(), kMaxListed)));
  out.record = {{"environment_hash_of_run", started.environment_hash},
                {"environment_hash_here", monitor::ComparabilityHash(here)},
                {"decisive_changes", decisive_listed},
                {"decisive_change_count", decisive.size()},
                {"other_changes", other},
                {"other_change_count", other_count}};
  if (decisive.empty()) {
    out.warning = fmt::format(
        "resuming run {} where its fingerprint differs outside what decides comparability: "
        "{}{}; each resumed cell records this in extras.resume",
        started.id, other.front(), other_count > 1 ? fmt::format(" and {} more", other_count - 1) : "");
  } else {
    out.warning = fmt::format(
        "resuming run {} on a machine that differs in what decides comparability "
        "(--resume-elsewhere): {}{}; each resumed cell records this in extras.resume",
        started.id, decisive.front(),
        decisive.size() > 1 ? fmt::format(" and {} more", decisive.size() - 1) : "");
  }
  return out;
}

}  // namespace dlbench::orchestrator
