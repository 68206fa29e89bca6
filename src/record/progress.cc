#include "record/progress.h"

#include <fmt/core.h>

#include <limits>
#include <nlohmann/json.hpp>

namespace dlbench::record {
namespace {

constexpr char kRunId[] = "run_id";
constexpr char kCellsTotal[] = "cells_total";
constexpr char kCellsDone[] = "cells_done";
constexpr char kCurrentCell[] = "current_cell";
constexpr char kStartedWallNs[] = "started_wall_ns";
constexpr char kUpdatedWallNs[] = "updated_wall_ns";
constexpr char kPid[] = "pid";
constexpr std::int64_t kMaxPid = std::int64_t{1} << 22;  // PID_MAX_LIMIT on 64-bit Linux

Error Invalid(const std::string& why) { return MakeError(ErrorKind::kInvalidInput, "progress file: " + why); }

// An integer field: absent reads as 0. A double (1e300) or an unsigned value beyond int64 is
// refused rather than converted, which would be undefined behaviour.
Result<std::int64_t> IntegerField(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return std::int64_t{0};
  if (it->is_number_unsigned()) {
    if (it->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return Invalid(fmt::format("{} is out of range", key));
    }
    return static_cast<std::int64_t>(it->get<std::uint64_t>());
  }
  if (it->is_number_integer()) return it->get<std::int64_t>();
  return Invalid(fmt::format("{} is not an integer", key));
}

}  // namespace

std::string EncodeProgress(const RunProgress& p) {
  const nlohmann::json j = {{kRunId, p.run_id},
                            {kCellsTotal, p.cells_total},
                            {kCellsDone, p.cells_done},
                            {kCurrentCell, p.current_cell},
                            {kStartedWallNs, p.started_wall_ns},
                            {kUpdatedWallNs, p.updated_wall_ns},
                            {kPid, p.pid}};
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Result<RunProgress> ParseProgress(std::string_view text) {
  const nlohmann::json j =
      nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains(kRunId)) return Invalid("not a JSON object with run_id");
  RunProgress p;
  const std::pair<const char*, std::int64_t*> fields[] = {{kRunId, &p.run_id},
                                                          {kCellsTotal, &p.cells_total},
                                                          {kCellsDone, &p.cells_done},
                                                          {kStartedWallNs, &p.started_wall_ns},
                                                          {kUpdatedWallNs, &p.updated_wall_ns},
                                                          {kPid, &p.pid}};
  for (const auto& [key, target] : fields) {
    auto value = IntegerField(j, key);
    if (!value.ok()) return value.error();
    *target = *value;
  }
  // kill(pid, 0) on a reader's side must see the pid as written, not truncated to pid_t.
  if (p.pid < 0 || p.pid > kMaxPid) return Invalid(fmt::format("pid {} is out of range", p.pid));
  auto cell = j.find(kCurrentCell);
  if (cell != j.end()) {
    if (!cell->is_string()) return Invalid("current_cell is not a string");
    p.current_cell = cell->get<std::string>();
  }
  return p;
}

std::string ProgressPath(const std::string& db_path) { return db_path + ".progress.json"; }

}  // namespace dlbench::record
