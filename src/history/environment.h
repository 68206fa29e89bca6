// The environment side of a comparison (R13): which fingerprint fields differ between two runs,
// and which of them decide whether the runs' numbers may be compared at all. The field-by-field
// diff and the list of deciding fields belong to the monitor (monitor/fingerprint.h); this header
// only turns its answer into the words a report prints.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "monitor/fingerprint.h"

namespace dlbench::history {

using EnvironmentChange = monitor::FieldChange;

// Every field that differs between the base and candidate fingerprints, deciding ones first,
// each group in path order. Left out, since they differ on every run and say nothing about the
// environment: process ids (a leaf named "pid"), and the launcher record's per-task fields (rank,
// shard, sweep, job ids, every variable seen: all of /launcher/ but /launcher/launcher and
// /launcher/world_size/value).
std::vector<EnvironmentChange> DiffEnvironments(const nlohmann::json& base, const nlohmann::json& candidate);

// "cudnn: 9.1 -> 9.3"; an absent side reads "(absent)".
std::string DescribeChange(const EnvironmentChange& change);

}  // namespace dlbench::history
