// Where a run's logs go: <out>/<store>/run-<id>/, so that run 1 of two databases never shares a
// folder (and the first database's stored log paths never point at the second's logs), and a
// resumed run logs where it started.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "record/records.h"

namespace dlbench::orchestrator {

// A folder name for the store whose identity is `store_key` (a SQLite file's canonical path, a
// PostgreSQL URL without its password): the file or database name, kept to [A-Za-z0-9._-] and 40
// bytes, then '-' and 8 hex digits of the key's FNV-1a hash ("results-3f2a1c9b").
std::string StoreFolderName(const std::string& store_key);

// <out_dir>/<StoreFolderName(store_key)>/run-<run_id>, made absolute against the current folder
// (stored log paths must hold from wherever `show` or `run --resume` is started).
std::string RunFolder(const std::string& out_dir, const std::string& store_key, std::int64_t run_id);

// The folder the stored cells of a run logged into: the parent of the first log path found;
// nullopt when no cell has one.
std::optional<std::string> StoredRunFolder(const std::vector<record::CellRecord>& cells);

}  // namespace dlbench::orchestrator
