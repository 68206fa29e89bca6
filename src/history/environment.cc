#include "history/environment.h"

#include <algorithm>
#include <string>

namespace dlbench::history {
namespace {

// A string prints without its quotes; an absent side (added or removed field) says so.
// The launcher record's per-task and per-job identifiers (a task's rank and shard, the sweep and
// job ids, the rendezvous port, every variable seen): two shards of one sweep, or two jobs of one
// matrix, differ in them on every run, as in a pid. Which launcher ran and the group's size stay.
bool IsPerTaskLauncherField(const std::string& path) {
  constexpr const char* kLauncher = "/launcher/";
  if (path.rfind(kLauncher, 0) != 0) return false;
  return path != "/launcher/launcher" && path != "/launcher/world_size/value";
}

std::string Text(const nlohmann::json& value) {
  if (value.is_null()) return "(absent)";
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

}  // namespace

std::vector<EnvironmentChange> DiffEnvironments(const nlohmann::json& base, const nlohmann::json& candidate) {
  std::vector<EnvironmentChange> changes = monitor::DiffFingerprints(base, candidate);
  changes.erase(std::remove_if(changes.begin(), changes.end(),
                               [](const EnvironmentChange& c) {
                                 if (c.decides_comparability) return false;
                                 const auto slash = c.path.rfind('/');
                                 const std::string leaf =
                                     slash == std::string::npos ? c.path : c.path.substr(slash + 1);
                                 return leaf == "pid" || IsPerTaskLauncherField(c.path);
                               }),
                changes.end());
  std::stable_sort(changes.begin(), changes.end(),
                   [](const EnvironmentChange& a, const EnvironmentChange& b) {
                     if (a.decides_comparability != b.decides_comparability) return a.decides_comparability;
                     return a.path < b.path;
                   });
  return changes;
}

std::string DescribeChange(const EnvironmentChange& change) {
  return change.path + ": " + Text(change.before) + " -> " + Text(change.after);
}

}  // namespace dlbench::history
