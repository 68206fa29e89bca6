// What every ResultStore backend encodes and checks the same way (docs/storage.md, "Value
// encodings"): JSON fields as text, seeds as decimal text, tag names, run UUIDs, and the column
// lists of a whole run or cell row. Both stores and the spill files use these.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/error.h"
#include "record/records.h"

namespace dlbench::store::codec {

// The column lists of every query that reads a whole run or cell row, shared by both backends (the
// tables have the same columns), so that a row reader and its SELECT cannot disagree about
// positions. Each ends in a space, ready for a WHERE or ORDER BY.
inline constexpr const char* kRunSelect =
    "SELECT r.id, r.name, r.matrix_path, r.matrix_text, r.started_wall_ns, r.finished_wall_ns, "
    "r.status, e.hash, e.fingerprint, r.tool_version, r.git_commit, r.total_cells, r.selection, r.uuid, "
    "r.sweep, r.sweep_cells FROM runs r JOIN environments e ON e.id = r.environment_id ";
inline constexpr const char* kCellSelect =
    "SELECT id, run_id, idx, cell_id, key, label, params, effective, hello, repetition, seed, outcome, "
    "message, verdict, verdict_reasons, warmup_steps, warmup_rule, stop_reason, stdout_path, stderr_path, "
    "started_wall_ns, finished_wall_ns, extras, measured_steps FROM cells ";

// value.dump(); kInvalidInput naming `what` for a string that is not valid UTF-8.
Result<std::string> DumpJson(const nlohmann::json& value, const std::string& what);
// A cell's JSON columns as text, in the order params, effective, hello, verdict_reasons, extras;
// kInvalidInput naming the field and `what` (the cell) for a string that is not valid UTF-8.
Result<std::array<std::string, 5>> DumpCellJson(const record::CellRecord& cell, const std::string& what);
// The stored JSON text `text`; kStore naming `what` when it does not parse.
Result<nlohmann::json> ParseJson(const std::string& text, const std::string& what);
// cells.seed: decimal unsigned 64-bit text; kStore otherwise.
Result<std::uint64_t> ParseSeed(const std::string& text, std::int64_t cell_row_id);
// A stored outcome, verdict or status word this build does not know.
Error UnknownStoredName(const char* what, const std::string& text, const std::string& where);

bool AllDigits(const std::string& text);
// Tag names are non-empty, not all digits (those are run ids) and not "latest": kInvalidInput.
Status ValidateTagName(const std::string& tag);
// The error of deleting `tag` that no run carries, given what the same text resolves to as a run
// reference: a run id or "latest" (kInvalidInput: not a tag) or the resolver's kNotFound, which
// lists the known tags.
Error NotATag(const std::string& tag, const Result<std::int64_t>& as_reference);
// kInvalidInput when a metric name appears twice in the cell (`what` names the cell).
Status CheckUniqueMetricNames(const record::CellRecord& cell, const std::string& what);

// A new random (version 4) UUID in its 36-character lower-case text form, from the kernel's
// random source (getrandom): unique across machines without coordination.
std::string NewRunUuid();
// True for the 36-character form 8-4-4-4-12 of lower-case hex digits.
bool IsRunUuid(std::string_view text);

}  // namespace dlbench::store::codec
