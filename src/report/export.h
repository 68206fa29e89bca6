// `dlbench export`: a run as JSON or CSV, and its sampled series as CSV (R18). Pure functions
// over records already read from the store.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "store/result_store.h"

namespace dlbench::report {

// Version 2: the verdict vocabulary split (valid, noisy, too_short, drifting, shifted, throttled,
// leaking, contended, unreliable, n/a; since load cells fell_behind and over_bound, since
// scenario: converge not_reached; version 1 had valid/invalid/n/a), measured_steps beside
// warmup_steps, and metric_definitions. docs/schema/export-v2.schema.json is its JSON Schema
// (checked against real exports by the ExportSchema CTest).
inline constexpr const char kExportFormat[] = "dlbench.export/2";
inline constexpr const char kExportSchema[] = "docs/schema/export-v2.schema.json";

// {"format", "tool": {version, git_commit}, "run": {...with environment...}, "cells": [{index,
// cell_id, key, label, params, effective, repetition, seed, outcome, message, verdict,
// verdict_reasons, warmup_steps, warmup_rule, stop_reason, started_utc, finished_utc, extras,
// metrics: {name: {value, unit}}}]}. Steps and series are not included (see SeriesToCsv and the
// trace export); docs/reports.md describes every field.
nlohmann::json RunToJson(const record::RunRecord& run, const std::vector<record::CellRecord>& cells);

// One row per cell: run_id, index, cell_id, key, label, repetition, seed, outcome, verdict,
// verdict_reasons ("; "-joined), message, then one "param.<name>" column per parameter and one
// column per metric (the metric's name, which carries its unit), both sorted by name over the
// union of all cells. A cell without a value leaves its field empty.
std::string CellsToCsv(const std::vector<record::CellRecord>& cells);

// The unit of a series from its name's suffix ("gpu0.power_w" -> "W", "host.cpu_util_pct" -> "%"),
// empty when the suffix names none.
std::string SeriesUnit(const std::string& series_name);

// The sampled series in the spirit of `nvidia-smi dmon`: one row per sampling instant of a cell,
// columns cell,cell_id,t_ns,t_s then one per series named "<series> [<unit>]", sorted. t_ns is the
// CLOCK_MONOTONIC stamp; t_s is seconds since the cell's first step (its first sample when it
// has no steps). Cells need their series (and steps, for t_s) loaded.
std::string SeriesToCsv(const std::vector<record::CellRecord>& cells);

// The time origin of a cell: the earliest step start, else the earliest sample, else 0.
std::int64_t CellOriginNs(const record::CellRecord& cell);

// A number as the shortest text that reads back as the same double ("0.1", "1e-09"); NaN and
// infinities as "NaN", "+Inf", "-Inf" (the Prometheus spellings).
std::string FormatNumber(double value);

}  // namespace dlbench::report
